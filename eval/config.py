"""The eval config (`configs/eval.yaml` + command-line overrides), typed and checked once at start-up.

    cfg = validate_config(hydra_cfg)          # EvalConfig, or ConfigError naming every bad key
    job = JobSettings.from_config(cfg)        # what each (task, arm) job gets, typed, in any process
    changed = changed_keys(saved, current)    # what a resume would change (results-relevant keys)

Hydra composes the config and already refuses keys it does not know; this model refuses values
that cannot work (`manager=nope`, `limit=-1`, `workers=abc`, an unknown arm) before any task
starts, instead of a run that ends with an arm at 0%. The `harness:` block is checked against
`stateguard.harness.HarnessConfig` here (not first inside a worker process), and the blocks that
configure components (`sandbox`, `response`, `semantic`, `llm`, `worker_llm`) are checked by the
runner's start-up (`eval.runner.prepare`) before `JobSettings` carries them to the jobs. Keys other
parts of the project add pass through untyped until they are given a field here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from omegaconf import DictConfig, OmegaConf
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from eval.benchmarks.registry import BENCHMARKS
from stateguard.harness import HarnessConfig
from stateguard.lifecycle import Regime
from stateguard.policies.registry import MANAGERS
from stateguard.workers.registry import WORKERS

__all__ = [
    "arm_names",
    "OPERATIONAL_KEYS",
    "ConfigError",
    "EvalConfig",
    "HarnessSettings",
    "JobSettings",
    "changed_keys",
    "validate_config",
]


def _one_of(names: Collection[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _registered(names: Callable[[], Collection[str]]) -> Callable[[str], str]:
    """A check that a name is in a registry, read when a config is checked (so a name registered
    after this module was imported counts); the message lists the names as pydantic's Literal does."""

    def check(name: str) -> str:
        allowed = names()
        if name not in allowed:
            raise PydanticCustomError(
                "unknown_name", "Input should be {expected}", {"expected": _one_of(allowed)}
            )
        return name

    return check


def arm_names() -> tuple[str, ...]:
    """The arms a run may list: `baseline`, `stateguard` (the `manager` choice), and every registered
    manager by its own name except `rules`, which is what the `stateguard` arm runs by default."""
    return ("baseline", "stateguard", *(name for name in MANAGERS if name != "rules"))


# Names are checked against the registries owned by the packages that define each protocol.
Arm = Annotated[str, AfterValidator(_registered(arm_names))]
Manager = Annotated[str, AfterValidator(_registered(lambda: MANAGERS))]
Worker = Annotated[str, AfterValidator(_registered(lambda: WORKERS))]
BenchName = Annotated[str, AfterValidator(_registered(lambda: BENCHMARKS))]

# Keys that say how a run is executed, not what it computes: they may change on resume.
OPERATIONAL_KEYS = frozenset(
    {
        "run_dir",
        "resume",
        "resume_with_changed_config",
        "progress",
        "workers",
        "backend",
        "limit",
        "task_ids",
        "bootstrap_resamples",
        "job_retries",
        "bench.run_dir",
        "keep_checkpoints",
        # how long to wait for a model and how often to retry it: the call policy, not the manager's decisions
        "llm.timeout_s",
        "llm.max_retries",
        "llm.call_deadline_s",
        "worker_llm.timeout_s",
        "worker_llm.max_retries",
        "worker_llm.call_deadline_s",
    }
)


