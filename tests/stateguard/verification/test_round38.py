"""Round 38: a column named by words that spell its name out ("latitude band" for `lat_band`, "month
number" for `month_no`), a bound said "from 85 years on" or "1000 ppm of chloride or more", a
definition framed "counts a subject as old ...", a flag whose name runs into a number ("the e4
carriers"), a group noun that opens one column's description ("the same status"), and a total the
question lists bare that the code averages.

Written from the misses of fresh53's look and the finals of fresh51 and fresh52 (seen splits).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import extract, rule_windows
from stateguard.verification.named_stats import bare_totals
from stateguard.verification.vocabulary import flag_words, names_flag, spelled_by
from tests.stateguard.verification.conftest import Session, flag_history, sandboxed


def _bounds(text: str) -> list[tuple[str, list[str], str | None, float | None]]:
    return [(r.text, r.subject, r.op, r.value) for r in extract.comparisons(text)]


def test_a_bound_from_a_number_on() -> None:
    assert _bounds("counts a subject as old from 85 years on.") == [("from 85 years on", [], ">=", 85.0)]
    assert _bounds("old from 85 onwards") == [("from 85 onwards", [], ">=", 85.0)]
    # "on" followed by more words is a place, not the end of a bound
    assert _bounds("the rows from 5 on the list") == []
    # the years' own bound is unchanged
    assert _bounds("from 2015 on") == [("from 2015 on", ["year"], ">=", 2015.0)]


def test_a_unit_of_a_quantity_then_or_more() -> None:
    assert _bounds("when it holds 1000 ppm of chloride or more") == [
        ("1000 ppm of chloride or more", ["chloride"], ">=", 1000.0)
    ]
    # a span of time "of age" is said in other units than the code may use (48 months): not read here
    assert _bounds("four years of age or later, i.e. 48 months and up")[0][0] == "48 months and up"
    assert len(_bounds("four years of age or later")) == 0


def test_a_definition_framed_with_as_and_its_term() -> None:
    sentence = "For the age analysis the study protocol counts a subject as old from 85 years on"
    m = extract.definition_frame(sentence)
    assert m is not None and m.group("term") == "old"
    assert extract.condition_part(sentence, "from 85 years on").strip() == "from 85 years on"
    # a frame that points at another version stays a whole segment
    assert extract.definition_frame("The withdrawn rule counts a subject as frail from 85 on") is None


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (["latitude", "band"], ["lat_band"]),
        (["longitude", "band"], ["lon_band"]),
        (["month", "number"], ["month_no"]),
        (["band"], []),
        (["lateral", "banding", "extra"], []),
    ],
)
def test_words_that_spell_a_name_out(said: list[str], expected: list[str]) -> None:
    assert spelled_by(said, ["lat_band", "lon_band", "month_no", "speed", "heading"]) == expected


def test_a_flag_whose_name_runs_into_a_number() -> None:
    assert names_flag(["e4", "carriers"][0], "e4") and names_flag("e 4", "e4")
    assert names_flag("posit86", "posit86")
    assert not names_flag("e45", "e4")
    assert flag_words("short_surv").startswith(r"\bshort")


def test_a_group_noun_opening_one_description_names_that_column() -> None:
    cols = ["y", "sex", "age", "e4"]
    described = {"y": ("status", "control", "patient"), "age": ("years",)}
    rule = (
        "old means an age at or above the 75th percentile of the ages of all subjects with the same status."
    )
    found = rule_windows.stated_group(rule, cols, described, ["mean_age"], None, [], ["id"])
    assert found is not None and found.column == "y"
    # a second key after "and" (a name with a number) is read with the first; where its words name two
    # columns (`e4`, `n_e4`) the phrase stays unread, never the first key alone
    two = "reach the 75th percentile age of their status and e4 carrier group yet are under 85"
    both = rule_windows.stated_group(two, cols, described, ["mean_age"], None, [], ["id"])
    assert both is not None and (both.column, both.more) == ("y", ("e4",))
    assert rule_windows.stated_group(two, [*cols, "n_e4"], described, ["mean_age"], None, [], ["id"]) is None
    # a numbered group is never named by a group noun alone
    assert rule_windows.stated_group(
        "above the mean score of the pupil's own class", ["class_no"], {"class_no": ("class",)}, [], None, [], ["class_no"]
    ) is None  # fmt: skip


SEALS = """
import json
seals = pd.DataFrame({
    "lat": [41.2, 40.5, 44.9, 43.1, 35.2, 36.8, 25.4, 29.9, 41.9, 44.0, 38.0, 30.5],
    "speed": [0.9, 0.2, 1.1, 0.4, 0.95, 0.1, 0.3, 1.4, 0.85, 0.5, 0.2, 0.7],
    "number": [3, 1, 4, 2, 6, 1, 5, 2, 3, 3, 2, 8],
    "heading": ["NE", "SW", "NE", "NW", "SE", "SE", "NE", "SW", "NW", "NE", "SW", "SE"],
})
"""


@pytest.mark.parametrize(("where", "caught"), [("WHERE lat_band = 40", False), ("", True)])
def test_a_band_value_named_by_the_words_of_its_column(tmp_path: Path, where: str, caught: bool) -> None:
    session, ws = sandboxed(tmp_path, SEALS + "con.execute('CREATE TABLE cells AS SELECT * FROM seals')")
    try:
        code = (
            "import json\n"
            "con.execute('CREATE TABLE marked AS SELECT *, CAST(floor(lat / 5) * 5 AS INTEGER) AS lat_band,"
            " speed >= 0.8 AS fast FROM cells')\n"
            "n = con.execute('SELECT count_if(fast) FROM marked').fetchone()[0]\n"
            f"pct = con.execute('SELECT 100.0 * count_if(fast) / count(*) FROM marked {where}').fetchone()[0]\n"
            "print(json.dumps({'n_fast': n, 'pct_band40_fast': round(pct, 2)}))"
        )
        question = (
            "Make a table `marked` from `cells` adding lat_band (the latitude rounded down to a multiple of 5) "
            "and a boolean fast (a speed of 0.8 or more). How many cells are fast, and what share of the cells "
            "in latitude band 40 (in percent) is fast?"
        )
        findings = session.turn(question, code)
    finally:
        ws.close()
    assert bool(findings) is caught
    if caught:
        assert "lat_band" in findings[0].reason


@pytest.mark.parametrize(("keys", "caught"), [('"lat_band"', False), ('["lat_band", "heading"]', True)])
def test_a_group_key_named_by_the_words_of_its_column(keys: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(SEALS + 'seals["lat_band"] = (seals["lat"] // 5 * 5).astype(int)\n').ok
    code = (
        f'tab = seals.groupby({keys})["speed"].mean().round(3)\n'
        'print(json.dumps({"mean_speed": {str(k): float(v) for k, v in tab.items()}}))'
    )
    findings = session.turn("What is the average speed per latitude band?", code)
    assert bool(findings) is caught


@pytest.mark.parametrize(("cut", "caught"), [(85, False), (80, True)])
def test_a_definition_from_a_number_on_binds_the_flag(cut: int, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\nsubjects = pd.DataFrame({'age': [60, 72, 81, 83, 86, 90, 79, 84, 88, 70]})"
    ).ok
    code = (
        f"subjects['old'] = subjects['age'] >= {cut}\n"
        "print(json.dumps({'n_old': int(subjects['old'].sum())}))"
    )
    question = (
        "For the age analysis the study protocol counts a subject as old from 85 years on. Add a boolean "
        "old to `subjects`. How many subjects are old?"
    )
    findings = session.turn(question, code)
    assert bool(findings) is caught


@pytest.mark.parametrize(("where", "caught"), [("WHERE e4", False), ("", True)])
def test_the_carriers_of_a_flag_named_with_a_number(tmp_path: Path, where: str, caught: bool) -> None:
    setup = (
        "subjects = pd.DataFrame({'age': [60, 72, 81, 83, 86, 90, 79, 84, 88, 70],"
        " 'e4': [True, False, True, False, False, True, True, False, False, True]})\n"
        "con.execute('CREATE TABLE marked AS SELECT * FROM subjects')"
    )
    session, ws = sandboxed(tmp_path, setup)
    try:
        code = (
            "import json\n"
            f"n, old = con.execute('SELECT count(*), count_if(age >= 80) FROM marked {where}').fetchone()\n"
            "print(json.dumps({'n_carriers': n, 'n_80_plus': old}))"
        )
        findings = session.turn(
            "Only the e4 carriers for a moment: how many are there, and how many of them are 80 or older?",
            code,
        )
    finally:
        ws.close()
    assert bool(findings) is caught


def test_a_bare_plural_the_code_averages_is_a_total() -> None:
    question = (
        "One row per band in a table `band_tab`: farms, depredations and the largest number on one farm. "
        "Which band has the most farms?"
    )
    sql = (
        "con.execute('CREATE TABLE band_tab AS SELECT band, count(*) AS farms, {f}(number) AS depredations, "
        "max(number) AS max_number FROM farms GROUP BY band')"
    )
    [(req, _, agg)] = bare_totals(question, inspect_code(sql.format(f="avg")))
    assert (req.function, agg.function, req.fields) == ("sum", "mean", ["depredations"])
    assert bare_totals(question, inspect_code(sql.format(f="sum"))) == []
    # a question that asks a mean anywhere leaves the names to the ordinary reading
    assert bare_totals(question.replace("the largest", "the mean"), inspect_code(sql.format(f="avg"))) == []


@pytest.mark.parametrize(("fn", "caught"), [("sum", False), ("mean", True)])
def test_a_bare_total_averaged_is_found_on_a_changed_answer(fn: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(SEALS + 'seals["lat_band"] = (seals["lat"] // 5 * 5).astype(int)\n').ok
    code = (
        f'tab = seals.groupby("lat_band").agg(cells=("speed", "size"), depredations=("number", "{fn}"))\n'
        'print(json.dumps({"band_tab": {str(k): [int(r.cells), float(r.depredations)] for k, r in tab.iterrows()}}))'
    )
    findings = session.turn(
        "One row per lat_band in a table `tab`: cells and depredations. Report the table.", code
    )
    assert bool(findings) is caught


def test_a_flag_on_a_column_the_same_select_renames_is_recorded_by_the_new_name() -> None:
    first = (
        'con.execute("""CREATE TABLE marked AS SELECT *, speed_raw AS speed, speed_raw >= 0.8 AS fast '
        'FROM (SELECT *, sqrt(dx * dx + dy * dy) AS speed_raw FROM grid)""")'
    )
    later = (
        'con.execute("""CREATE OR REPLACE TABLE marked AS SELECT * REPLACE '
        '(speed >= 1.2 * median(speed) OVER (PARTITION BY band) AS fast) FROM marked""")'
    )
    history = flag_history((2, first, "Add a boolean fast."), (7, later, "Rewrite fast the modeller's way."))
    assert [v.text for v in history.versions["fast"]][0] == "speed >= 0.8"
    restating = "n = con.execute('SELECT count_if(speed >= 0.8) FROM marked').fetchone()[0]"
    [found] = history.restated("How many cells are fast now?", restating, inspect_code(restating))
    assert (found.before, found.after) == ("speed >= 0.8", "fast")
    # the flag read as it stands is no restatement
    reading = "n = con.execute('SELECT count_if(fast) FROM marked').fetchone()[0]"
    assert history.restated("How many cells are fast now?", reading, inspect_code(reading)) == []


