"""The AST helpers of the instrumentation: the same nodes, order and positions as the standard ones."""

from __future__ import annotations

import ast

import pytest

from stateguard.dataflow.markers import (
    POSITION,
    children,
    cover_stmt,
    hook_call,
    hook_stmt,
    located,
    walk,
    wrap,
)
from stateguard.dataflow.units import scan_names

CELLS = [
    "x = 1",
    "kept = df[df['b'] > 0.5]\nkept['c'] = kept['b'] * 2\nsummary = kept.groupby('k')['c'].mean()",
    "for i in range(3):\n    if i:\n        total += i\n    else:\n        break\nelse:\n    pass",
    "def f(a, *b, c=1, **d):\n    return [a for a in b if a]\nf = lambda y: y + 1\nclass C(Base):\n    z: int = 2",
    "with open(p) as fh, ctx() as (u, v):\n    try:\n        del w[0]\n    except (KeyError, ValueError) as e:\n        raise",
    "match m:\n    case [1, *rest] if rest:\n        out = f'{rest!r:>3}'\n    case {'k': v}:\n        out = v",
]


def _positions(node: ast.AST) -> list[tuple[str, tuple[object, ...]]]:
    return [(type(n).__name__, tuple(getattr(n, k, "-") for k in POSITION)) for n in ast.walk(node)]


@pytest.mark.parametrize("code", CELLS)
def test_walk_and_children_match_the_standard_library(code: str) -> None:
    tree = ast.parse(code)
    assert walk(tree) == list(ast.walk(tree))
    for node in ast.walk(tree):
        assert children(node) == list(ast.iter_child_nodes(node))


def test_markers_built_in_place_are_located_as_located_would() -> None:
    stmt = ast.parse("kept = df[col]").body[0]
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Subscript)
    loose = ast.Name(id="obj", ctx=ast.Load())  # an argument without a position takes the marker's
    built = hook_stmt("o", 7, loose, at=stmt)
    walked = located(ast.Expr(value=hook_call("o", 7, ast.Name(id="obj", ctx=ast.Load()))), stmt)
    assert ast.dump(built, include_attributes=True) == ast.dump(walked, include_attributes=True)
    assert _positions(built)[0] == ("Expr", (1, 0, 1, 14))

    key = stmt.value.slice
    wrapped = wrap(key, "k", 3)
    assert wrapped.args[1] is key  # the user's node is kept, not copied or moved
    assert _positions(wrapped) == _positions(located(hook_call("k", 3, key), key))
    # the cover store: the same nodes, positioned as located positions them
    fresh = ast.Assign(
        targets=[
            ast.Subscript(
                value=ast.Name(id="__sgcov__", ctx=ast.Load()), slice=ast.Constant(5), ctx=ast.Store()
            )
        ],
        value=ast.Constant(1),
    )
    assert ast.dump(cover_stmt(5, at=stmt), include_attributes=True) == ast.dump(
        located(fresh, stmt), include_attributes=True
    )


SCANS = [
    # (cell, bound, imported, sql, defines, rebound first)
    ("x = 1", {"x"}, set(), False, False, {"x"}),
    ("x = x + 1", {"x"}, set(), False, False, set()),
    ("y = df\nx = y\ny = 2", {"x", "y"}, set(), False, False, {"x", "y"}),  # y's first mention rebinds it
    ("df['c'] = 1\ndf = df.copy()", {"df"}, set(), False, False, set()),  # mentioned before it is rebound
    ("a, b = 1, 2\nc = d = 3", {"a", "b", "c", "d"}, set(), False, False, set()),  # not single-Name targets
    (
        "import numpy.linalg as la, os.path\nfrom x import y as z",
        {"la", "os", "z"},
        {"la", "os"},
        False,
        False,
        set(),
    ),
    ("r = con.execute('SELECT 1')", {"r"}, set(), True, False, {"r"}),
    ("def f(a):\n    b = a\nclass K: pass", {"f", "K", "b"}, set(), False, True, set()),
    ("g = lambda q: q\nfor i in range(2): pass", {"g", "i"}, set(), False, True, {"g"}),
    ("del w\nw = 1", {"w"}, set(), False, False, set()),
]


@pytest.mark.parametrize(("code", "bound", "imported", "sql", "defines", "fresh"), SCANS)
def test_one_scan_gives_the_names_the_analysis_and_the_recorder_use(
    code: str, bound: set[str], imported: set[str], sql: bool, defines: bool, fresh: set[str]
) -> None:
    names = scan_names(ast.parse(code))
    assert (set(names.bound), set(names.imported), names.sql, names.defines) == (
        bound,
        imported,
        sql,
        defines,
    )
    assert names.rebound_first == fresh
