"""Round 46: from the misses of fresh62 and fresh63 after their first looks.

- A column the code renamed (`"Band.2" AS b2`) is still said by its former name ("a Band 2 value"):
  the question is read with the present name where no table the turn reads has the former one.
- A bound said by a sign ("whose Band 2 value is negative") is a bound at zero.
- "with more than 3,000 transactions of the second kind" beside `t2 (the number of transactions of
  the second kind)` is a bound on `t2`, not on how many rows are kept.
- A bound on a column the words name is not matched by its number to the code's test of another
  column ("a basibregmatic height of 135 mm or more ... a maximum breadth of at least 135 mm").
- A rule's base may be a fitted line ("more than 10 % above what the line predicts").
- A column computed by arithmetic with a constant (`minutes * 1.0 / (t1 + t2) AS per_txn`) is one a
  replaced rule may be written out on (`per_txn >= 2.9`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import extract, renames, rule_multiples, rule_offsets, rule_windows
from stateguard.verification.finding import Finding
from stateguard.verification.superseded import FlagHistory
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import Session

# --- renamed columns ---------------------------------------------------------------------------------

LOAD = (
    'CREATE TABLE pixels AS SELECT column0 AS pid, "X.coord" AS x, "Band.1" AS b1, "Band.2" AS b2, '
    "time AS minutes FROM read_csv('radar.csv')"
)


def test_the_code_s_renames_of_names_of_several_parts() -> None:
    sql = inspect_code(f"con.execute({LOAD!r})")
    # a plain word renamed ("time" as minutes) and a name of one part are no names to read
    assert renames.renames_in("", sql) == {"pid": "column0", "x": "X.coord", "b1": "Band.1", "b2": "Band.2"}
    code = 'sk = sk.rename(columns={"Sepal.Length": "sl", "time": "minutes"})'
    assert renames.renames_in(code, inspect_code(code)) == {"sl": "Sepal.Length"}


@pytest.mark.parametrize(
    ("text", "live", "read"),
    [
        ("pixels whose Band 2 value is negative", {"b1", "b2"}, "pixels whose b2 value is negative"),
        ("a Band.1 value of 100 or more", {"b1", "b2"}, "a b1 value of 100 or more"),
        ("the X coord of the pixel", {"x"}, "the x of the pixel"),
        # another number, or a table the turn reads that still has the former name: left as said
        ("a Band 20 value", {"b1", "b2"}, "a Band 20 value"),
        ("a Band 2 value", {"b2", "Band.2"}, "a Band 2 value"),
        # a present name no table has: nothing to read it as
        ("a Band 2 value", {"b1"}, "a Band 2 value"),
    ],
)
def test_former_names_are_read_as_the_present_ones(text: str, live: set[str], read: str) -> None:
    renamed = {"x": "X.coord", "b1": "Band.1", "b2": "Band.2"}
    assert renames.spelled(text, renamed, live) == read


RADAR = (
    "radarImage.csv has 400 rows, one per pixel. Columns: X.coord (the pixel's column in the image), "
    "and Band.1, Band.2 and Band.3 (the pixel's values in three frequency bands; they can be negative). "
    "Use DuckDB SQL."
)


@pytest.fixture(scope="module")
def radar_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("radar") / "radar.csv"
    pd.DataFrame(
        {
            "X.coord": rng.integers(26, 75, 400),
            "Band.1": rng.integers(-50, 300, 400),
            "Band.2": rng.integers(-150, 300, 400),
            "Band.3": rng.integers(-200, 300, 400),
        }
    ).to_csv(path)
    return path


def _radar(path: Path) -> Session:
    session = Session()
    load = (
        "import duckdb, json\ncon = duckdb.connect()\n"
        'con.execute("""CREATE TABLE pixels AS SELECT column0 AS pid, \\"X.coord\\" AS x, \\"Band.1\\" AS b1, '
        f'\\"Band.2\\" AS b2, \\"Band.3\\" AS b3 FROM read_csv(\'{path}\', header = true)""")\n'
        'result = {"n": con.execute("SELECT count(*) FROM pixels").fetchone()[0]}\nprint(json.dumps(result))'
    )
    assert (
        session.turn("Load the file as `pixels` with x, b1, b2 and b3. How many pixels?", load, RADAR) == []
    )
    return session


