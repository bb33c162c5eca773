"""Requirement extraction by a model, validated against the same schema as the deterministic one.

    extractor = LLMExtractor(LLMClient(EndpointConfig.from_env("manager")))
    verifier = SemanticVerifier(extractor=extractor)        # same call signature as `extract`

The model gets the turn's question, the task's standing instructions and the data's columns
(with small category value sets) and must answer with a JSON array of requirement objects. Each
object is validated as a `Requirement`; an invalid one is dropped and its error kept in
`rejected` (and in the trace through the client), never passed to a probe. The deterministic
extraction is merged in, so a model that misses a requirement (or is unreachable: the error is
recorded, the run goes on) loses nothing the offline extractor finds. One model call per turn.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from stateguard.answers import last_json
from stateguard.llm import LLMClient, LLMError
from stateguard.verification.extract import dedupe, extract
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import Vocabulary

PROMPT = """You extract checkable requirements from a data-analysis question. Answer with a JSON array only.
Each element is an object with "kind" (one of: {kinds}), "text" (the exact words of the question that
state it) and the fields that kind needs:
- scope: "values" (category values the rows are limited to), "columns", "exclude" (true when left out)
- comparison: "op" (one of > >= < <= == !=), "value" (the bound), optional "upper" (a range), "percent",
  "subject" (words naming the compared quantity), "columns" when you know the column
- not_null: "subject" or "columns" (values that must be recorded)
- aggregation: "function" (mean, median, sum, count, nunique, min, max, std), "subject" or "columns",
  optional "fields" (the reported field it feeds)
- share: "fields" (the reported share field), "percent"
- grouping: "keys" (one result per these columns)
- join: "how" (inner = matched rows only, left = keep unmatched rows), "keys"
- order: "descending" (largest first?), "k" (how many rows)
- rounding: "decimals"; output: "fields" (the reported fields)
- source: "subject" (the name of a table or frame the question says to use as current, e.g. "with the current jobs")
Only list what the question states; never guess. Columns of the data: {columns}

Standing instructions of the task: {context}
Question: {question}"""


class LLMExtractor:
    """Callable like `extract(question, context=..., vocab=..., tables=...)`."""

    def __init__(self, client: LLMClient, *, merge_deterministic: bool = True):
        self.client = client
        self.merge = merge_deterministic
        self.rejected: list[str] = []
        self.calls = 0

    def __call__(
        self,
        question: str,
        *,
        context: str = "",
        vocab: Vocabulary | None = None,
        tables: list[str] | None = None,
    ) -> list[Requirement]:
        base = extract(question, context=context, vocab=vocab, tables=tables) if self.merge else []
        columns = _columns(vocab, tables)
        prompt = PROMPT.format(
            kinds=", ".join(k.value for k in Kind),
            columns=columns or "(unknown)",
            context=context.strip() or "(none)",
            question=question.strip(),
        )
        self.calls += 1
        try:
            reply = self.client.chat([{"role": "user", "content": prompt}])
        except LLMError as exc:
            self.rejected.append(f"model call failed: {exc}")
            return base
        return dedupe(base + self.parse(reply.content))

    def parse(self, content: str) -> list[Requirement]:
        """Valid requirements of a model answer; each invalid element is recorded in `rejected`."""
        raw: Any = None
        try:
            raw = json.loads(content.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
        except json.JSONDecodeError:
            raw = last_json(content)
        if isinstance(raw, dict):
            raw = raw.get("requirements", [raw])
        if not isinstance(raw, list):
            self.rejected.append(f"not a JSON array of requirements: {content[:200]!r}")
            return []
        out = []
        for item in raw:
            try:
                out.append(
                    Requirement.model_validate(
                        {**item, "source": "question"} if isinstance(item, dict) else item
                    )
                )
            except ValidationError as exc:
                self.rejected.append(f"{json.dumps(item)[:200]}: {exc.errors()[0]['msg']}")
        return out


def _columns(vocab: Vocabulary | None, tables: list[str] | None) -> str:
    if vocab is None:
        return ""
    parts = []
    names = [t for t in (tables or vocab.tables) if t in vocab.tables]
    for table in names:
        for col, info in vocab.tables[table].items():
            values = f" in {info.values[:12]}" if info.values else ""
            parts.append(f"{table}.{col} ({info.kind}{values})")
    return "; ".join(parts[:80])
