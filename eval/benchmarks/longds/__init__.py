"""LongDS-Bench (Xu et al., 2026): 68 multi-turn analysis tasks, 2,225 turns, judged turn by turn.

    from eval.benchmarks.longds import discover_tasks, load_longds_task, parse_dependencies
    ref = discover_tasks(root)[0]
    task = load_longds_task(ref)                  # stateguard.task.Task (BASE_PATH on the data side)
    parents = parse_dependencies([t.model_dump() for t in task.turns])   # Pa(t) for DCR

See README.md in this folder for the paper's numbers, the flow settings and the data layout.
"""

from eval.benchmarks.longds.deps import parse_dependencies
from eval.benchmarks.longds.judge import (
    FIELDS_VERSION,
    JUDGE_VERSION,
    FieldJudge,
    JudgeVerdict,
    LLMJudge,
    TaskJudgement,
    judge_turns,
)
from eval.benchmarks.longds.loader import (
    DOMAINS,
    LongDSDataMissing,
    LongDSTaskRef,
    discover_tasks,
    load_longds_task,
    require_data,
    task_ref,
)
from eval.benchmarks.longds.prompts import STEPS_PER_TURN, TurnPrompt, build_turn_prompts, parse_reply

__all__ = [
    "DOMAINS",
    "FIELDS_VERSION",
    "JUDGE_VERSION",
    "STEPS_PER_TURN",
    "FieldJudge",
    "JudgeVerdict",
    "LLMJudge",
    "LongDSDataMissing",
    "LongDSTaskRef",
    "TaskJudgement",
    "TurnPrompt",
    "build_turn_prompts",
    "discover_tasks",
    "judge_turns",
    "load_longds_task",
    "parse_dependencies",
    "parse_reply",
    "require_data",
    "task_ref",
]
