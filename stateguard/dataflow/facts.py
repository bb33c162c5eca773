"""What a cell did, statement by statement: the records the recorder hands to the graph.

The recorder (`recorder.py`) runs where the cell runs (the sandbox kernel, or the process of a
`DictWorkspace`) and knows the run-time facts; the graph (`graph.py`) lives with the workspace
object and keeps the versions. `CellFacts` is what crosses between them (as JSON for the sandbox).

- `UnitFacts`: one executed statement unit (a simple statement, or the header of an if/for/while/
  with), in execution order; a loop body appears for its first two iterations only. `reads` are
  checked for staleness before `writes` take effect.
- `Ref.deep`: a read of the value with everything below it (`df`, `foo.x`); a shallow read
  (`deep=False`) sees only rebinding of the path itself or its parents, which is how a call reads
  its callee (`f(...)`, `np.ones(...)`, `Foo(...)`).
- `Write.kind`: `bind` (a new value: the old attributes/items are gone), `mutate` (changed in
  place), `grow` (appended to: existing items unchanged), `delete`. `keep` carries the target's
  earlier inputs over (`df = df.dropna()`, `x += 1`, `lst.append(v)`). `aliases`: other variables
  bound to the same object, whose inputs through that object are brought up to date.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.dataflow.paths import fmt


class Ref(BaseModel):
    model_config = ConfigDict(frozen=True)
    path: tuple[str, ...]
    deep: bool = True

    def __str__(self) -> str:
        return fmt(self.path)


class Write(BaseModel):
    model_config = ConfigDict(frozen=True)
    path: tuple[str, ...]
    kind: Literal["bind", "mutate", "grow", "delete"] = "bind"
    deps: tuple[Ref, ...] = ()
    keep: bool = False
    aliases: tuple[str, ...] = ()


class UnitFacts(BaseModel):
    model_config = ConfigDict(frozen=True)
    unit: int = Field(description="index of the statement unit in the cell")
    line: int = 0
    reads: tuple[Ref, ...] = ()
    writes: tuple[Write, ...] = ()
    complete: bool = Field(default=True, description="False when the statement raised before finishing.")


class CellFacts(BaseModel):
    model_config = ConfigDict(frozen=True)
    units: tuple[UnitFacts, ...] = ()
    unchanged: tuple[str, ...] = Field(
        default=(), description="variables written whose value is content-equal to the one before the cell"
    )
    traced: bool = Field(default=True, description="False: no run-time facts (the cell did not compile)")

    def roots_read(self) -> list[str]:
        return sorted({r.path[0] for u in self.units for r in u.reads})

    def roots_written(self) -> list[str]:
        return sorted({w.path[0] for u in self.units if u.complete for w in u.writes})
