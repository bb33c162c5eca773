"""Manager policies by name: the one registry `manager=<name>` (and an arm of that name) reads.

    from stateguard.policies.registry import MANAGERS, ManagerSetup, register_manager
    register_manager("mine", lambda ctx: MyManager(ctx.semantic))   # then: make eval ARGS='manager=mine'
    policy = MANAGERS["rules"](ctx)                                  # eval.components.make_manager does this

A factory gets a `ManagerSetup` and returns a `ManagerPolicy`. What a policy may need is built by
the caller from its config, and the model parts only on demand: `ctx.llm(variant)` reads the
STATEGUARD_MANAGER_* endpoint and the config's `llm:` block, so a policy that never calls it runs
without any endpoint. `MODEL_MANAGERS` names the registered policies that call a model, so a run
checks their endpoint variables before its first task (`register_manager(..., calls_model=True)`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stateguard.policies.base import ManagerPolicy
from stateguard.policies.hierarchical import HierarchicalManager
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.observer import ObserverManager
from stateguard.policies.rules import RulesManager
from stateguard.registry import add
from stateguard.trace import Trace

if TYPE_CHECKING:
    from stateguard.llm import LLMClient
    from stateguard.policies.llm_manager import LLMManagerConfig

__all__ = ["MANAGERS", "MODEL_MANAGERS", "ManagerSetup", "ManagerFactory", "register_manager"]


@dataclass(frozen=True)
class ManagerSetup:
    """What a manager factory may use; built by `eval.components.make_manager` from the config."""

    trace: Trace
    # The rules tier's semantic verifier (`SemanticVerifier`), or None when `semantic.enabled` is off.
    semantic: Any
    # variant ("stateguard" | "freeform") -> (client of the manager endpoint, the manager's knobs).
    llm: Callable[[str], tuple[LLMClient, LLMManagerConfig]]


ManagerFactory = Callable[[ManagerSetup], ManagerPolicy]


def _llm(ctx: ManagerSetup) -> ManagerPolicy:
    return LLMManager(*ctx.llm("stateguard"))


def _hierarchical(ctx: ManagerSetup) -> ManagerPolicy:
    return HierarchicalManager(RulesManager(semantic=ctx.semantic), LLMManager(*ctx.llm("stateguard")))


def _observer(ctx: ManagerSetup) -> ManagerPolicy:
    client, _ = ctx.llm("stateguard")  # the `llm:` block is checked for it too
    return ObserverManager(client)


def _freeform(ctx: ManagerSetup) -> ManagerPolicy:
    return LLMManager(*ctx.llm("freeform"))


MANAGERS: dict[str, ManagerFactory] = {
    "rules": lambda ctx: RulesManager(semantic=ctx.semantic),
    "llm": _llm,
    "hierarchical": _hierarchical,
    "observer": _observer,
    "freeform": _freeform,
}
MODEL_MANAGERS: set[str] = {"llm", "hierarchical", "observer", "freeform"}


def register_manager(name: str, factory: ManagerFactory, *, calls_model: bool = False) -> None:
    """Add a policy under `name`; a name already taken is an error (remove it from MANAGERS first)."""
    add(MANAGERS, name, factory, axis="manager", flagged=MODEL_MANAGERS, flag=calls_model)
