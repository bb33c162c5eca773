"""Statement-level dataflow with run-time facts, through DictWorkspace: a table of cell sequences.

Each case runs its cells in a fresh workspace and checks the stale reads of the last one
(variable -> the changed inputs that make it stale).
"""

from __future__ import annotations

import pytest

from stateguard.workspace import DictWorkspace

CASES = [
    # (name, cells, stale reads of the last cell)
    ("a dependency inside one cell", ["a = 1\nb = a + 1", "a = 5", "b"], {"b": ["a"]}),
    (
        "a frame summary inside one cell",
        [
            "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\nsummary = df.describe()",
            "df = pd.DataFrame({'a': [3, 4]})",
            "summary",
        ],
        {"summary": ["df"]},
    ),
    ("a later write in the same cell does not stale", ["a = 0", "b = a + 1\na = 42", "b"], {}),
    ("unpacking pairs targets with their values", ["x, y = 1, 2", "a, b = x + 2, y + 3", "y = 5", "a"], {}),
    ("the other target of the pair", ["x, y = 1, 2", "a, b = x + 2, y + 3", "y = 5", "b"], {"b": ["y"]}),
    (
        "read-and-rewrite in one statement",
        [
            "train, test = [1, None], [2, None]",
            "train, test = [v for v in train if v], [v for v in test if v]",
            "train + test",
        ],
        {},
    ),
    (
        "a column computed in the same cell is not stale at once",
        [
            "import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})",
            "df['b'] = df['a'] * 2\nx = df['b'].sum()",
            "x",
        ],
        {},
    ),
    (
        "a new column does not stale a value of another column",
        [
            "import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})",
            "m = df['a'].mean()",
            "df['new'] = 0",
            "m",
        ],
        {},
    ),
    (
        "a rewritten column stales what was computed from it",
        [
            "import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})",
            "df['b'] = df['a'] * 2",
            "x = df['b'].sum()",
            "df['a'] = df['a'] + 1",
            "x",
        ],
        {"x": ["df['a']"]},
    ),
    (
        "a groupby of named columns reads those columns only",
        [
            "import pandas as pd\ndf = pd.DataFrame({'k': [1, 1, 2], 'v': [1.0, 2.0, 3.0]})",
            "m = df.groupby('k')['v'].mean()",
            "df['new'] = 1",
            "m",
        ],
        {},
    ),
    (
        "a groupby value column that changed",
        [
            "import pandas as pd\ndf = pd.DataFrame({'k': [1, 1, 2], 'v': [1.0, 2.0, 3.0]})",
            "m = df.groupby('k')['v'].mean()",
            "df['v'] = 0.0",
            "m",
        ],
        {"m": ["df['v']"]},
    ),
    (
        "a pandas method that returns a new frame changes nothing",
        ["import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})", "x = df['a'].sum()", "y = df.add(1)", "x"],
        {},
    ),
    (
        "a column read as an attribute is the column",
        ["import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})", "s = df.a.sum()", "df['a'] = 0.0", "s"],
        {"s": ["df['a']"]},
    ),
    (
        "a function reads its globals when it is called",
        ["T = 3", "def f(v):\n    return v > T", "r = f(5)", "T = 10", "r"],
        {"r": ["T"]},
    ),
    (
        "a call after the change is fresh",
        ["T = 3", "def f(v):\n    return v > T", "T = 10", "r = f(5)", "r"],
        {},
    ),
    (
        "a global written by a called function",
        ["x = 0", "y = x + 1", "def f():\n    global x\n    x = 42", "f()", "y"],
        {"y": ["x"]},
    ),
    (
        "only the branch that ran counts",
        ["x, y = 0, 1", "def f(p):\n    if p:\n        return x\n    return y", "z = f(True)", "y = 2", "z"],
        {},
    ),
    (
        "a statement first reached in a late loop iteration",
        ["x = 1", "errs = []\nfor i in range(10):\n    if i == 7:\n        errs.append(x)", "x = 2", "errs"],
        {"errs": ["x"]},
    ),
    ("a loop variable is not an old value", ["total = 0\nfor i in range(3):\n    total += i", "total"], {}),
    ("content-equal rebinding does not propagate", ["y = 7", "x = y + 3", "y = 7", "x"], {}),
    ("a branch that did not run wrote nothing", ["y = 7", "x = y + 3", "if False:\n    y = 9", "x"], {}),
    ("a dict key is its own symbol", ["d = {'a': 1, 'b': 2}", "x = d['a'] + 1", "d['b'] = 5", "x"], {}),
    (
        "the key that was read",
        ["d = {'a': 1, 'b': 2}", "x = d['a'] + 1", "d['a'] = 7", "x"],
        {"x": ["d['a']"]},
    ),
    ("a key known only at run time", ["lst = [1, 2, 3]", "i = 2", "y = lst[i]", "lst[0] = 9", "y"], {}),
    (
        "an object of a class defined in a cell, changed by a helper",
        [
            "class Box:\n    def __init__(self):\n        self.v = 1",
            "b = Box()",
            "w = b.v + 1",
            "def poke(o):\n    o.v = 2",
            "poke(b)",
            "w",
        ],
        {"w": ["b.v"]},
    ),
    (
        "an in-place change through an alias keeps the alias fresh",
        ["a = [1]", "b = a", "a.append(2)", "b"],
        {},
    ),
    (
        "what was computed from the alias is stale",
        ["a = [1]", "b = a", "c = b + [5]", "a.append(2)", "c"],
        {"c": ["b"]},
    ),
    (
        "a library call that changes its argument",
        [
            "import numpy as np\narr = np.arange(10)",
            "first = arr[:3].sum()",
            "def scramble(v):\n    v[::-1].sort()",
            "scramble(arr)",
            "first",
        ],
        {"first": ["arr"]},
    ),
    (
        "a statement that raised wrote nothing",
        ["x = 0", "y = x + 1", "try:\n    x = 1 / 0\nexcept ZeroDivisionError:\n    pass", "y"],
        {},
    ),
    (
        "SQL tables are symbols too",
        [
            "import duckdb\ncon = duckdb.connect()",
            "con.execute('CREATE TABLE src AS SELECT 1 AS v')",
            "con.execute('CREATE TABLE dst AS SELECT v * 2 AS w FROM src')",
            "con.execute('CREATE OR REPLACE TABLE src AS SELECT 5 AS v')",
            "rows = con.execute('SELECT * FROM dst').fetchall()",
        ],
        {"dst": ["src"]},
    ),
]


