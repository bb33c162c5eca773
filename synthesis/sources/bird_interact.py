"""Reader for BIRD-INTERACT (Huo et al.): interactive text-to-SQL tasks over PostgreSQL databases.

Published layout (github.com/bird-bench/BIRD-Interact; Hugging Face `birdsql/bird-interact-lite`,
whose public copy withholds the gold SQL, test cases and follow-ups, released on request):

    <root>/bird_interact_data.jsonl     one task per line (any single *.jsonl in <root> is accepted)
    <root>/<db>/<db>_schema.txt        CREATE TABLE statements with sample rows
    <root>/<db>/<db>_column_meaning_base.json   {"<db>|<table>|<column>": meaning, ...}
    <root>/<db>/<db>_kb.jsonl          external knowledge: {"id", "knowledge", "description",
                                       "definition", "type", "children_knowledge": [ids] | -1}

A task line carries `instance_id`, `selected_database`, the clear `query` and the ambiguous
`amb_user_query` the simulated user starts from, the ambiguities injected into it
(`user_query_ambiguity` with critical / non-critical lists, `knowledge_ambiguity` with the knowledge
ids removed from the agent's view), `sol_sql` (list of statements), `preprocess_sql`,
`clean_up_sqls` (`clean_up_sql` in the README), `test_cases`, `external_knowledge` (ids),
`category` (Query / Management), `high_level`, `conditions` (result comparison options) and
`difficulty_tier`, plus a `follow_up` object asked after the first question is solved.

Each task becomes a RawTask with two questions, "initial" and (when present) "follow_up"; the text
is the clear query, and the ambiguous one stays in the question's metadata.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from synthesis.sources.records import (
    DataFile,
    FileRole,
    RawQuestion,
    RawTask,
    SourceFormatError,
    iter_jsonl,
    read_json,
    relative,
)


class Ambiguity(BaseModel):
    """One ambiguous phrase: the term shown to the agent and the SQL it stands for."""

    model_config = ConfigDict(extra="allow", frozen=True)

    term: str
    sql_snippet: str = ""
    is_mask: bool = False
    type: str = ""
    deleted_knowledge: int | None = None


class UserQueryAmbiguity(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    critical_ambiguity: list[Ambiguity] = Field(default_factory=list)
    non_critical_ambiguity: list[Ambiguity] = Field(default_factory=list)


def _as_list(value: Any) -> Any:
    """Statements and test cases appear both as one string and as a list of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return value