class ConfigError(ValueError):
    """An eval config value that cannot work; the message names the key and the fix."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class BenchSettings(_Open):
    name: BenchName


class HarnessSettings(_Open):
    """The harness knobs (`stateguard.harness.HarnessConfig` less what the flow and task set)."""

    repair_budget: int = Field(ge=1)
    context_budget_tokens: int = Field(ge=256)

    @model_validator(mode="after")
    def _as_harness(self) -> HarnessSettings:
        knobs = self.model_dump()
        owned = sorted(set(knobs) & {"regime", "task_text"})
        if owned:
            raise ValueError(f"{', '.join(owned)} are set by the flow and the task, not in the harness block")
        try:
            HarnessConfig(regime=Regime.TURN_ALIGNED, **knobs)
        except ValidationError as exc:
            raise ValueError(
                "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}={e.get('input')!r}: {e['msg']}"
                    for e in exc.errors()
                )
            ) from None
        return self


class EvalConfig(_Open):
    run_dir: str = Field(min_length=1)
    bench: BenchSettings
    arms: list[Arm] = Field(min_length=1)
    worker: Worker
    manager: Manager
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


class JobSettings(BaseModel):
    """What one (task, arm) job reads of the config: built once from the checked `EvalConfig` and
    handed to every job (pickled to worker processes), so no job reads a config dict by key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bench: str | None = Field(
        default=None, description="Benchmark name (its worker protocol and collect hook)."
    )
    workspace: Literal["sandbox", "dict"]
    worker: Worker
    manager: Manager
    seed: int = 0
    harness: HarnessSettings
    keep_checkpoints: bool = False
    # Component blocks, checked at start-up by the functions that build the components.
    sandbox: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    semantic: dict[str, Any] | None = None
    llm: dict[str, Any] | None = None
    worker_llm: dict[str, Any] | None = None

    @classmethod
    def from_config(cls, cfg: EvalConfig) -> JobSettings:
        extra = cfg.model_extra or {}
        return cls(
            bench=cfg.bench.name,
            workspace=cfg.workspace,
            worker=cfg.worker,
            manager=cfg.manager,
            seed=cfg.seed,
            harness=cfg.harness,
            keep_checkpoints=cfg.keep_checkpoints,
            **{k: extra.get(k) for k in ("sandbox", "response", "semantic", "llm", "worker_llm")},
        )


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_EVAL_YAML = Path(__file__).resolve().parent.parent / "configs" / "eval.yaml"


@functools.cache
def known_top_level_keys() -> frozenset[str]:
    """The keys configs/eval.yaml declares (plus the typed fields): anything else was added by a
    `+key=value` override that nothing reads, almost always a misspelling."""
    declared = yaml.safe_load(_EVAL_YAML.read_text(encoding="utf-8")) or {}
    return (frozenset(declared) | frozenset(EvalConfig.model_fields)) - {"hydra", "defaults"}


@functools.cache
def known_bench_keys(name: str) -> frozenset[str] | None:
    """The options configs/bench/<name>.yaml declares (docs/extending.md: a benchmark's options live
    there). A key beyond them came from a `+bench.<key>=value` override that `load` never reads.
    None for a benchmark without that file (one registered in code by `register_benchmark`): its
    options are unknown here, so they are not checked."""
    preset = _EVAL_YAML.parent / "bench" / f"{name}.yaml"
    if not preset.is_file():
        return None
    declared = yaml.safe_load(preset.read_text(encoding="utf-8"))
    return frozenset(declared or {}) | {"name"}


def _unknown_keys(plain: dict[str, Any]) -> str | None:
    """What is wrong with the keys (not the values) of a composed config, or None."""
    unknown = sorted(set(plain) - known_top_level_keys())
    if unknown:
        return (
            f"unknown config key(s): {', '.join(unknown)} (added with `+key=value`; nothing reads them). "
            f"Check the spelling against configs/eval.yaml, whose keys are: {', '.join(sorted(known_top_level_keys()))}"
        )
    bench = plain.get("bench")
    if isinstance(bench, dict) and isinstance(bench.get("name"), str):
        known = known_bench_keys(bench["name"])
        extra = [] if known is None else sorted(str(k) for k in set(bench) - known)
        if extra:
            return (
                f"unknown config key(s): {', '.join(f'bench.{k}' for k in extra)} (added with `+bench.<key>=value`; "
                f"bench={bench['name']} does not read them). Its options are those of "
                f"configs/bench/{bench['name']}.yaml: {', '.join(sorted(known or ()))}"
            )
    return None


def validate_config(cfg: DictConfig | dict[str, Any]) -> EvalConfig:
    """The typed config, or ConfigError listing each bad key with its value and what it accepts."""
    plain: dict[str, Any] = (
        OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)  # type: ignore[assignment]
    )
    problem = _unknown_keys(plain)
    if problem:
        raise ConfigError(problem)
    try:
        return EvalConfig.model_validate(plain)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = _where(tuple(p for p in err["loc"] if not str(p).startswith("literal[")))
            value = "" if err["type"] == "missing" else f"={err.get('input')!r}"
            lines.append(f"  {key}{value}: {err['msg']}")
        raise ConfigError(
            "the eval config has values that cannot work (configs/eval.yaml and the command-line "
            "overrides):\n"
            + "\n".join(lines)
            + "\nset them on the command line, e.g. `make eval ARGS='workers=2 limit=3'`"
        ) from None


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
    return [
        f"{k}: {old.get(k, '<unset>')!r} -> {new.get(k, '<unset>')!r}"
        for k in sorted(old.keys() | new.keys())
        if k not in OPERATIONAL_KEYS and old.get(k) != new.get(k)
    ]
