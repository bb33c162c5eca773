"""Round 47: the two false repairs of fresh64's first look (round 46's code).

- "how many of them waited less than 180 days": "days" is the bound's unit. Since round 46 the
  context's description of `t2` ("the days of disease-free survival") became `dfs_days`'s after the
  code renamed it, and the unit after the number bound that column. A unit or a span of time after the
  number names no column.
- "keep the herbaceous ones as `herbs`" from now on: the cell also cut `top = herbs.dropna(...).head(5)`
  for one answer, which was taken as a second standing scope, so every later turn that read `herbs`
  "read around" `top`. Where the instruction names what it keeps, only that frame is the scope.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.standing import StandingScopes
from tests.stateguard.verification.conftest import Session

BMT = (
    "bmt.csv has 137 rows. Columns used here: t2 (the days of disease-free survival after the transplant), "
    "z7 (the wait from diagnosis to transplant, in days). Use DuckDB SQL."
)


def test_a_unit_after_the_number_names_no_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    csv = tmp_path / "bmt.csv"
    pd.DataFrame({"t2": rng.integers(1, 2600, 137), "z7": rng.integers(24, 2000, 137)}).to_csv(
        csv, index=False
    )
    session = Session()
    assert session.ws.run_cell("import duckdb, json\ncon = duckdb.connect()").ok
    load = (
        'con.execute("CREATE TABLE adults AS SELECT t2 AS dfs_days, z7 AS wait, z7 >= 180 AS late '
        f"FROM read_csv('{csv}')\")\n"
        'result = {"n": con.execute("SELECT count(*) FROM adults").fetchone()[0]}\nprint(json.dumps(result))'
    )
    assert (
        session.turn("Load it as `adults` with dfs_days from t2 and wait from z7. How many?", load, BMT) == []
    )
    code = (
        'w, n = con.execute("SELECT avg(wait), count_if(wait < 180) FROM adults WHERE late").fetchone()\n'
        'result = {"mean_wait_late": w, "n_under_180": n}\nprint(json.dumps(result))'
    )
    question = (
        "With late in its current sense, profile the late transplants of `adults`: the mean wait, and how "
        "many of them waited less than 180 days."
    )
    assert session.turn(question, code, BMT) == []


STANDING = (
    "The study is about herbs: from this point on leave the woody species out and keep the herbaceous ones "
    "as `herbs`. How many species are in `herbs`? Which sp have the five heaviest diaspores?"
)
CELL = (
    'herbs = plants[plants["lign"] == 0].copy()\n'
    'top = herbs.dropna(subset=["pdias"]).sort_values(["pdias", "sp"], ascending=[False, True]).head(5)\n'
    'result = {"n_herbs": len(herbs), "top5": list(top["sp"])}\n'
)


def test_a_named_kept_frame_is_the_only_standing_scope() -> None:
    scopes = StandingScopes()
    scopes.record(6, STANDING, CELL, inspect_code(CELL))
    assert [(s.parent, s.child) for s in scopes.scopes] == [("plants", "herbs")]
    later = 'n = int(herbs["heavy"].sum())\nresult = {"n_heavy": n}\n'
    assert scopes.bypassed("How many of the herbs are heavy-seeded?", later) == []
    around = 'n = int(plants["heavy"].sum())\nresult = {"n_heavy": n}\n'
    assert [s.child for s in scopes.bypassed("How many are heavy-seeded?", around)] == ["herbs"]
    # without a name in backticks, every frame the cell cuts is read as before
    plain = StandingScopes()
    unnamed = STANDING.replace("`herbs`", "herbs")
    plain.record(6, unnamed, CELL, inspect_code(CELL))
    assert {(s.parent, s.child) for s in plain.scopes} == {("plants", "herbs"), ("herbs", "top")}