Q5 = (
    "Consider only the pixels whose Band 2 value is negative: how many are there, and how many of those "
    "have a Band 1 value of 100 or more?"
)


@pytest.mark.parametrize(
    ("where", "cut", "caught"),
    [("WHERE b2 < 0", 100, False), ("", 100, True), ("WHERE b2 > 0", 100, True), ("WHERE b2 < 0", 50, True)],
)
def test_a_renamed_column_s_sign_and_bound(radar_csv: Path, where: str, cut: int, caught: bool) -> None:
    session = _radar(radar_csv)
    code = (
        f'n_neg, n_b1 = con.execute("SELECT count(*), sum(CASE WHEN b1 >= {cut} THEN 1 ELSE 0 END) '
        f'FROM pixels {where}").fetchone()\n'
        'result = {"n_b2_negative": n_neg, "n_of_those_b1_100_plus": n_b1}\nprint(json.dumps(result))'
    )
    assert bool(session.turn(Q5, code, RADAR)) is caught


def test_without_the_rename_the_former_name_binds_nothing(radar_csv: Path) -> None:
    """The same turn on a table loaded under the file's own names: "Band 2" names no column here (the
    former names are live, so nothing is read as another), and a dropped filter is not claimed."""
    session = Session()
    load = (
        "import duckdb, json\ncon = duckdb.connect()\n"
        f"con.execute(\"CREATE TABLE pixels AS SELECT * FROM read_csv('{radar_csv}', header = true)\")\n"
        'result = {"n": con.execute("SELECT count(*) FROM pixels").fetchone()[0]}\nprint(json.dumps(result))'
    )
    assert session.turn("Load the file as `pixels`. How many pixels?", load, RADAR) == []
    code = (
        'n_neg, n_b1 = con.execute(\'SELECT count(*), sum(CASE WHEN "Band.1" >= 100 THEN 1 ELSE 0 END) '
        "FROM pixels').fetchone()\n"
        'result = {"n_b2_negative": n_neg, "n_of_those_b1_100_plus": n_b1}\nprint(json.dumps(result))'
    )
    assert session.turn(Q5, code, RADAR) == []


# --- sign bounds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clause", "op", "subject"),
    [
        ("the pixels whose b2 value is negative", "<", ["b2", "value"]),
        ("firms whose profit was positive", ">", ["profit"]),
        ("years where the balance is strictly negative", "<", ["balance"]),
    ],
)
def test_a_sign_is_a_bound_at_zero(clause: str, op: str, subject: list[str]) -> None:
    [req] = extract.comparisons(clause)
    assert (req.op, req.value, req.subject) == (op, 0.0, subject)
    assert extract.is_sign(req)


@pytest.mark.parametrize(
    "clause",
    [
        "patients who tested positive",  # a result said as a value, no linking verb
        "the readings are not negative",  # negated: no bound read
        "the effect is positive for women",  # a sign said of something else
    ],
)
def test_signs_that_state_no_bound(clause: str) -> None:
    assert not [r for r in extract.comparisons(clause) if extract.is_sign(r)]


def test_a_sign_parses_whole_only_when_its_subject_binds() -> None:
    vocab = Vocabulary(tables={"pixels": {"b2": ColumnInfo(kind="num", low=-10, high=10)}})
    question = "how many are the pixels whose b2 value is negative"
    [req] = extract.comparisons(question)
    assert extract.parses_whole(question, req, vocab, ["pixels"])
    other = "how many are the pixels whose glare value is negative"
    [req] = extract.comparisons(other)
    assert not extract.parses_whole(other, req, vocab, ["pixels"])


def _found(findings: list[Finding], caught: bool, said: str) -> None:
    """A finding exactly when `caught`, whose evidence then names the bound `said`."""
    assert bool(findings) is caught
    if caught:
        assert said in findings[0].evidence


# --- a counted noun a column counts --------------------------------------------------------------------