# After fresh54's first look (its two clean-run false repairs and some of its misses)


def test_a_bound_said_before_to_and_a_verb_is_read() -> None:
    assert _bounds("how many of them took 2 years or more to be diagnosed?") == [
        ("2 years or more", ["them", "took"], ">=", 2.0)
    ]
    assert _bounds("5 and up to 10") == [("up to 10", [], "<=", 10.0)]


def test_a_month_said_by_name_where_the_data_numbers_months() -> None:
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={"monthly": {"month": ColumnInfo(kind="num", low=1, high=12), "temp": ColumnInfo(kind="num")}}
    )

    def read(text: str) -> list[tuple[list[str], list[str]]]:
        return [(r.columns, r.values) for r in extract.scopes(text, vocab, None)]

    assert read("what percentage of the Julys is warm?") == [(["month"], ["7"])]
    assert read("how many months in May were warm?") == [(["month"], ["5"])]
    # a list or range of months, or a month of a year, is no value
    assert read("season ('summer' for June to August)") == []
    assert read("the floods in July 1950") == []
    # a month column that is no number from 1 to 12 takes no month's name
    other = Vocabulary(tables={"t": {"month": ColumnInfo(kind="num", low=1, high=480)}})
    assert extract.scopes("the Julys", other, None) == []