class FollowUp(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    query: str
    sol_sql: list[str] = Field(default_factory=list)
    external_knowledge: list[int] = Field(default_factory=list)
    type: str = ""
    test_cases: list[Any] = Field(default_factory=list)
    category: str = ""
    difficulty_tier: str = ""

    @model_validator(mode="before")
    @classmethod
    def _lists(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("sol_sql", "test_cases"):
                if key in data:
                    data[key] = _as_list(data[key])
        return data


class InteractRecord(BaseModel):
    """One line of the BIRD-INTERACT task file; gold fields are optional (the public copy lacks them)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instance_id: str
    selected_database: str
    query: str = ""
    amb_user_query: str = ""
    user_query_ambiguity: UserQueryAmbiguity = Field(default_factory=UserQueryAmbiguity)
    knowledge_ambiguity: list[Ambiguity] = Field(default_factory=list)
    sol_sql: list[str] = Field(default_factory=list)
    preprocess_sql: list[str] = Field(default_factory=list)
    clean_up_sqls: list[str] = Field(default_factory=list)
    test_cases: list[Any] = Field(default_factory=list)
    external_knowledge: list[int] = Field(default_factory=list)
    category: str = ""
    high_level: bool | None = None
    conditions: dict[str, Any] = Field(default_factory=dict)
    difficulty_tier: str = ""
    follow_up: FollowUp | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "clean_up_sqls" not in data and "clean_up_sql" in data:
            data["clean_up_sqls"] = data.pop("clean_up_sql")
        if isinstance(data.get("instance_id"), int):
            data["instance_id"] = str(data["instance_id"])
        for key in ("sol_sql", "preprocess_sql", "clean_up_sqls", "test_cases"):
            if key in data:
                data[key] = _as_list(data[key])
        if not data.get("follow_up"):
            data["follow_up"] = None
        if not (data.get("query") or data.get("amb_user_query")):
            raise ValueError("a task needs `query` or `amb_user_query`")
        return data

    @property
    def deleted_knowledge_ids(self) -> list[int]:
        """Knowledge entries hidden from the agent (it must ask the user about them)."""
        return [a.deleted_knowledge for a in self.knowledge_ambiguity if a.deleted_knowledge is not None]


class KnowledgeEntry(BaseModel):
    """One line of `<db>_kb.jsonl`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: int
    knowledge: str
    description: str = ""
    definition: str = ""
    type: str = ""
    children_knowledge: list[int] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _children(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            children = data.get("children_knowledge")
            if children is None or children == -1:
                data["children_knowledge"] = []
            elif isinstance(children, int):
                data["children_knowledge"] = [children]
            elif isinstance(children, list):
                data["children_knowledge"] = [c for c in children if c != -1]
        return data


def _task_file(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"BIRD-INTERACT tasks not found: {path}")
    preferred = path / "bird_interact_data.jsonl"
    if preferred.is_file():
        return preferred
    candidates = sorted(path.glob("*.jsonl"))
    if len(candidates) != 1:
        raise FileNotFoundError(
            f"expected bird_interact_data.jsonl or exactly one *.jsonl in {path}, found {[c.name for c in candidates]}"
        )
    return candidates[0]


def read_records(path: str | Path) -> list[InteractRecord]:
    """Validated task lines of a BIRD-INTERACT JSONL file (or of the one such file in a folder)."""
    task_file = _task_file(Path(path))
    records = []
    for number, raw in iter_jsonl(task_file):
        try:
            records.append(InteractRecord.model_validate(raw))
        except ValidationError as exc:
            raise SourceFormatError(f"{task_file}:{number}: not a BIRD-INTERACT task: {exc}") from exc
    return records


def read_knowledge_base(path: str | Path) -> list[KnowledgeEntry]:
    """Entries of a `<db>_kb.jsonl` file."""
    path = Path(path)
    entries = []
    for number, raw in iter_jsonl(path):
        try:
            entries.append(KnowledgeEntry.model_validate(raw))
        except ValidationError as exc:
            raise SourceFormatError(f"{path}:{number}: not a knowledge entry: {exc}") from exc
    return entries


def read_column_meanings(path: str | Path) -> dict[tuple[str, str, str], str]:
    """`<db>_column_meaning_base.json` keyed by (database, table, column), all lower-cased.

    A value is either the meaning itself or an object whose `column_meaning` holds it (JSON
    columns also describe their fields under `fields_meaning`, appended here as text).
    """
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise SourceFormatError(f"{path}: expected an object mapping 'db|table|column' to meanings")
    out: dict[tuple[str, str, str], str] = {}
    for key, value in raw.items():
        parts = key.split("|")
        if len(parts) != 3:
            raise SourceFormatError(f"{path}: key {key!r} is not 'db|table|column'")
        if isinstance(value, dict):
            meaning = str(value.get("column_meaning", ""))
            fields = value.get("fields_meaning")
            if fields:
                meaning = f"{meaning} Fields: {fields}".strip()
        else:
            meaning = str(value)
        db, table, column = (p.strip().lower() for p in parts)
        out[(db, table, column)] = meaning
    return out


_DB_FILES: tuple[tuple[str, FileRole], ...] = (
    ("{db}_schema.txt", "schema"),
    ("{db}_column_meaning_base.json", "column_meanings"),
    ("{db}_kb.jsonl", "knowledge"),
)


def _to_task(record: InteractRecord, root: Path, line_file: Path) -> RawTask:
    db_dir = root / record.selected_database
    files = [
        DataFile(
            path=relative(db_dir / pattern.format(db=record.selected_database), root),
            role=role,
            present=(db_dir / pattern.format(db=record.selected_database)).is_file(),
        )
        for pattern, role in _DB_FILES
    ]
    initial = RawQuestion(
        question_id="initial",
        text=record.query or record.amb_user_query,
        answer=list(record.sol_sql) or None,
        answer_kind="sql" if record.sol_sql else None,
        metadata={
            "ambiguous_query": record.amb_user_query,
            "critical_ambiguity": [a.model_dump() for a in record.user_query_ambiguity.critical_ambiguity],
            "non_critical_ambiguity": [
                a.model_dump() for a in record.user_query_ambiguity.non_critical_ambiguity
            ],
            "knowledge_ambiguity": [a.model_dump() for a in record.knowledge_ambiguity],
            "external_knowledge": list(record.external_knowledge),
            "test_cases": list(record.test_cases),
            "preprocess_sql": list(record.preprocess_sql),
            "clean_up_sqls": list(record.clean_up_sqls),
            "category": record.category,
            "conditions": dict(record.conditions),
            "difficulty_tier": record.difficulty_tier,
        },
    )
    questions = [initial]
    if record.follow_up is not None:
        follow = record.follow_up
        questions.append(
            RawQuestion(
                question_id="follow_up",
                text=follow.query,
                answer=list(follow.sol_sql) or None,
                answer_kind="sql" if follow.sol_sql else None,
                metadata={
                    "type": follow.type,
                    "external_knowledge": list(follow.external_knowledge),
                    "test_cases": list(follow.test_cases),
                    "category": follow.category,
                    "difficulty_tier": follow.difficulty_tier,
                    **(follow.model_extra or {}),
                },
            )
        )
    return RawTask(
        source="bird_interact",
        task_id=record.instance_id,
        root=str(root),
        questions=questions,
        data_files=files,
        metadata={
            "database": record.selected_database,
            "task_file": line_file.name,
            "category": record.category,
            "high_level": record.high_level,
            "difficulty_tier": record.difficulty_tier,
            "deleted_knowledge": record.deleted_knowledge_ids,
            "has_gold": bool(record.sol_sql),
            **(record.model_extra or {}),
        },
    )


def read_bird_interact(path: str | Path) -> list[RawTask]:
    """BIRD-INTERACT tasks from a task JSONL file or the folder holding it and the per-database folders."""
    task_file = _task_file(Path(path))
    root = task_file.parent
    tasks = [_to_task(record, root, task_file) for record in read_records(task_file)]
    duplicates = sorted(i for i, n in Counter(t.task_id for t in tasks).items() if n > 1)
    if duplicates:
        raise SourceFormatError(f"{task_file}: duplicate instance_id {', '.join(duplicates)}")
    return tasks
