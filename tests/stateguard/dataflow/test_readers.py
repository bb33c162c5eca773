"""The recorder's shortcut for frames a cell only reads: which variables it still fingerprints, and
that in-place changes are still seen in cells that also read the frame through pandas methods."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from stateguard.dataflow.recorder import _watched
from stateguard.dataflow.units import Registry, analyze_cell
from stateguard.workspace import DictWorkspace


class Ledger:
    """Not pandas, but with a `sort_values` that sorts in place: its name promises nothing."""

    def __init__(self) -> None:
        self.items = [3, 1, 2]

    def sort_values(self) -> None:
        self.items.sort()


class MyFrame(pd.DataFrame):
    """A pandas subclass may redefine any method, so it gets no shortcut."""


def _watched_names(code: str, namespace: dict[str, Any]) -> set[str]:
    return _watched(analyze_cell(code, namespace, Registry()), namespace)


def _namespace() -> dict[str, Any]:
    frame = pd.DataFrame({"a": [1.0, 2.0], "k": [1, 2]})
    return {
        "pd": pd,
        "df": frame,
        "s": frame["a"],
        "ledger": Ledger(),
        "sub": MyFrame(frame),
        "f": print,
        "kw": {},
    }


@pytest.mark.parametrize(
    "code",
    [
        "top = df.sort_values('a').groupby('k')['a'].agg(['mean', 'count'])",
        "x = df['a'].sum()",
        "d = df.describe()\nm = df.merge(pd.DataFrame({'k': [1]}), on='k')",
        "v = s.value_counts()",
        "y = df.dropna()",
        "n = len(df)\nprint(df.shape, repr(s))",
    ],
)
def test_a_frame_only_read_by_pandas_methods_is_not_fingerprinted(code: str) -> None:
    watched = _watched_names(code, _namespace())
    assert "df" not in watched and "s" not in watched


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("f(df)", "df"),  # handed to an unknown function
        ("x = df.pipe(f)", "df"),  # a method that hands the frame to a callback
        ("df.sort_values('a', inplace=True)", "df"),
        ("df.sort_values('a', **kw)", "df"),  # the keywords could hold inplace=True
        ("x = df.sum()\ndf['a'] = 0.0", "df"),  # changed in place by the cell
        ("x = df.sum()\ndf = df", "df"),  # rebound: its content equality is checked
        ("ledger.sort_values()", "ledger"),  # the method name alone proves nothing
        ("x = sub.sort_values('a')", "sub"),  # a subclass of DataFrame
        ("x = s.sum()\nsetattr(s, 'name', 'b')", "s"),
        ("print(ledger)", "ledger"),  # only pandas objects are known not to change when printed
        ("len = f\nn = len(df)", "df"),
    ],  # not the builtin
)
def test_frames_that_may_change_are_still_fingerprinted(code: str, name: str) -> None:
    assert name in _watched_names(code, _namespace())


SETUP = (
    "import pandas as pd\nimport operator\ndf = pd.DataFrame({'a': [1.0, 2.0, None], 'b': [3.0, 4.0, 5.0]})"
)


@pytest.mark.parametrize(
    ("cell", "stale_m", "stale_n"),
    [
        ("df.loc[0, 'a'] = 9.0\ntop = df.sort_values('b').describe()", True, False),
        ("df['a'] = 0.0\ntop = df.sort_values('b')", True, False),
        ("df.drop(columns=['b'], inplace=True)\ntop = df.describe()", True, True),
        ("df.fillna(0.0, inplace=True)\ntop = df.sum()", True, True),
        ("setattr(df, 'a', df['a'] * 2)\ntop = df.sum()", True, True),
        ("operator.setitem(df, 'a', 0.0)\ntop = df.sum()", True, True),  # a library function changes it
        ("top = df.sort_values('b').describe()\nv = df['a'].value_counts()", False, False),
    ],
)
def test_in_place_changes_are_seen_next_to_pandas_reads(cell: str, stale_m: bool, stale_n: bool) -> None:
    ws = DictWorkspace()
    for code in (SETUP, "m = df['a'].mean()\nn = df['b'].max()", cell):
        result = ws.run_cell(code)
        assert result.ok, (code, result.error)
    assert bool(ws.run_cell("m").stale_reads) is stale_m
    assert bool(ws.run_cell("n").stale_reads) is stale_n


def test_an_object_with_a_look_alike_method_is_still_checked() -> None:
    ws = DictWorkspace({"ledger": Ledger()})
    ws.run_cell("first = ledger.items[0]")
    assert ws.run_cell("ledger.sort_values()").ok
    assert ws.run_cell("first").stale_reads == {"first": ["ledger.items[0]"]}


@pytest.mark.parametrize(
    "source",
    [
        "'a'",
        "0",
        "-1",
        "1.5",
        "True",
        "None",
        "b'x'",
        "('x', 1)",
        "name",
        "obj.attr",
        "f(1)",
        "1 + 2j",
        "[1]",
        "...",
    ],
)
def test_literal_key_answers_as_literal_eval_does(source: str) -> None:
    import ast

    from stateguard.dataflow import paths
    from stateguard.dataflow.reader import literal_key

    node = ast.parse(source, mode="eval").body
    try:
        expected = paths.key(ast.literal_eval(node))
    except ValueError:
        expected = None
    assert literal_key(node) == expected


def test_literal_key_skips_literal_eval_for_constants_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    from stateguard.dataflow.reader import literal_key

    calls: list[ast.AST] = []
    real = ast.literal_eval
    monkeypatch.setattr(ast, "literal_eval", lambda node: calls.append(node) or real(node))
    assert literal_key(ast.parse("'price'", mode="eval").body) == "['price']"
    assert literal_key(ast.parse("col", mode="eval").body) is None
    assert calls == []  # answered without literal_eval (every subscript of a cell asks)
    assert literal_key(ast.parse("-1", mode="eval").body) == "[-1]"
    assert len(calls) == 1  # other nodes still go through it