@pytest.mark.parametrize(("name", "cells", "expected"), CASES, ids=[c[0] for c in CASES])
def test_stale_reads_of_the_last_cell(name: str, cells: list[str], expected: dict[str, list[str]]) -> None:
    ws = DictWorkspace()
    for code in cells:
        result = ws.run_cell(code)
        assert result.ok, (code, result.error)
    assert result.stale_reads == expected, name


def test_a_stale_read_is_reported_by_the_statement_that_made_it() -> None:
    ws = DictWorkspace()
    for code in ("a = 1", "b = a + 1", "a = 3"):
        ws.run_cell(code)
    # b is read while stale, then recomputed in the same cell: the read still counts.
    assert ws.run_cell("print(b)\nb = a + 1").stale_reads == {"b": ["a"]}
    assert ws.run_cell("b").stale_reads == {}


def test_failing_cell_records_the_statements_that_completed() -> None:
    ws = DictWorkspace()
    ws.run_cell("a = 1")
    ws.run_cell("b = a + 1")
    result = ws.run_cell("a = 2\nraise ValueError('bad')\nb = a + 1")
    assert not result.ok and result.writes == ["a"]
    assert ws.dataflow.stale() == {"b": ["a"]}


def test_values_of_cell_defined_classes_hash_in_listings() -> None:
    ws = DictWorkspace()
    ws.run_cell("class Box:\n    pass\nb = Box()\nb.v = 1")
    before = {v.name: v.content_hash for v in ws.list_variables()}["b"]
    ws.run_cell("b.v = 2")
    after = {v.name: v.content_hash for v in ws.list_variables()}["b"]
    assert before and after and before != after


def test_functions_survive_a_snapshot_and_keep_recording() -> None:
    ws = DictWorkspace()
    ws.run_cell("T = 1\ndef f():\n    return T")
    ws.snapshot("c1")
    ws.run_cell("T = 2")
    ws.restore("c1")
    ws.run_cell("r = f()")
    ws.run_cell("T = 5")
    assert ws.run_cell("r").stale_reads == {"r": ["T"]}
    assert ws.run_probe("result = f()").ok  # a probe may call cell functions; it records nothing
    assert ws.run_cell("r").stale_reads == {"r": ["T"]}


def test_tracebacks_and_values_are_the_users() -> None:
    ws = DictWorkspace()
    result = ws.run_cell("x = 1\ny = x + 1\n1 / 0")
    assert result.error == "ZeroDivisionError: division by zero" and "line 3" in (result.traceback or "")
    result = ws.run_cell("def f():\n    '''doc'''\n    return 3\nf.__doc__, f()")
    assert result.value == "('doc', 3)"
