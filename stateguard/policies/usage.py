"""What a model-backed manager did with its endpoint, counted honestly per task.

A model call that the server refused, that failed, or whose answer could not be used is not a
model decision, and a fallback is not the model's choice: each has its own counter, so a run
that "committed 6 states" can be told apart from one whose model never produced a usable action.
The rollout copies these counters into `result.json` (`manager_usage`); `make eval` and
`make tables` sum them per arm and warn when any activation ended in a fallback.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class ManagerUsage(BaseModel):
    """Counters of one task (one rollout)."""

    activations: int = Field(default=0, description="Activations in which the model was (to be) consulted.")
    completions: int = Field(
        default=0, description="Real model answers (HTTP 200 with a usable chat completion)."
    )
    constrained_completions: int = Field(
        default=0, description="Completions decoded against the JSON schema of the offered actions."
    )
    rejected_for_size: int = Field(
        default=0, description="Requests the server refused because the prompt did not fit."
    )
    rejected_requests: int = Field(
        default=0, description="Other requests the server refused (HTTP 4xx), e.g. a schema it cannot decode."
    )
    failed_requests: int = Field(
        default=0,
        description="Calls that failed after their retries: transport, 5xx, malformed reply, deadline.",
    )
    malformed_replies: int = Field(
        default=0, description="Of failed_requests: HTTP 2xx bodies that were not a completion."
    )
    not_sent: int = Field(
        default=0, description="Requests not sent because no prompt plan fits the context window."
    )
    valid_actions: int = Field(
        default=0, description="Model outputs that parsed into an offered, stage-legal action."
    )
    parse_failures: int = Field(
        default=0, description="Model outputs with no parseable action or bad arguments."
    )
    illegal_actions: int = Field(
        default=0, description="Model outputs that parsed into an action not offered at the stage."
    )
    forced_actions: int = Field(
        default=0,
        description="Actions applied without a call because the stage allows exactly one (COMMIT_STATE).",
    )
    fallbacks: int = Field(
        default=0,
        description="Activations that ended without a model decision; the exit taken instead is in the trace "
        "(`manager_fallback`): the least intrusive legal action, or the rules tier's own decision.",
    )
    time_capped: int = Field(
        default=0, description="Activations not given to the model because the per-task time cap was spent."
    )
    model_time_s: float = Field(default=0.0, description="Wall time spent in model calls.")

    @property
    def usable_share(self) -> float | None:
        """Share of completions that parsed into an offered, stage-legal action."""
        return None if self.completions == 0 else self.valid_actions / self.completions

    def add(self, other: ManagerUsage) -> ManagerUsage:
        merged = {k: getattr(self, k) + getattr(other, k) for k in ManagerUsage.model_fields}
        return ManagerUsage(**merged)
