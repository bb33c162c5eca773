"""Round 48: from fresh64's misses (round 47's code).

- "what is their mean temperature" beside a rule's rolling mean (`avg(temp) OVER (...)` in a CTE) or a
  per-group `transform("mean")`: that per-row mean was taken as the stated statistic, so a reported
  `max(temp)` passed. A value per row is no summary an answer reports; the code's summaries are the
  candidates, unless the requirement's words stand inside the stated rule.
- a pandas answer field taking an extreme (`.max()`) where the words state a mean is re-run as stated,
  as a swapped centre was before.
- a correlated subquery whose peers share the row's key *and* meet another condition (`q.disease =
  p.disease AND abs(q.age - p.age) <= 5`) is a group statistic keyed on that key; keyed on another
  column, it is re-run on the stated one, the other condition kept.
- "the six readings before it in the file" says the rule counts rows back over the whole file: a window
  partitioned by a column the rule never names is re-run unpartitioned.
- a count per the stated group ("the sea state with the most of them") is no statistic of the rule taken
  as stated, so the rule's per-row statistic over other keys is still re-run.
- "Count the species ..., and among them, the ones that ...": a count instruction taken again of a part
  of its rows is a count "of those".
- "the readings of 36.8 °C or above": a bound said with no word but its unit binds the one column the
  task's text describes in that unit (`degrees Celsius`); a rule's distance may be said in it too ("at
  least 0.1 °C above the mean of ...").
- "their mean minutes per transaction": the column described by the whole rate (`per_txn`), not
  `minutes`.
- "Put each species in a two-month flowering period ...; call the column period": the phrase the name
  heads describes the new column, so "a row per flowering period" names `period`.

Round 49, after fresh65's first look: "faced" is a light verb of having ("how many cabinets faced a
parliament with a polarization of 30 or more"), so the clause parses whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import Aggregate
from stateguard.verification import carried, counted_rows, extract, renames, rule_offsets, rule_windows
from tests.stateguard.verification.conftest import Session, sandboxed

READINGS = """
import duckdb, json
rng = np.random.default_rng(7)
n = 120
temps = pd.DataFrame({"rid": np.arange(1, n + 1), "temp": (36.6 + rng.normal(0, 0.25, n)).round(2),
                      "watch": np.repeat(["08-11", "12-15", "16-19", "20-23"], n // 4)})
con = duckdb.connect()
con.execute("CREATE TABLE readings AS SELECT rid, temp, watch, temp >= 37.0 AS warm FROM temps")
"""
RISE = (
    "Back to the dropped rule: which readings are at least 0.1 °C above the mean of the six readings "
    "before them, yet below 37.0 °C? How many are they and what is their mean temperature?"
)
RISE_CODE = '''row = con.execute("""
WITH prior AS (SELECT rid, avg(temp) OVER (ORDER BY rid ROWS BETWEEN 6 PRECEDING AND 1 PRECEDING) AS m
               FROM readings),
     rise AS (SELECT r.* FROM readings r JOIN prior p ON p.rid = r.rid WHERE r.temp >= p.m + 0.1 AND NOT r.warm)
SELECT count(*), {stat}(temp) FROM rise
""").fetchone()
result = {{"n_rise_only": row[0], "mean_temp": row[1]}}
print(json.dumps(result))
'''
CONTEXT = (
    "readings has one row per reading: rid (its number), temp (the body temperature in degrees Celsius)."
)


@pytest.mark.parametrize(("stat", "caught"), [("avg", False), ("max", True)])
def test_a_rolling_mean_is_not_the_stated_mean(tmp_path: Path, stat: str, caught: bool) -> None:
    session, _ = sandboxed(tmp_path, READINGS)
    findings = session.turn(RISE, RISE_CODE.format(stat=stat), CONTEXT)
    assert bool(findings) is caught
    if caught:
        assert any("mean" in f.evidence.lower() for f in findings)


PLATES = """
rng = np.random.default_rng(3)
pen = pd.DataFrame({"plate": np.repeat(list("abcdefgh"), 6), "sample": list("ABCDEF") * 8})
pen["diameter"] = rng.uniform(20, 27, len(pen)).round(1)
pen["wide"] = pen["diameter"] >= 25
"""
FIT = (
    "Which zones are at least 0.5 mm wider than their plate mean leads one to expect, but under 25 mm? "
    "How many are there, and what is their mean diameter?"
)
FIT_CODE = """plate_mean = pen.groupby("plate")["diameter"].transform("mean")
fit_only = pen[(pen["diameter"] - plate_mean >= 0.5) & ~pen["wide"]]
result = {{"n_fit_only": len(fit_only), "mean_diameter": fit_only["diameter"].{stat}()}}
"""
PEN = "pen has one row per zone: plate, sample, diameter (the zone's diameter in mm)."


@pytest.mark.parametrize(("stat", "caught"), [("mean", False), ("max", True), ("median", True)])
def test_a_per_group_transform_is_not_the_stated_mean(stat: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(PLATES).ok
    assert bool(session.turn(FIT, FIT_CODE.format(stat=stat), PEN)) is caught


def test_a_value_per_row() -> None:
    assert Aggregate(function="mean", column="d", window=True).per_row
    assert Aggregate(function="mean", column="d", text="f.groupby('g')['d'].transform('mean')").per_row
    assert Aggregate(function="mean", column="d", text="s.rolling(6).mean()", receiver="s.rolling(6)").per_row
    assert not Aggregate(function="mean", column="d", text="f['d'].mean()", receiver="f['d']").per_row


BAND = "UPDATE patients SET late = patients.wait > (\n    SELECT median(q.wait) FROM patients q\n    WHERE {cond})"


@pytest.mark.parametrize(
    ("cond", "keys", "after"),
    [
        (
            "q.mtx = patients.mtx AND abs(q.age - patients.age) <= 5",
            ["mtx"],
            "q.disease = patients.disease AND abs(q.age - patients.age) <= 5",
        ),
        ("q.mtx = patients.mtx", ["mtx"], "q.disease = patients.disease"),
        ("abs(q.age - patients.age) <= 5 AND q.mtx = patients.mtx", ["mtx"], None),
    ],
)
def test_a_correlated_statistic_narrowed_by_another_condition(
    cond: str, keys: list[str], after: str | None
) -> None:
    found = rule_windows._correlated(BAND.format(cond=cond), "disease")
    assert found is not None and found.keys == keys and found.before == cond
    assert found.after == (after or "q.disease = patients.disease AND abs(q.age - patients.age) <= 5")


@pytest.mark.parametrize(
    "cond",
    [
        "q.mtx = patients.mtx OR abs(q.age - patients.age) <= 5",  # an OR: no conjunction of keys
        "q.mtx = patients.disease",  # two different columns matched
        "abs(q.age - patients.age) <= 5",  # no key at all
    ],
)
def test_conditions_that_key_no_group(cond: str) -> None:
    assert rule_windows._correlated(BAND.format(cond=cond), "disease") is None


PATIENTS = """
import duckdb, json
rng = np.random.default_rng(5)
n = 137
raw = pd.DataFrame({"age": rng.integers(7, 53, n), "wait": rng.integers(24, 2000, n),
                    "disease": rng.choice(["ALL", "AML low", "AML high"], n), "mtx": rng.choice([0, 1], n)})
con = duckdb.connect()
con.execute("CREATE TABLE patients AS SELECT *, wait >= 180 AS late FROM raw")
"""
PEERS = (
    "A haematologist calls a transplant late when the patient waited longer than the median wait of the "
    "patients with the same disease whose age is within five years of theirs, the patient included."
)
UPDATE = '''con.execute("""
UPDATE patients SET late = patients.wait > (
    SELECT median(q.wait) FROM patients q
    WHERE q.{key} = patients.{key} AND abs(q.age - patients.age) <= 5)
""")
result = {{"n_late": con.execute("SELECT count_if(late) FROM patients").fetchone()[0]}}
print(json.dumps(result))
'''


@pytest.mark.parametrize(("key", "caught"), [("disease", False), ("mtx", True)])
def test_peers_keyed_on_another_column(tmp_path: Path, key: str, caught: bool) -> None:
    session, _ = sandboxed(tmp_path, PATIENTS)
    context = "patients: age (years), wait (days from diagnosis to transplant), disease, mtx (0 or 1)."
    first = 'result = {"n": con.execute("SELECT count(*) FROM patients").fetchone()[0]}\nprint(json.dumps(result))'
    assert session.turn("How many patients are there?", first, context) == []  # the rule comes at turn 2
    question = "Update late in `patients` her way. How many are late now?"
    findings = session.turn(question, UPDATE.format(key=key), context, own_context=PEERS)
    assert bool(findings) is caught


@pytest.mark.parametrize(
    ("rule", "whole"),
    [
        ("at least 0.1 °C above the mean of the six readings before it in the file (the hour before)", True),
        ("at least 2 points above the mean of the three games before it in the series", True),
        # the file named without rows counted back in it: no statement about the group
        ("above the mean of the six readings before it, as listed in the file", False),
        ("above the mean of the six readings of its watch before it", False),
    ],
)
def test_rows_counted_back_in_the_whole_file(rule: str, whole: bool) -> None:
    found = rule_windows.stated_group(rule, ["rid", "temp", "watch", "game"])
    assert (found is not None and found.column is None) is whole


@pytest.mark.parametrize(
    ("question", "pair"),
    [
        (
            "Count the species scored 3 or more for insect pollination, and among them, the ones that flower "
            "for at least 4 months.",
            (
                "Count the species scored 3 or more for insect pollination",
                "among them, the ones that flower for at least 4 months",
            ),
        ),
        # no reference back, or no instruction to count: no pair
        ("Count the species scored 3 or more, and the ones that flower for at least 4 months.", None),
        ("List the species scored 3 or more, and among them, the ones that flower for 4 months.", None),
    ],
)
def test_a_count_instruction_taken_again_of_a_part(question: str, pair: tuple[str, str] | None) -> None:
    assert carried.count_pair(question) == pair
    assert counted_rows.count_of_those(question) is (pair is not None)


SPECIES = """
rng = np.random.default_rng(11)
plants = pd.DataFrame({"sp": [f"s{i}" for i in range(136)], "insects": rng.integers(0, 5, 136),
                       "durflow": rng.integers(1, 9, 136)})
"""
PART = (
    "Count the species scored 3 or more for insect pollination, and among them, the ones that flower for at "
    "least 4 months."
)
PART_CODE = """insect = plants[plants["insects"] >= 3]
result = {{"n_insects_3_plus": int(len(insect)), "n_of_those_4_plus": int(({frame}["durflow"] >= 4).sum())}}
"""
SPECIES_CONTEXT = (
    "plants: sp, insects (insect pollination, 0 to 4), durflow (how long it flowers, in months)."
)


@pytest.mark.parametrize(("frame", "caught"), [("insect", False), ("plants", True)])
def test_the_part_counted_from_the_whole_frame(frame: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(SPECIES).ok
    assert bool(session.turn(PART, PART_CODE.format(frame=frame), SPECIES_CONTEXT)) is caught


@pytest.mark.parametrize(
    ("clause", "text"),
    [
        ("Consider the readings of 36.8 °C or above.", "36.8 °C or above"),
        ("Consider the readings of 36.8°C or above.", "36.8°C or above"),
        ("Take the days of 90 °F or more.", "90 °F or more"),
    ],
)
def test_a_symbol_unit_before_a_postfix_comparator(clause: str, text: str) -> None:
    (req,) = extract.comparisons(clause)
    assert (req.text, req.subject, req.op) == (text, [], ">=")


BEAVER = (
    "readings has one row per reading: rid, temp (the body temperature in degrees Celsius), activ (0 or 1)."
)
HOT = "Consider the readings of 36.8 °C or above. How many are there, and how many of those were outside?"
HOT_CODE = '''n, k = con.execute("""SELECT count(*), count_if(activ = 1) FROM readings {where}""").fetchone()
result = {{"n_hot": n, "n_of_those_outside": k}}
print(json.dumps(result))
'''


@pytest.mark.parametrize(
    ("where", "caught"), [("WHERE temp >= 36.8", False), ("", True), ("WHERE temp >= 36.9", True)]
)
def test_a_bound_said_only_with_its_unit(tmp_path: Path, where: str, caught: bool) -> None:
    cell = READINGS + 'con.execute("ALTER TABLE readings ADD COLUMN activ INTEGER DEFAULT 0")'
    session, _ = sandboxed(tmp_path, cell)
    assert bool(session.turn(HOT, HOT_CODE.format(where=where), BEAVER)) is caught


def test_a_unit_binds_only_a_column_described_in_it(tmp_path: Path) -> None:
    """No column's description spells Celsius: the bound binds nothing, and a dropped cut passes."""
    session, _ = sandboxed(tmp_path, READINGS)
    plain = "readings has one row per reading: rid, temp (the body temperature)."
    code = HOT_CODE.replace("count_if(activ = 1)", "count_if(warm)").format(where="")
    assert session.turn(HOT.replace("were outside", "were warm"), code, plain) == []


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (
            "Put each species in a two-month flowering period by the month its flowering begins: 'Jan-Feb', "
            "'Mar-Apr' or 'May-Jun'; call the column period. How many are there?",
            {"period": "two-month flowering period"},
        ),
        ("Band the ages by decade and call the column band.", {}),  # the name heads no phrase before
        ("Add the number of visits per year, and name it rate.", {}),
    ],
)
def test_a_phrase_the_question_then_names_a_column_by(question: str, said: dict[str, str]) -> None:
    assert renames.said_for(question, {"period", "band", "rate", "begflow"}) == said


def test_peers_held_by_a_distance_on_the_stated_column_are_left_alone() -> None:
    """`abs(q.age - p.age) <= 5` already ties the peers to the row by age: a group read as age is not
    re-run as an equality on it."""
    assert (
        rule_windows._correlated(
            BAND.format(cond="q.disease = patients.disease AND abs(q.age - patients.age) <= 5"), "age"
        )
        is None
    )


@pytest.mark.parametrize(
    ("rule", "column"),
    [
        (
            "the median wait of the patients with their disease within five years of their age, but less "
            "than 180 days",
            "disease",
        ),
        ("the median wait of the patients with their disease, but less than 180 days", "disease"),
        # a distance on the row's value states no group
        ("the mean of the readings within two hours of their time", None),
    ],
)
def test_peers_with_the_row_s_own_value(rule: str, column: str | None) -> None:
    found = rule_windows.stated_group(rule, ["disease", "age", "mtx", "band", "time"])
    assert (found.column if found else None) == column


BRANCHES = """
import duckdb, json
rng = np.random.default_rng(2)
b = pd.DataFrame({"minutes": rng.uniform(500, 3000, 80).round(1), "n_txn": rng.integers(200, 900, 80)})
b["per_txn"] = b["minutes"] / b["n_txn"]
con = duckdb.connect()
con.execute("CREATE TABLE branches AS SELECT * FROM b")
"""
RATE = "What are the mean minutes per transaction of the branches, and how many are there?"
RATE_CODE = """m, n = con.execute("SELECT {stat}(per_txn), count(*) FROM branches").fetchone()
result = {{"mean_per_txn": m, "n": n}}
print(json.dumps(result))
"""
RATE_CONTEXT = (
    "branches: minutes (the minutes spent on the transactions), n_txn, per_txn (minutes per transaction)."
)


@pytest.mark.parametrize(("stat", "caught"), [("avg", False), ("max", True)])
def test_a_statistic_of_a_rate_a_column_is_described_by(tmp_path: Path, stat: str, caught: bool) -> None:
    session, _ = sandboxed(tmp_path, BRANCHES)
    assert bool(session.turn(RATE, RATE_CODE.format(stat=stat), RATE_CONTEXT)) is caught


def test_a_rate_keeps_its_words_for_the_binder() -> None:
    (req,) = extract.aggregations("what are their mean minutes per transaction", [])
    assert (req.function, req.subject, req.after) == ("mean", ["minutes"], ["per", "transaction"])
    (plain,) = extract.aggregations("what are their mean minutes", [])
    assert plain.after == []


@pytest.mark.parametrize(
    ("rule", "distance"),
    [
        ("a reading is warm when it is at least 0.1 °C above the mean of the six readings before it", 0.1),
        ("at least 2 °F below their own mean", 2.0),
        ("at least 0.1 degrees above the mean of the six readings before it", 0.1),
    ],
)
def test_a_distance_in_a_symbol_unit(rule: str, distance: float) -> None:
    said = rule_offsets.stated(rule)
    assert said is not None and said.distance == distance


SEA = """
import json
rng = np.random.default_rng(4)
sea = pd.DataFrame({"state": rng.choice([2, 3, 4, 5], 400), "side": rng.choice(["east", "west"], 400)})
sea["surge"] = (0.03 * sea["state"] + 0.08 * (sea["side"] == "east") + rng.gamma(2.0, 0.03, 400)).round(3)
sea["alert"] = sea["surge"] >= 0.3
"""
P90 = (
    "Which readings have a surge at or above the 90th percentile of their sea state, yet below 0.3 m? How many "
    "are there, and which sea state has the most of them?"
)
P90_CODE = """p90 = sea.groupby({keys})["surge"].transform("quantile", 0.9).rename("p90")
only = sea[(sea["surge"] >= p90) & ~sea["alert"]]
per_state = only.groupby("state").size()
result = {{"n_only": len(only), "top_state": int(per_state.idxmax())}}
print(json.dumps(result))
"""
SEA_CONTEXT = "sea: state (the sea state, a WMO code), side (east or west), surge (in metres)."


@pytest.mark.parametrize(("keys", "caught"), [('"state"', False), ('["state", "side"]', True)])
def test_a_count_per_stated_group_is_not_the_rule_s_statistic(keys: str, caught: bool) -> None:
    """`only.groupby("state").size()` ("the sea state with the most of them") groups by the stated key
    but takes no statistic of the surge: the rule's percentile over state and side is still re-run."""
    session = Session()
    assert session.ws.run_cell(SEA).ok
    assert bool(session.turn(P90, P90_CODE.format(keys=keys), SEA_CONTEXT)) is caught


# After fresh65's first look (round 49)


@pytest.mark.parametrize("verb", ["faced", "face", "facing"])
def test_light_verbs_of_having(verb: str) -> None:
    assert verb in LEXICON.function_words


CABINETS = """
import duckdb, json
rng = np.random.default_rng(9)
raw = pd.DataFrame({"polar": rng.integers(0, 44, 314), "fract": rng.integers(300, 900, 314)})
con = duckdb.connect()
con.execute("CREATE TABLE cabinets AS SELECT * FROM raw")
"""
FACED = "Besides that, how many cabinets faced a parliament with a polarization of 30 or more?"
FACED_CODE = """n = con.execute("SELECT count(*) FROM cabinets WHERE polar {op} 30").fetchone()[0]
result = {{"n_polar_30_plus": n}}
print(json.dumps(result))
"""
CABINET_CONTEXT = "cabinets: polar (the polarization of the parliament), fract (its fractionalization)."


@pytest.mark.parametrize(("op", "caught"), [(">=", False), ("<=", True)])
def test_a_bound_after_a_light_verb_of_having(tmp_path: Path, op: str, caught: bool) -> None:
    session, _ = sandboxed(tmp_path, CABINETS)
    assert bool(session.turn(FACED, FACED_CODE.format(op=op), CABINET_CONTEXT)) is caught