WAVES = """
import json
import duckdb
con = duckdb.connect()
visits = pd.DataFrame({"child": [1, 1, 1, 2, 2, 2, 3, 3, 3], "age": [-1, 0, 1] * 3,
                       "wheeze": [1, 1, 0, 0, 1, 1, 1, 1, 1]})
visits["age_years"] = visits["age"] + 9
con.execute("CREATE TABLE followup AS SELECT * FROM visits")
con.execute("CREATE TABLE waves AS SELECT * FROM (VALUES (7, 'Ames'), (8, 'Byrd'), (9, 'Cole'), (10, 'Diaz'), (11, 'Egan')) w(age_years, who)")
"""


@pytest.mark.parametrize(("keys", "caught"), [("w.age_years", False), ("w.age_years, f.child", True)])
def test_a_key_named_after_the_stated_one_is_that_grouping(tmp_path: Path, keys: str, caught: bool) -> None:
    session, ws = sandboxed(tmp_path, WAVES)
    try:
        code = (
            "rows = con.execute('''SELECT w.age_years, count(f.child) FROM waves w LEFT JOIN followup f\n"
            f"  ON f.age_years = w.age_years AND f.wheeze = 1 GROUP BY {keys} ORDER BY 1''').fetchall()\n"
            "print(json.dumps({'n_wheezy_by_age': {str(a): n for a, n in rows}}))"
        )
        findings = session.turn(
            "For each age on the wave sheet, the number of wheezy visits in `followup` (0 where there are none).",
            code,
        )
    finally:
        ws.close()
    assert bool(findings) is caught


