"""Static cell dataflow and the staleness graph, as tables of cases."""

from __future__ import annotations

import pytest

from stateguard.dataflow import DataflowGraph, cell_dataflow


@pytest.mark.parametrize(
    ("code", "reads", "writes", "inplace"),
    [
        ("y = x + 1", ["x"], ["y"], []),
        ("df.drop(columns=['a'], inplace=True)", ["df"], ["df"], ["df"]),
        ("df2 = df.drop(columns=['a'])", ["df"], ["df2"], []),  # returns a copy: df untouched
        ("lst.append(3)", ["lst"], ["lst"], ["lst"]),
        ("df['c'] = df['a'] * 2", ["df"], ["df"], ["df"]),
        ("obj.attr = 5", ["obj"], ["obj"], ["obj"]),
        ("df = df.dropna()", ["df"], ["df"], []),
        ("total = sum(v for v in vals)", ["vals"], ["total"], []),
        ("def f(a):\n    b = a + g\n    return b\nz = f(q)", ["g", "q"], ["f", "z"], []),
        ("import pandas as pd\nx = pd.DataFrame()", [], ["pd", "x"], []),
        ("result = {'a': 1}\nprint(result)", [], ["result"], []),  # read after its own write: not a read
        ("x += 1", ["x"], ["x"], []),
        ("counts.update({'a': 1})", ["counts"], ["counts"], ["counts"]),
    ],
)
def test_cell_dataflow(code: str, reads: list[str], writes: list[str], inplace: list[str]) -> None:
    flow = cell_dataflow(code)
    assert flow.valid
    assert flow.reads == sorted(reads) and flow.writes == sorted(writes) and flow.inplace == sorted(inplace)


def test_syntax_error_is_reported() -> None:
    flow = cell_dataflow("x = (")
    assert not flow.valid and "line 1" in (flow.error or "")


def test_redefinition_makes_dependents_stale_transitively() -> None:
    g = DataflowGraph()
    g.record(1, reads=[], writes=["orders"])
    g.record(2, reads=["orders"], writes=["revenue"])
    g.record(3, reads=["revenue"], writes=["margin"])
    g.record(4, reads=["margin"], writes=["ratio"])
    assert g.stale() == {}
    g.record(5, reads=["orders"], writes=["revenue"])  # revised definition
    assert g.stale() == {"margin": ["revenue"], "ratio": ["revenue"]}
    assert g.derived_from("revenue") == ["margin", "ratio"]
    g.record(6, reads=["revenue"], writes=["margin"])  # recomputed: margin fresh, ratio still stale
    assert g.stale() == {"ratio": ["margin"]}


def test_in_place_mutation_of_an_input_makes_dependents_stale() -> None:
    g = DataflowGraph()
    g.record(1, reads=[], writes=["df"])
    g.record(2, reads=["df"], writes=["n"])
    g.record(3, reads=["df"], writes=["df"])  # df.dropna(inplace=True): a write of df
    assert g.stale_reasons("n") == ["df"]
    assert g.version("df") == 3 and g.inputs("n") == {"df": 1}


def test_forget_drops_deleted_variables() -> None:
    g = DataflowGraph()
    g.record(1, reads=[], writes=["a"])
    g.record(2, reads=["a"], writes=["b"])
    g.forget(["a"])
    assert g.version("a") is None and g.stale() == {}
