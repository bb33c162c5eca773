"""SQL run through a connection is dataflow: tables read and created, the connection as plumbing."""

from __future__ import annotations

import pytest

from stateguard.dataflow import DataflowGraph, cell_dataflow

CASES = [
    # (cell, reads, writes)
    (
        'con.execute("CREATE OR REPLACE TABLE heavy AS SELECT * FROM birds WHERE mass >= 4000")',
        [],
        ["heavy"],
    ),  # birds is read ... see below
    ('heavy = con.table("heavy").df()', ["heavy"], ["heavy"]),
    (
        'q = """\nWITH t AS (SELECT * FROM a)\nSELECT * FROM t JOIN b USING (k)\n"""\nrows = con.execute(q).fetchall()',
        ["a", "b"],
        ["q", "rows"],
    ),
    ('con.sql("INSERT INTO log SELECT * FROM staging")', ["staging"], ["log"]),
    ('con.execute(f"SELECT * FROM {name} JOIN dims USING (id)")', ["dims", "name"], []),
    ('con.execute("not sql at all")', [], []),
    ('x = con\ncon.execute("SELECT 1 FROM t")', ["con", "t"], ["x"]),  # used as data too: still a read
]


@pytest.mark.parametrize(("code", "reads", "writes"), CASES[1:])
def test_sql_reads_and_writes(code: str, reads: list[str], writes: list[str]) -> None:
    flow = cell_dataflow(code)
    assert flow.valid
    assert flow.reads == sorted(reads) and flow.writes == sorted(writes)


def test_create_reads_its_sources_and_the_connection_is_plumbing() -> None:
    flow = cell_dataflow(CASES[0][0])
    assert flow.reads == ["birds"] and flow.writes == ["heavy"]


def test_a_redefined_table_makes_its_sql_children_stale() -> None:
    g = DataflowGraph()
    cells = [
        'con.execute("CREATE TABLE revenue AS SELECT SUM(p) AS r FROM orders")',
        'con.execute("CREATE TABLE margin AS SELECT r - 10 AS m FROM revenue")',
        'con.execute("CREATE OR REPLACE TABLE revenue AS SELECT SUM(p * q) AS r FROM orders")',
    ]
    for i, code in enumerate(cells, start=1):
        flow = cell_dataflow(code)
        g.record(i, reads=flow.reads, writes=flow.writes)
    assert g.stale() == {"margin": ["revenue"]}


def test_statement_level_sql_in_a_workspace() -> None:
    """Turn-by-turn SQL as the dev set's tasks write it: the connection is made in the cell that
    creates the first tables, and a frame is read back from the table of the same name."""
    from stateguard.workspace import DictWorkspace

    ws = DictWorkspace()
    first = ws.run_cell(
        'import duckdb\ncon = duckdb.connect()\ncon.execute("CREATE TABLE base AS SELECT * FROM range(10) t(x)")\n'
        'con.execute("CREATE OR REPLACE TABLE trials AS SELECT * FROM base")'
    )
    assert first.ok and {"base", "trials"} <= set(first.writes), first
    made = ws.run_cell(
        'con.execute("""\nCREATE OR REPLACE TABLE rank AS\nSELECT AVG(x) AS m FROM trials\n""")\n'
        'rank = con.table("rank").df()'
    )
    assert made.ok and made.stale_reads == {}
    assert ws.run_cell('con.execute("CREATE OR REPLACE TABLE trials AS SELECT * FROM base WHERE x <> 3")').ok
    assert ws.run_cell("rank").stale_reads == {"rank": ["trials"]}
    assert ws.dataflow.stale() == {"rank": ["trials"]}


def test_a_kernel_imports_sqlglot_only_when_a_cell_runs_sql() -> None:
    # A kernel imports the dataflow recorder at every start; sqlglot was a quarter of that import.
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import stateguard.sandbox.kernel\n"
        "from stateguard.dataflow import cell_dataflow\n"
        "cell_dataflow('x = df[df.b > 1]')\n"
        "print('sqlglot' in sys.modules)\n"
        "flow = cell_dataflow('con.execute(\"SELECT * FROM birds\")')\n"
        "print('sqlglot' in sys.modules, flow.reads)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["False", "True ['birds']"]
