"""DABstep (Egg et al., 2025): 450 multi-step questions over payment data, scored programmatically.

    from eval.benchmarks.dabstep import load_split, score_predictions
    result = score_predictions((task, answers.get(task.task_id)) for task in load_split(root, "dev"))
    result.easy.accuracy, result.hard.accuracy

See README.md in this folder for the paper's numbers, the flow settings and how to get the data.
"""

from eval.benchmarks.dabstep.loader import (
    CONTEXT_FILES,
    DabstepContext,
    DabstepDataMissing,
    DabstepTask,
    check_context,
    load_split,
    load_tasks,
    resolve_root,
)
from eval.benchmarks.dabstep.scorer import (
    SCORING_VERSION,
    DabstepScore,
    LevelScore,
    TaskScore,
    question_matches,
    score_predictions,
)

__all__ = [
    "CONTEXT_FILES",
    "SCORING_VERSION",
    "DabstepContext",
    "DabstepDataMissing",
    "DabstepScore",
    "DabstepTask",
    "LevelScore",
    "TaskScore",
    "check_context",
    "load_split",
    "load_tasks",
    "resolve_root",
    "question_matches",
    "score_predictions",
]
