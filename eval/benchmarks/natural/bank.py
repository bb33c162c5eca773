"""The bank of natural mistakes: wrong turns of real models, kept as replayable faults.

Each entry is one turn that a real model (the LLM worker) answered wrong in a dev-set run. It
holds that model's own code for the turn (θ'), which the scripted worker runs in place of the
reference code, on the task's reference prefix: the earlier turns run their reference code, so
the mistake is the model's and nothing else. When the model's code reads a name that only its
own earlier turns defined, the cells of those turns that define it come first in θ' (each
marked with a comment). When the model answered, θ' ends by reporting the model's answer, as the
model typed it; the entry is *confirmed* only when the replayed code itself prints every number
and text of that answer again and the judge scores the replayed answer wrong (a turn without an
answer must end without one again). Provenance (model, sampling settings, task, turn, run,
arm) is kept per entry.

    bank = load_bank()                       # eval/benchmarks/natural/bank.json
    fault = bank.entries[0].fault()          # a counterfactual Fault (semantic "other") for the scripted worker
    python -m eval.benchmarks.natural.harvest --help   # how entries are added and confirmed
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.files import load_model, write_json
from stateguard.workers.faults import Fault

__all__ = ["BANK_FILE", "DATA_ROOT", "BankEntry", "NaturalBank", "load_bank", "save_bank"]

BANK_FILE = Path(__file__).with_name("bank.json")
# Models write the data folder's absolute path, which names the checkout the run was made in; the
# bank keeps this placeholder instead, and a replay puts its own dev-set folder there.
DATA_ROOT = "@DEV_DATA_ROOT@"


class BankEntry(BaseModel):
    """One natural mistake: a real model's wrong turn, replayable by the scripted worker."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Unique in the bank; also the variant name (`nat-<id>`).")
    task: str = Field(description="Dev task id as stored (agriculture__barley__task1).")
    turn: int = Field(ge=1)
    model: str = Field(description="The model that wrote the code (the served model's name).")
    sampling: dict[str, Any] = Field(
        default_factory=dict, description="Sampling settings of the run (temperature, max_tokens)."
    )
    source: str = Field(description="The run it came from (folder name) and the arm, e.g. llm15/baseline.")
    kind: str = Field(description="The natural-mistake class (eval.metrics.natural.KINDS).")
    model_answer: Any = Field(default=None, description="What the model answered (None: no answer).")
    model_error: str = Field(
        default="", description="The exception the turn's last cell raised in the model's run ('' if none)."
    )
    expected: Any = Field(default=None, description="The reference answer of the turn.")
    code: str = Field(
        description="θ': the model's cells of the turn (after any supporting cells), then its answer."
    )
    support_cells: int = Field(
        default=0, description="Cells of the model's earlier turns put before its own."
    )
    status: Literal["candidate", "confirmed", "rejected"] = "candidate"
    replay_answer: Any = Field(
        default=None, description="The answer the scripted worker reported in the replay."
    )
    note: str = Field(default="", description="Why it was rejected, or what the replay showed.")

    @property
    def variant(self) -> str:
        return f"nat-{self.id}"

    def fault(self, data_root: str | Path | None = None) -> Fault:
        """The scripted worker's fault; `data_root` replaces the data-folder placeholder in θ'."""
        code = self.code if data_root is None else self.code.replace(DATA_ROOT, str(data_root))
        return Fault(
            kind="counterfactual",
            turn=self.turn,
            code=code,
            semantic="other",
            description=f"natural {self.kind}: {self.model}, {self.source}, turn {self.turn}",
        )


class NaturalBank(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    entries: list[BankEntry] = Field(default_factory=list)

    def confirmed(self) -> list[BankEntry]:
        return [e for e in self.entries if e.status == "confirmed"]


def load_bank(path: str | Path = BANK_FILE) -> NaturalBank:
    """The bank at `path`; an absent file is an empty bank (nothing harvested yet)."""
    path = Path(path)
    return load_model(path, NaturalBank) if path.is_file() else NaturalBank()


def save_bank(bank: NaturalBank, path: str | Path = BANK_FILE) -> None:
    ids = [e.id for e in bank.entries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"natural bank: duplicate entry ids {sorted({i for i in ids if ids.count(i) > 1})}")
    write_json(path, bank.model_dump(mode="json"))
