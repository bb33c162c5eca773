"""The case sets: a development split (150 cases: 125 operation + 25 safe-stop) and a held-out split.

Cases are built deterministically from their id: round-robin over each interface's families
and corruption kinds, one seed per case. The held-out split draws from other vocabularies
(project, dataset, package, column and folder names) and other seeds; nothing in StateWise was
tuned on it. Every third case of a split also carries tasks 2-4 of a four-task sequence.

    cases = generate("dev")                       # list[Case], stable across runs and machines
    python -m eval.benchmarks.statewise.generate dev --out cases.jsonl
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.benchmarks.statewise import coding_cases, data_cases
from eval.benchmarks.statewise.case import Case

# split -> interface -> (operation cases, safe-stop cases)
COUNTS: dict[str, dict[str, tuple[int, int]]] = {
    "dev": {"data": (63, 12), "coding": (62, 13)},
    "heldout": {"data": (25, 5), "coding": (25, 5)},
}
SEQUENCE_EVERY = 3
BUILDERS: dict[str, tuple[Callable[..., Case], list[tuple[str, str, tuple[str, ...], str]]]] = {
    "data": (data_cases.build_data_case, data_cases.FAMILIES),
    "coding": (coding_cases.build_coding_case, coding_cases.FAMILIES),
}


def _schedule(families: list[tuple[str, str, tuple[str, ...], str]], kind: str) -> list[tuple[str, str, str]]:
    return [(op, key, c) for op, key, kinds, k in families if k == kind for c in kinds]


def generate(split: str, interfaces: tuple[str, ...] = ("data", "coding")) -> list[Case]:
    if split not in COUNTS:
        raise ValueError(f"split {split!r}: use one of {', '.join(COUNTS)}")
    cases: list[Case] = []
    for interface in interfaces:
        build, families = BUILDERS[interface]
        n = 0
        for kind, count in zip(("operation", "safe_stop"), COUNTS[split][interface], strict=True):
            combos = _schedule(families, kind)
            for i in range(count):
                op, key, corruption = combos[i % len(combos)]
                case_id = f"{split}-{interface}-{n:03d}"
                later = 3 if n % SEQUENCE_EVERY == 0 else 0
                for attempt in range(20):  # a draw that cannot carry this corruption is redrawn
                    rng = random.Random(f"statewise/{split}/{interface}/{n}/{attempt}")
                    try:
                        cases.append(build(rng, split, case_id, op, key, corruption, kind, later=later))
                        break
                    except ValueError:
                        continue
                else:
                    raise RuntimeError(f"{case_id}: no valid draw for {op}/{key}/{corruption}")
                n += 1
    return cases


def summary(cases: list[Case]) -> dict[str, Any]:
    out: dict[str, Any] = {"cases": len(cases)}
    for field in ("interface", "kind", "corruption", "family"):
        counts: dict[str, int] = {}
        for c in cases:
            counts[getattr(c, field)] = counts.get(getattr(c, field), 0) + 1
        out[field] = dict(sorted(counts.items()))
    out["sequences"] = sum(1 for c in cases if c.later)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Write a StateWise case split as JSONL")
    p.add_argument("split", choices=sorted(COUNTS))
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    cases = generate(args.split)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(c.model_dump_json() + "\n" for c in cases), encoding="utf-8")
    print(summary(cases))


if __name__ == "__main__":
    main()