BANK = (
    "Transact.csv has 200 rows, one per branch. Columns: t1 (the number of transactions of the first kind), "
    "t2 (the number of transactions of the second kind) and minutes (the total time spent, in minutes). "
    "Use DuckDB SQL."
)
SETUP_BANK = """
import duckdb, json
rng = np.random.default_rng(1)
bank = pd.DataFrame({"bid": np.arange(1, 201), "t1": rng.integers(0, 1500, 200), "t2": rng.integers(100, 6000, 200)})
bank["minutes"] = (bank.t1 * 2.5 + bank.t2 * 1.1 + rng.integers(0, 3000, 200)).astype(float)
con = duckdb.connect()
con.execute("CREATE TABLE branches AS SELECT * FROM bank")
"""
Q_BANK = (
    "Among the branches with more than 3,000 transactions of the second kind, how many are there, and how "
    "many of those spent 8,000 minutes or more in all?"
)


@pytest.mark.parametrize(
    ("where", "caught"), [("WHERE t2 > 3000", False), ("", True), ("WHERE t1 > 300", True)]
)
def test_a_count_of_what_a_column_counts_bounds_that_column(where: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(SETUP_BANK).ok
    code = (
        'n_t2, n_min = con.execute("SELECT count(*), sum(CASE WHEN minutes >= 8000 THEN 1 ELSE 0 END) '
        f'FROM branches {where}").fetchone()\n'
        'result = {"n_t2_over_3000": n_t2, "n_of_those_minutes_8000_plus": n_min}\nprint(json.dumps(result))'
    )
    _found(session.turn(Q_BANK, code, BANK), caught, "t2 > 3000")


def test_a_group_size_cut_stays_a_count() -> None:
    """The code cuts on how many rows a group has: the bound is read as that count, as before."""
    session = Session()
    assert session.ws.run_cell(SETUP_BANK).ok
    code = (
        'n = con.execute("SELECT count(*) FROM (SELECT t1 % 7 AS k FROM branches GROUP BY k '
        'HAVING count(*) > 20)").fetchone()[0]\nresult = {"n": n}\nprint(json.dumps(result))'
    )
    assert (
        session.turn("How many groups have more than 20 transactions of the second kind?", code, BANK) == []
    )


# --- a number tested on another column --------------------------------------------------------------

SKULLS = (
    "Columns: epoch (the approximate date), mb (the maximum breadth of the skull), bh (its basibregmatic "
    "height), all in millimetres. Use pandas."
)
Q_SKULLS = (
    "Take the skulls with a basibregmatic height of 135 mm or more: how many are there, and how many of them "
    "have a maximum breadth of at least 135 mm?"
)


@pytest.mark.parametrize(("cut", "caught"), [(135, False), (132, True)])
def test_the_same_number_on_another_column_is_not_the_named_bound(cut: int, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\nrng = np.random.default_rng(1)\nskulls = pd.DataFrame({'mb': rng.integers(119, 148, 150), "
        "'bh': rng.integers(120, 150, 150)})"
    ).ok
    code = (
        'tall = skulls[skulls["bh"] >= 135]\n'
        f'result = {{"n_bh_135_plus": int(len(tall)), "n_mb": int((tall["mb"] >= {cut}).sum())}}\n'
        "print(json.dumps(result))"
    )
    _found(session.turn(Q_SKULLS, code, SKULLS), caught, "'maximum breadth >= 135'")


# --- a fitted line as a rule's base ------------------------------------------------------------------

RULE = (
    "She fits a least-squares line of total minutes on the number of transactions over all the branches and "
    "would call a branch slow when its total time is more than 10 % above what the line predicts."
)
FIT = (
    "UPDATE branches SET slow = branches.minutes > {k} * (f.b0 + f.b1 * branches.n_txn)\n"
    "FROM (SELECT regr_intercept(minutes, n_txn) AS b0, regr_slope(minutes, n_txn) AS b1 FROM branches) f"
)


def test_a_distance_from_a_fitted_line() -> None:
    said = rule_multiples.stated(RULE)
    assert said is not None and (said.multiple, said.op) == (pytest.approx(1.1), ">")
    assert rule_multiples.changed(RULE, f'con.execute("""{FIT.format(k="1.10")}""")') is None
    found = rule_multiples.changed(RULE, f'con.execute("""{FIT.format(k="1.20")}""")')
    assert found is not None and found.status == "threshold" and found.after == "branches.minutes > 1.1 *"
    # "the fitted line's time" in a later question
    later = rule_multiples.stated("which branches spend more than 10 % above the fitted line's time")
    assert later is not None and later.multiple == pytest.approx(1.1)
    # a base that is no statistic, no line and no earlier value: nothing read
    assert rule_multiples.stated("when its time is more than 10 % above what the manager expects") is None


# --- a derived column with a constant ---------------------------------------------------------------

T2 = (
    'con.execute("""CREATE OR REPLACE TABLE branches AS SELECT *, minutes * 1.0 / (t1 + t2) AS per_txn, '
    'minutes * 1.0 / (t1 + t2) >= 2.9 AS slow FROM branches""")'
)
T7 = 'con.execute("UPDATE branches SET slow = minutes > 1.1 * (f.b0 + f.b1 * n_txn) FROM fit f")'


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ('n = con.execute("SELECT count_if(per_txn >= 2.9) FROM branches").fetchone()[0]', True),
        ('n = con.execute("SELECT count_if(slow) FROM branches").fetchone()[0]', False),
        ('n = con.execute("SELECT count_if(per_txn >= 3.5) FROM branches").fetchone()[0]', False),
    ],
)
def test_a_replaced_rule_written_on_a_column_computed_with_a_constant(code: str, found: bool) -> None:
    history = FlagHistory()
    for turn, cell in enumerate((T2, T7), 1):
        history.record(turn, cell, inspect_code(cell))
    restated = history.restated("How many slow branches are there now?", code, inspect_code(code))
    assert bool(restated) is found


# --- the whole file as a rule's group, and the row before as its base ---------------------------------

ERUPTION = (
    "She would call an eruption big when it lasts at least 1.5 minutes more than the eruption just before it "
    "in the file (all of the file, the quick refills included); the first eruption is not big."
)
LAG = (
    "UPDATE eruptions SET big = coalesce(eruptions.dur >= p.prev_dur + {k}, false)\n"
    "FROM (SELECT eid, lag(dur) OVER ({over}ORDER BY eid) AS prev_dur FROM eruptions) p WHERE p.eid = eruptions.eid"
)


@pytest.mark.parametrize(
    ("rule", "whole"),
    [
        (ERUPTION, True),
        ("a line fitted over all the branches (those without first-kind transactions included)", True),
        ("a line fitted over every branch, then", True),
        # rows that a relative clause restricts, or a group said beside: not the whole table
        ("the mean over all the games it played", False),
        ("the median over all the branches of its size class", False),
    ],
)
def test_the_whole_table_said_as_all_of_its_rows(rule: str, whole: bool) -> None:
    found = rule_windows.stated_group(rule, ["eid", "dur", "band", "game", "player", "size"])
    assert (found is not None and found.column is None) is whole


def test_a_distance_from_the_row_before() -> None:
    said = rule_offsets.stated(ERUPTION)
    assert said is not None and (said.distance, said.up) == (1.5, True)
    assert rule_offsets.changed(ERUPTION, f'con.execute("""{LAG.format(k="1.5", over="")}""")') is None
    found = rule_offsets.changed(ERUPTION, f'con.execute("""{LAG.format(k="2.0", over="")}""")')
    assert found is not None and found.after == ">= p.prev_dur + 1.5"
    assert rule_offsets.stated("at least 2 points above its previous reading") is not None
    # "before it" said of no row: no base read
    assert rule_offsets.stated("at least 2 points more than it had before the change") is None


def test_a_column_tested_only_for_presence_keeps_the_number_s_match() -> None:
    """ "the budgeted films lasting between 90 and 120 minutes": the words may bind `budget`, which the
    code tests only for presence; the code's test of the stated numbers on `length` still answers the
    bound (a first version of the rule above dropped that match: a false repair on a clean run)."""
    session = Session()
    assert session.ws.run_cell(
        "import json\nrng = np.random.default_rng(2)\nmv = pd.DataFrame({'film_id': np.arange(300), "
        "'budget': np.where(rng.random(300) < 0.5, np.nan, rng.uniform(1e5, 1e8, 300)), "
        "'length': rng.integers(60, 200, 300)})"
    ).ok
    code = (
        'budgeted = mv[mv["budget"].notna()].copy()\n'
        'result = {"n_budgeted": len(budgeted), "n_length_90_to_120": int(budgeted["length"].between(90, 120).sum())}\n'
        "print(json.dumps(result))"
    )
    question = (
        "Keep only the films whose budget is known, as `budgeted`. How many films is that, and count the "
        "budgeted films lasting between 90 and 120 minutes inclusive."
    )
    assert session.turn(question, code, "Columns: film_id, budget (in dollars), length (in minutes).") == []


# --- what a question says a column holds -------------------------------------------------------------

COLUMNS = {"eid", "dur", "wait", "bid", "minutes", "n_txn", "per_txn", "story_mean", "excess"}


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (
            "Load faithful.csv into DuckDB as a table `eruptions` with eid for the row number, dur for the "
            "eruption time and wait for the waiting time. How many eruptions are there?",
            {"eid": "row number", "dur": "eruption time", "wait": "waiting time"},
        ),
        (
            "Add n_txn, the branch's transactions of both kinds together, and per_txn, its minutes per "
            "transaction. Give every branch a size class.",
            {"n_txn": "branch's transactions of both kinds together", "per_txn": "minutes per transaction"},
        ),
        (
            "Add story_mean, the mean of the six story ratings v1 to v6.",
            {"story_mean": "mean of the six story ratings v1 to v6"},
        ),
        # "for" outside a sentence that loads or names columns, and a plain word before a comma: no gloss
        ("What is the mean wait for the longest eruptions, and the mean dur?", {}),
        ("Report the dur, the wait and the count.", {}),
        # a name the data has not: nothing
        ("Load it with gap for the time between eruptions.", {}),
    ],
)
def test_what_a_question_says_a_column_holds(question: str, said: dict[str, str]) -> None:
    assert renames.said_for(question, COLUMNS) == said


