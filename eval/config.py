"""The eval config (`configs/eval.yaml` + command-line overrides), typed and checked once at start-up.

    cfg = validate_config(hydra_cfg)          # EvalConfig, or ConfigError naming every bad key
    changed = changed_keys(saved, current)    # what a resume would change (results-relevant keys)

Hydra composes the config and already refuses keys it does not know; this model refuses values
that cannot work (`manager=nope`, `limit=-1`, `workers=abc`, an unknown arm) before any task
starts, instead of a run that ends with an arm at 0%. Keys other parts of the project add
(endpoint or sandbox options) pass through untyped until they are given a field here.
"""

from __future__ import annotations

from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["ARMS", "OPERATIONAL_KEYS", "ConfigError", "EvalConfig", "changed_keys", "validate_config"]

Arm = Literal["baseline", "stateguard", "observer", "freeform", "llm", "hierarchical"]
ARMS: tuple[str, ...] = Arm.__args__  # type: ignore[attr-defined]

# Keys that say how a run is executed, not what it computes: they may change on resume.
OPERATIONAL_KEYS = frozenset({
    "run_dir", "resume", "resume_with_changed_config", "progress", "workers", "backend", "limit", "task_ids",
    "bootstrap_resamples", "job_retries", "bench.run_dir", "keep_checkpoints",
})  # fmt: skip


class ConfigError(ValueError):
    """An eval config value that cannot work; the message names the key and the fix."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class BenchSettings(_Open):
    name: Literal["synth", "dev", "longds", "dabstep", "dacomp_de"]


class HarnessSettings(_Open):
    repair_budget: int = Field(ge=0)
    context_budget_tokens: int = Field(ge=1)


class EvalConfig(_Open):
    run_dir: str = Field(min_length=1)
    bench: BenchSettings
    arms: list[Arm] = Field(min_length=1)
    worker: Literal["scripted", "llm"]
    manager: Literal["rules", "llm", "hierarchical", "observer", "freeform"]
    flow: Literal["default", "turn_aligned", "segment"]
    review_every: int = Field(ge=1)
    workspace: Literal["sandbox", "dict"]
    workers: int = Field(ge=1)
    backend: Literal["process", "ray"]
    limit: int | None = Field(default=None, ge=1)
    task_ids: list[str] = Field(default_factory=list)
    resume: bool = False
    resume_with_changed_config: bool = False
    job_retries: int = Field(default=2, ge=0, le=10)
    seed: int = 0
    bootstrap_resamples: int = Field(default=10_000, ge=1)
    progress: bool = True
    keep_checkpoints: bool = False
    harness: HarnessSettings

    @field_validator("arms")
    @classmethod
    def _unique(cls, arms: list[str]) -> list[str]:
        if len(set(arms)) != len(arms):
            raise ValueError(f"an arm is listed twice in {arms}")
        return arms


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate_config(cfg: DictConfig | dict[str, Any]) -> EvalConfig:
    """The typed config, or ConfigError listing each bad key with its value and what it accepts."""
    plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    try:
        return EvalConfig.model_validate(plain)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = _where(tuple(p for p in err["loc"] if not str(p).startswith("literal[")))
            value = "" if err["type"] == "missing" else f"={err.get('input')!r}"
            lines.append(f"  {key}{value}: {err['msg']}")
        raise ConfigError("the eval config has values that cannot work (configs/eval.yaml and the command-line "
                          "overrides):\n" + "\n".join(lines) +
                          "\nset them on the command line, e.g. `make eval ARGS='workers=2 limit=3'`") from None  # fmt: skip


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: data}


def changed_keys(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """`key: old -> new` for every results-relevant key that differs (OPERATIONAL_KEYS may change)."""
    old, new = _flat(saved), _flat(current)
    return [f"{k}: {old.get(k, '<unset>')!r} -> {new.get(k, '<unset>')!r}" for k in sorted(old.keys() | new.keys())
            if k not in OPERATIONAL_KEYS and old.get(k) != new.get(k)]  # fmt: skip