def test_a_share_taken_as_the_median_of_an_indicator() -> None:
    from stateguard.verification.named_stats import indicator_medians
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(tables={"tracked": {"resp": ColumnInfo(kind="num", low=0, high=1)}})
    sql = "con.execute('CREATE TABLE age_tab AS SELECT age, {f}(resp) AS wheeze_rate FROM tracked GROUP BY age')"
    question = "Break `tracked` down by age: the share of visits with wheeze (as a fraction)."
    [(req, _, agg)] = indicator_medians(question, inspect_code(sql.format(f="median")), vocab)
    assert (req.function, agg.function, agg.column) == ("mean", "median", "resp")
    assert indicator_medians(question, inspect_code(sql.format(f="avg")), vocab) == []
    # a median the question asks for is the ordinary reading's
    asked = question.replace("the share", "the median share")
    assert indicator_medians(asked, inspect_code(sql.format(f="median")), vocab) == []


# After fresh55's first look (its one clean-run false repair and some of its misses)


def test_a_peers_second_key_in_words_of_no_column_leaves_the_group_unread() -> None:
    rule = (
        "a day is a big move when its size is at least 4 times the median size of all days in `days` of the "
        "same era whose previous day moved in the same direction."
    )
    assert (
        rule_windows.stated_group(rule, ["era", "prior", "big"], {}, ["size", "ret"], None, [], ["day_no"])
        is None
    )
    alone = (
        "a day is a big move when its size is at least 4 times the median size of the days of the same era."
    )
    found = rule_windows.stated_group(
        alone, ["era", "prior", "big"], {}, ["size", "ret"], None, [], ["day_no"]
    )
    assert found is not None and found.column == "era"


