"""Dataflow of workspace cells: what each statement read and wrote, and which values are stale.

Both workspaces (`DictWorkspace`, the sandbox kernel) run a cell the same way:
`CellRecorder.start` analyzes and instruments it (`units.py`, `walker.py`, `reader.py`,
`scopes.py`), the cell runs and reports what actually ran (`recorder.py`), `finish` resolves
that into `CellFacts` (`resolve.py`, `change.py`), and the workspace's `DataflowGraph`
(`graph.py`) applies them statement by statement and returns the stale reads. The semantics
are documented in docs/design_workspace.md ("Dataflow and staleness").

`cell_dataflow` (`cellflow.py`) is the older text-only summary of a cell's top-level names,
which policies, tools and trajectories use to describe a step.
"""

from stateguard.dataflow.cellflow import MUTATING_METHODS, CellFlow, cell_dataflow
from stateguard.dataflow.facts import CellFacts, Ref, UnitFacts, Write
from stateguard.dataflow.graph import DataflowGraph
from stateguard.dataflow.recorder import CellRecorder, PreparedCell

__all__ = [
    "MUTATING_METHODS",
    "CellFacts",
    "CellFlow",
    "CellRecorder",
    "DataflowGraph",
    "PreparedCell",
    "Ref",
    "UnitFacts",
    "Write",
    "cell_dataflow",
]
