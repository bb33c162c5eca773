"""DAComp-DE scoring: gates, table matches, and the layer-weighted score (paper C.3).

An example scores 0 unless both gates hold: RunSuccess (the rebuild ran at least one agent
SQL file) and SchemaValid (every configured layer's schema exists; `mart`/`marts` alike). It
scores 100 when every configured table matches gold (compare.py). Otherwise

    score = 100 * sum_l w_l * s_l / sum_l w_l,   s_l = (matching table weight in l) / (table weight in l)

over the layers whose tables weigh more than 0. Evolution examples give unchanged tables weight
0, so they never move the score. CFS scores the clean rebuild of the agent's whole pipeline; CS
scores each component run on gold inputs (pipeline.py). As in the official evaluator, a CFS
full match short-circuits CS to 100, and CS uses the gates of the CFS rebuild.

    result = evaluate_submission(example, read_sql(pred / "sql"), task.start_db, gold_db, work_dir)
    result.cfs.score, result.cs.score, result.cfs.table_correct()   # the last feeds DCR
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.dacomp_de.compare import TableVerdict, compare_table, resolve_schema
from eval.benchmarks.dacomp_de.config import ExampleSpec
from eval.benchmarks.dacomp_de.pipeline import (
    CS_PREFIX,
    BuildResult,
    Sources,
    TableBuild,
    build_cfs,
    build_cs,
)
from stateguard import SCHEMA_VERSION

SCORING_VERSION = "dacomp-de-score/1"


class ExampleScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    schema_version: str = SCHEMA_VERSION
    scoring_version: str = SCORING_VERSION
    example_id: str
    kind: Literal["impl", "evol"]
    mode: Literal["cfs", "cs"]
    score: float = Field(ge=0, le=100)
    level: Literal["gate_failed", "full_match", "partial"]
    run_success: bool
    schema_valid: bool
    missing_schemas: list[str] = Field(default_factory=list)
    layer_scores: dict[str, float] = Field(
        default_factory=dict, description="s_l in [0, 1], weighted layers."
    )
    tables: dict[str, TableVerdict] = Field(default_factory=dict)
    builds: dict[str, TableBuild] = Field(default_factory=dict)

    def table_correct(self) -> dict[str, bool]:
        """Table -> matched gold; the per-unit correctness DCR reads (use the CFS score)."""
        return {name: verdict.match for name, verdict in self.tables.items()}


class SubmissionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    cfs: ExampleScore
    cs: ExampleScore | None = None


def weighted_score(example: ExampleSpec, matches: Mapping[str, bool]) -> tuple[float, dict[str, float]]:
    """(score in [0, 100], per-layer s_l) from table -> matched; absent tables count as unmatched."""
    layer_scores: dict[str, float] = {}
    num = den = 0.0
    for layer in example.layer_order():
        spec = example.layers[layer]
        total = sum(t.weight for t in spec.tables.values())
        if total <= 0:
            continue  # nothing to score here (e.g. a layer of unchanged tables)
        earned = sum(t.weight for name, t in spec.tables.items() if matches.get(name, False))
        layer_scores[layer] = earned / total
        num += spec.weight * layer_scores[layer]
        den += spec.weight
    if den > 0:
        return 100.0 * num / den, layer_scores
    # Every weighted layer has weight 0: fall back to the plain mean of the layer scores.
    return (100.0 * sum(layer_scores.values()) / len(layer_scores) if layer_scores else 0.0), layer_scores


def missing_schemas(db: Path, example: ExampleSpec) -> list[str]:
    """Configured layers whose schema the database lacks (SchemaValid holds when empty)."""
    if not db.is_file():
        return [example.schema_for(layer) for layer in example.layer_order()]
    with duckdb.connect(str(db), read_only=True) as conn:
        present = {
            r[0] for r in conn.execute("SELECT schema_name FROM information_schema.schemata").fetchall()
        }
        wanted = [example.schema_for(layer) for layer in example.layer_order()]
        return [s for s in wanted if resolve_schema(conn, s) not in present]


def compare_all(
    example: ExampleSpec, pred_db: Path, gold_db: Path, *, pred_prefix: str = "", timeout_s: float = 300
) -> dict[str, TableVerdict]:
    """Verdict for every configured table; predictions live in schema `pred_prefix + schema`."""
    verdicts: dict[str, TableVerdict] = {}
    with (
        duckdb.connect(str(pred_db), read_only=True) as pred,
        duckdb.connect(str(gold_db), read_only=True) as gold,
    ):
        for table, (layer, spec) in example.tables().items():
            schema = example.schema_for(layer)
            verdicts[table] = compare_table(
                pred,
                pred_prefix + schema,
                gold,
                schema,
                table,
                spec.compare_cols,
                layer=layer,
                timeout_s=timeout_s,
            )
    return verdicts


def score_example(
    example: ExampleSpec,
    mode: Literal["cfs", "cs"],
    verdicts: Mapping[str, TableVerdict],
    *,
    run_success: bool,
    missing: list[str],
    builds: Mapping[str, TableBuild] | None = None,
) -> ExampleScore:
    """Apply the gates, the full-match rule and the weighted score to table verdicts."""

    def make(
        score: float,
        level: Literal["gate_failed", "full_match", "partial"],
        layers: dict[str, float] | None = None,
    ) -> ExampleScore:
        return ExampleScore(
            example_id=example.example_id,
            kind=example.kind,
            mode=mode,
            score=score,
            level=level,
            run_success=run_success,
            schema_valid=not missing,
            missing_schemas=list(missing),
            layer_scores=layers or {},
            tables=dict(verdicts),
            builds=dict(builds or {}),
        )

    if not run_success or missing:
        return make(0.0, "gate_failed")
    matches = {name: v.match for name, v in verdicts.items()}
    score, layers = weighted_score(example, matches)
    if matches and all(matches.values()):
        return make(100.0, "full_match", layers)
    return make(score, "partial", layers)


def evaluate_submission(
    example: ExampleSpec,
    sources: Sources,
    start_db: Path,
    gold_db: Path,
    work_dir: Path,
    *,
    modes: tuple[str, ...] = ("cfs", "cs"),
    timeout_s: float = 300,
) -> SubmissionResult:
    """Score one agent submission ({layer: {table: sql}}) in CFS and, if asked, CS mode.

    `start_db` is the task's clean `<proj>_start.duckdb`; nothing is written next to it or to
    `gold_db`. Working databases go under `work_dir/<example_id>/{cfs,cs}/`.
    """
    base = Path(work_dir) / example.example_id
    cfs_build: BuildResult = build_cfs(
        sources, start_db, base / "cfs" / example.database_file, example, timeout_s=timeout_s
    )
    missing = missing_schemas(cfs_build.db_path, example)
    cfs = score_example(
        example,
        "cfs",
        compare_all(example, cfs_build.db_path, gold_db, timeout_s=timeout_s),
        run_success=cfs_build.run_success,
        missing=missing,
        builds=cfs_build.tables,
    )
    if "cs" not in modes:
        return SubmissionResult(cfs=cfs)
    if cfs.level == "full_match":
        return SubmissionResult(cfs=cfs, cs=cfs.model_copy(update={"mode": "cs"}))
    cs_build = build_cs(
        sources, gold_db, base / "cs" / "cs_on_gold.duckdb", example, start_db=start_db, timeout_s=timeout_s
    )
    cs_verdicts = compare_all(example, cs_build.db_path, gold_db, pred_prefix=CS_PREFIX, timeout_s=timeout_s)
    cs = score_example(
        example, "cs", cs_verdicts, run_success=cfs_build.run_success, missing=missing, builds=cs_build.tables
    )
    return SubmissionResult(cfs=cfs, cs=cs)
