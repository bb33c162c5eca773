"""Round 40: a stated bound that no value of the column it was bound to meets is not read as a
missing condition on that column.

Written from the one false repair of fresh58's first look: "in how many months were 4,000 women
or more registered?" was bound, through "how many months", to the month number (1 to 12), and the
turn's correct `count_if(registered >= 4000)` was flagged as a missing filter `mon >= 4000`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.verification import rule_windows
from tests.stateguard.verification.conftest import sandboxed

REGISTER = """
import json
import duckdb
con = duckdb.connect()
rows = [(i + 1, 1812 + i // 12, i % 12 + 1, 3000 + (i * 37) % 1500) for i in range(120)]
con.execute("CREATE TABLE months AS SELECT * FROM (VALUES " + ", ".join(str(r) for r in rows) + ") t(obs, yr, mon, registered)")
"""


QUESTION = (
    "A first profile of `months`: how many months and how many distinct years does it cover, the "
    "highest monthly figure, and in how many months were 4,000 women or more registered?"
)
PROFILE = (
    'row = con.execute("SELECT count(*), count(DISTINCT yr), max(registered), '
    'count_if(registered >= {cut}) FROM months").fetchone()\n'
    "result = {{'n_months': row[0], 'n_years': row[1], 'max_registered': row[2], 'n_4000_plus': row[3]}}\n"
    "print(json.dumps(result))"
)


@pytest.mark.parametrize(("cut", "caught"), [("4000", False), ("3500", True)])
def test_a_bound_no_row_of_the_bound_column_meets_is_not_read(tmp_path: Path, cut: str, caught: bool) -> None:
    session, ws = sandboxed(tmp_path, REGISTER)
    try:
        findings = session.turn(QUESTION, PROFILE.format(cut=cut))
        # the month number never reaches 4,000: the bound is not read as a missing filter on it
        assert not any("no condition on mon" in n for n in session.verifier.last.notes)
        # the count written with another number is still the stated bound's mistake
        assert bool(findings) is caught, findings
    finally:
        ws.close()


def test_a_bin_noun_names_its_column_as_the_second_of_two_keys() -> None:
    """fresh59's false repair: "their health label and age band" was read as `health` and `age`, the
    bin noun left over though a column is named `band`."""
    rule = "more visits than the 80th percentile of their health label and age band, yet fewer than 6"
    columns = ["numvisit", "age", "health", "band"]
    found = rule_windows.stated_group(rule, columns, {}, ["numvisit"], None, [], ["pid"])
    assert found is not None and sorted(found.keys) == ["band", "health"]


def test_a_side_whose_other_word_is_another_columns_name_is_two_readings() -> None:
    # "age group" with columns `age` and `group`: neither is read (no bin noun to decide)
    rule = "above the median score of their school and age group"
    found = rule_windows.stated_group(rule, ["score", "school", "age", "group"], {}, ["score"], None, [], [])
    assert found is None or "age" not in found.keys