def test_one_as_a_pronoun_is_no_number() -> None:
    from stateguard.verification import unstated_cutoff

    prose = "a day after a flat day moves less than one after a fall."
    assert _bounds(prose) == [] and unstated_cutoff.stated(prose) == {}
    assert _bounds("at least one of the visits")[0][3] == 1.0
    assert _bounds("more than one standard deviation")[0][3] == 1.0


def test_a_bound_either_way_is_on_the_size() -> None:
    assert _bounds("the return is 3 % or more either way") == []
    assert _bounds("the return is 3 % or more")[0][3] == 3.0


def test_a_value_first_said_in_quotes_is_read_where_said_bare() -> None:
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={
            "days": {
                "prior": ColumnInfo(kind="text", values=["up", "down", "flat"]),
                "size": ColumnInfo(kind="num"),
                "big": ColumnInfo(kind="bool", values=["False", "True"]),
            }
        }
    )
    question = (
        "Add prior ('up', 'down' or 'flat' by the sign of the day before's return). What percentage of the days "
        "that follow a down day are big moves?"
    )
    [scope] = [r for r in extract.extract(question, vocab=vocab) if r.kind.value == "scope"]
    assert scope.values == ["down"] and extract.parses_whole(question, scope, vocab, None)


def test_a_definition_framed_by_what_a_desk_logs() -> None:
    sentence = "The trading desk logs a big move whenever the return is 3 % or more"
    assert extract.condition_part(sentence, "3 % or more").strip() == "the return is 3 % or more"


@pytest.mark.parametrize(("cut", "caught"), [(0.3, False), (0.5, True)])
def test_a_subject_word_another_column_names_is_no_part_of_the_first(
    tmp_path: Path, cut: float, caught: bool
) -> None:
    setup = (
        "appeals = pd.DataFrame({'success': [1, 0, 0, 1, 0, 1, 0, 0],"
        " 'nation_rate': [0.1, 0.2, 0.4, 0.6, 0.25, 0.45, 0.35, 0.15]})\n"
        "con.execute('CREATE TABLE docket AS SELECT * FROM appeals')"
    )
    session, ws = sandboxed(tmp_path, setup)
    try:
        code = (
            "import json\n"
            f"n = con.execute('SELECT count_if(nation_rate < {cut}) FROM docket').fetchone()[0]\n"
            "print(json.dumps({'n_rate_under_0_3': n}))"
        )
        findings = session.turn("How many appeals come from nations with a success rate under 0.3?", code)
    finally:
        ws.close()
    assert bool(findings) is caught


def test_the_same_answer_to_a_named_column_is_a_group_by_it() -> None:
    cols = ["MBSA2", "MBSA7", "MBSA8", "MBSA9", "c2", "idx", "firm", "answer"]
    rule = (
        "firm when the index is more than one standard deviation above the average index of all respondents "
        "who gave the same answer to MBSA2 and the same answer to MBSA8."
    )
    found = rule_windows.stated_group(rule, cols, {}, ["mean_idx"], None, [], ["case_no"])
    assert found is not None and (found.column, found.more) == ("MBSA2", ("MBSA8",))
    # a numbered column said whole is that one, not its family
    from stateguard.verification.vocabulary import resolve_column

    assert resolve_column(["MBSA2"], cols) == ["MBSA2"]
    assert sorted(resolve_column(["MBSA"], cols)) == ["MBSA2", "MBSA7", "MBSA8", "MBSA9"]


def test_a_word_the_column_names_in_part_is_no_other_reading() -> None:
    from stateguard.verification.bind import _outworded

    # "arrival delay" is all `arr_delay`'s, though `dep_delay` also holds "delay"
    assert not _outworded(["arrival", "delay"], "arr_delay", ["arr_delay", "dep_delay", "distance"], {})
    assert _outworded(["success", "rate"], "success", ["success", "nation_rate"], {})


def test_no_for_number_only_where_the_words_spell_a_whole_name() -> None:
    from stateguard.verification.vocabulary import resolve_column

    assert spelled_by(["month", "number"], ["month_no", "gameno"]) == ["month_no"]
    # not a general short form: "the number of visits" names no `visit_no`
    assert resolve_column(["number", "visits"], ["visit_no", "visits"]) == ["visits"]
