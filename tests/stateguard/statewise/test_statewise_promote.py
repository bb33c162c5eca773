"""StateGuard -> StateWise: a real rollout of the scripted worker (rules manager, sandboxed workspace)
promotes what it kept valid; a new task on the same data starts from those records, checked by StateWise."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stateguard.flows import LONGDS
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.task import load_task
from stateguard.workers import FaultModel, ScriptedWorker
from statewise import RecordStore, RecoveryConfig, ScriptedPlanner, TaskSpec, run_task
from statewise.interfaces import get_interface
from statewise.interfaces.data import DataEnvironment
from statewise.promote import promote_run

DEMO = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn"
NOW = datetime(2025, 5, 1, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def promoted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The six-turn demo (turn 4 redefines revenue) run with StateGuard, then promoted."""
    base = tmp_path_factory.mktemp("promote")
    project = base / "project"
    shutil.copytree(DEMO, project)
    task = load_task(project)
    with SandboxWorkspace(project / "data", base / "run" / "scratch", base / "run" / "ckpt") as ws:
        result = rollout(
            task,
            ScriptedWorker(FaultModel(), reference=task),
            ws,
            flow=LONGDS,
            manager=RulesManager(),
            run_dir=base / "run",
        )
    assert result.stale_states, "turn 4's new revenue definition must invalidate turn 1's state"
    store = RecordStore(base / "records.sqlite")
    promotion = promote_run(base / "run", store, project="shop", base_path=task.base_path, now=NOW)
    store.close()
    answers = {t.turn_id: t.answer for t in task.turns}
    return project, base / "records.sqlite", {"promotion": promotion, "answers": answers}


def test_only_what_stateguard_kept_valid_is_promoted(promoted: tuple[Path, Path, dict]) -> None:
    _project, db, info = promoted
    store = RecordStore(db)
    location = store.retrieve("shop/sales", keys=["table.location"])
    assert [r.value for r in location] == ["data/sales.csv"]
    revenue = store.retrieve("shop/sales", keys=["definition.revenue"])
    assert (
        len(revenue) == 1 and store.lineage("definition.revenue") == revenue
    )  # one version: the current one
    definition = revenue[0].value
    assert '~sales["returned"]' in definition["code"]  # turn 4's definition, not turn 1's superseded one
    assert definition["inputs"] == ["sales"] and definition["tables"] == {"sales": "data/sales.csv"}
    assert definition["value"] == pytest.approx(info["answers"][4]["revenue"])
    assert revenue[0].authority.value == "promoted" and revenue[0].provenance.source.startswith(
        "stateguard:run:S"
    )
    store.close()


def _metric_task(task_id: str, day: int) -> TaskSpec:
    return TaskSpec(
        task_id=task_id,
        interface="data",
        scope="shop/sales",
        operation="metric_value",
        params={"dataset": "sales", "metric": "revenue", "name": task_id},
        now=NOW + timedelta(days=day),
        instruction="Write our current revenue for the sales data to a report.",
    )