FAITHFUL = "faithful.csv has 300 rows. Columns: eruptions and waiting. Use DuckDB SQL."


@pytest.mark.parametrize(("fn", "caught"), [("avg", False), ("max", True)])
def test_a_column_described_by_the_question_that_named_it(fn: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import duckdb, json\nrng = np.random.default_rng(4)\n"
        "raw = pd.DataFrame({'eruptions': rng.uniform(1.5, 5.2, 300).round(2), 'waiting': rng.integers(43, 97, 300)})\n"
        "con = duckdb.connect()"
    ).ok
    load = (
        'con.execute("CREATE TABLE eruptions AS SELECT eruptions AS dur, waiting AS wait FROM raw")\n'
        'result = {"n": con.execute("SELECT count(*) FROM eruptions").fetchone()[0]}\nprint(json.dumps(result))'
    )
    first = "Load the file as a table `eruptions` with dur for the eruption time and wait for the waiting time. How many?"
    assert session.turn(first, load, FAITHFUL) == []
    code = (
        f'm = con.execute("SELECT {fn}(dur) FROM eruptions WHERE wait >= 80").fetchone()[0]\n'
        'result = {"mean_dur": m}\nprint(json.dumps(result))'
    )
    findings = session.turn(
        "What is the mean eruption time of the eruptions followed by a wait of 80 or more?", code, FAITHFUL
    )
    assert bool(findings) is caught


def test_a_count_s_words_bind_only_a_column_described_as_that_number() -> None:
    """ "groups with at least 9 birds": the counted noun names a column only through its description
    as that number (`counted_column`), never by the column's name alone."""
    from stateguard.verification.bind import RequirementBinder
    from stateguard.verification.requirements import Kind, Requirement

    code = 'kept = sites[sites["area"] > 1]'
    tables = {"sites": {"birds": ColumnInfo(kind="num", low=0, high=90), "area": ColumnInfo(kind="num")}}
    req = Requirement(
        kind=Kind.COMPARISON, text="at least 9", op=">=", value=9.0, function="count", after=["birds"]
    )
    plain = RequirementBinder(inspect_code(code), Vocabulary(tables=tables))
    assert plain.counted_column(req) is None and plain.resolve(req) == []
    described = Vocabulary(tables=tables).with_descriptions(
        "Columns: birds (the number of birds seen), area."
    )
    assert RequirementBinder(inspect_code(code), described).counted_column(req) == "birds"
