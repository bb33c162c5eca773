"""DAComp-DE (Lei et al., 2025): repository-level data engineering, Implementation and Evolution.

One folder, in the lm-eval-harness manner: `task.py` reads task folders, `config.py` the
official evaluation config, `deps.py` table dependencies from SQL, `pipeline.py` the CFS/CS
rebuilds, `compare.py` the table check and `scorer.py` the score. README.md has the paper's
numbers and the data layout; `make data BENCH=dacomp_de` fetches the data.

    from eval.benchmarks.dacomp_de import FLOW, load_eval_config, load_task, read_sql, evaluate_submission
    ex = load_eval_config(config_path).example("dacomp-de-impl-001")
    task = load_task("data/dacomp_de/tasks/dacomp-de-impl-001")
    result = evaluate_submission(ex, read_sql(agent_dir / "sql"), task.start_db, gold_db, work_dir)
"""

from eval.benchmarks.dacomp_de.compare import TableVerdict, compare_table
from eval.benchmarks.dacomp_de.config import ConfigError, EvalConfig, ExampleSpec, load_eval_config
from eval.benchmarks.dacomp_de.deps import TableGraph, table_dependencies
from eval.benchmarks.dacomp_de.pipeline import BuildResult, build_cfs, build_cs
from eval.benchmarks.dacomp_de.scorer import (
    SCORING_VERSION,
    ExampleScore,
    SubmissionResult,
    evaluate_submission,
    weighted_score,
)
from eval.benchmarks.dacomp_de.task import DACompTask, find_tasks, gold_db_path, load_task, read_sql
from stateguard.flows import DACOMP_DE

# Segment-induced flow: the manager reviews every 5 worker steps; budget 50 (baseline) / 60 (+StateGuard).
FLOW = DACOMP_DE

__all__ = [
    "FLOW",
    "SCORING_VERSION",
    "BuildResult",
    "ConfigError",
    "DACompTask",
    "EvalConfig",
    "ExampleScore",
    "ExampleSpec",
    "SubmissionResult",
    "TableGraph",
    "TableVerdict",
    "build_cfs",
    "build_cs",
    "compare_table",
    "evaluate_submission",
    "find_tasks",
    "gold_db_path",
    "load_eval_config",
    "load_task",
    "read_sql",
    "table_dependencies",
    "weighted_score",
]