def test_a_new_task_starts_from_promoted_records_and_repairs_a_moved_table(
    promoted: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    project0, db, info = promoted
    project = tmp_path / "project"
    shutil.copytree(project0, project)
    store = RecordStore(tmp_path / "records.sqlite")
    store._db.close()
    shutil.copyfile(db, tmp_path / "records.sqlite")
    store = RecordStore(tmp_path / "records.sqlite")
    interface = get_interface("data")
    expected = round(info["answers"][4]["revenue"], 2)
    # The test changes the project on the host while the workspace is open (the table moves), which a
    # bubblewrap kernel, working on its own copy of the scratch dir, would not see: process isolation.
    with SandboxWorkspace(None, project, tmp_path / "ckpt", SandboxLimits(isolation="process")) as ws:
        env = DataEnvironment(ws, project)
        # 1. Same data: the promoted premises hold; StateWise verifies the location and acts.
        first = run_task(
            _metric_task("t1", 1),
            store,
            env,
            interface,
            ScriptedPlanner(interface.spec),
            recovery=RecoveryConfig(),
        )
        assert not first.stopped and first.corrections == []
        assert json.loads((project / "reports" / "t1.json").read_text()) == {"revenue": expected}
        ids = {r.key: r.id for r in store.retrieve("shop/sales")}
        assert {ids["table.location"], ids["definition.revenue"]} <= set(first.attribution.critical)
        # 2. The table moves (the catalog says where): the plain agent fails, StateWise repairs with lineage.
        (project / "data" / "v2").mkdir()
        (project / "data" / "sales.csv").rename(project / "data" / "v2" / "sales.csv")
        (project / "meta").mkdir()
        (project / "meta" / "catalog.json").write_text(
            json.dumps({"datasets": {"sales": {"path": "data/v2/sales.csv"}}})
        )
        plain = run_task(_metric_task("t2", 2), store.copy(), env, interface, ScriptedPlanner(interface.spec))
        assert (
            plain.executed is not None
            and not plain.executed.ok
            and not (project / "reports" / "t2.json").exists()
        )
        fixed = run_task(
            _metric_task("t3", 3),
            store,
            env,
            interface,
            ScriptedPlanner(interface.spec),
            recovery=RecoveryConfig(),
        )
        assert not fixed.stopped and len(fixed.corrections) == 1
        assert json.loads((project / "reports" / "t3.json").read_text()) == {"revenue": expected}
        correction = store.corrections()[0]
        assert correction.old_record == ids["table.location"] and correction.reason.startswith("stale")
        assert [r.value for r in store.lineage("table.location")] == ["data/sales.csv", "data/v2/sales.csv"]
        # 3. A later task, plain agent, reuses the correction.
        later = run_task(_metric_task("t4", 4), store, env, interface, ScriptedPlanner(interface.spec))
        assert later.final.used["source"] == correction.new_records[0]
        assert json.loads((project / "reports" / "t4.json").read_text()) == {"revenue": expected}
    store.close()


def test_a_cleaned_table_location_is_promoted(tmp_path: Path) -> None:
    """A task that writes a cleaned table (to its scratch folder) promotes where that table lives."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "warehouse").mkdir()
    (project / "data" / "orders.csv").write_text(
        "id,status,amount\n1,complete,10\n2,cancelled,5\n3,complete,7\n"
    )
    code = (
        'orders = pd.read_csv(f"{BASE_PATH}/data/orders.csv")\nkept = orders[orders["status"] != "cancelled"]\n'
        'kept.to_csv(f"{BASE_PATH}/warehouse/orders_clean.csv", index=False)\n\n'
        'result = {"rows": int(len(kept))}\nprint(json_dumps_rounded(result))'
    )
    (project / "task.json").write_text(
        json.dumps([{"turn_id": 1, "question": "Clean the orders.", "code": code, "answer": {"rows": 2}}])
    )
    task = load_task(project)
    with SandboxWorkspace(project / "data", project / "warehouse", tmp_path / "ckpt") as ws:
        rollout(
            task,
            ScriptedWorker(FaultModel(), reference=task),
            ws,
            flow=LONGDS,
            manager=RulesManager(),
            run_dir=tmp_path / "run",
        )
    assert (project / "warehouse" / "orders_clean.csv").is_file()
    store = RecordStore(":memory:")
    promote_run(tmp_path / "run", store, project="shop", base_path=task.base_path, now=NOW)
    assert [r.value for r in store.retrieve("shop/orders", keys=["table.clean_path"])] == [
        "warehouse/orders_clean.csv"
    ]
    # Promoting a later run with the same facts writes nothing new; a changed fact is a correction, not an overwrite.
    again = promote_run(tmp_path / "run", store, project="shop", base_path=task.base_path, now=NOW)
    assert again.written == [] and "table.clean_path" in again.unchanged
    store.close()
