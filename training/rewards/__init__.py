"""The manager's validity-guided reward (paper Sec. 3.5, Appendix B.4, Eq. 26-30): pure functions of a
manager rollout's trace and the synthesized labels.

    from training.rewards import RewardLabels, DecisionLabel, score_trace
    result = score_trace(read_trace("runs/x/trace.jsonl"), labels, start_seq=57)
    result.score, result.metrics()

Modules, one concept each:
    config        RewardConfig: weights (Eq. 26), q and β (Eq. 30), choices the paper leaves open
    labels        RewardLabels / DecisionLabel: g_i per decision point, read from verl rows
    timeline      the trace as a rollout: scored window, regime, every proposal with its stage
    protocol      R_action (Eq. 27), R_lifecycle (Eq. 28, against stateguard.lifecycle.LEGAL)
    evidence      E_k: what the runtime recorded for a state, and value matching
    support       R_support (Eq. 29): grounded variables and conclusions
    intervention  R_intervention (Eq. 8 + 30): decision points, q_i, β_fp, β_fn
    judge         the LLM judge for what evidence cannot settle, and the conservative fallback
    terms         the registry of Eq. 26's terms (the paper's four; register_term adds one)
    reward        R(τ) (Eq. 26) and RewardResult
    verl_score    compute_score(data_source, solution_str, ground_truth, extra_info) for verl
"""

from training.rewards.config import RewardConfig
from training.rewards.judge import Adjudicator, Judge, JudgeCase, LLMJudge
from training.rewards.labels import DecisionLabel, RewardLabels
from training.rewards.reward import RewardResult, TermScore, combine, score_rollout, score_trace
from training.rewards.timeline import TraceSource, build_rollout

__all__ = [
    "Adjudicator",
    "DecisionLabel",
    "Judge",
    "JudgeCase",
    "LLMJudge",
    "RewardConfig",
    "RewardLabels",
    "RewardResult",
    "TermScore",
    "TraceSource",
    "build_rollout",
    "combine",
    "score_rollout",
    "score_trace",
]
