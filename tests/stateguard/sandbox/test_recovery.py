"""After the kernel dies: the workspace is rebuilt by replaying its history, or it says it is degraded.

Never silently wrong: a DuckDB connection (not picklable, so in no checkpoint) and the tables
built in it come back through replay; when replay is off or diverges, the last checkpoint is
restored and `degraded_reasons` names the cause and what was lost, which a rollout copies into
its result. The last tests kill the kernel in the middle of real rollouts.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from stateguard.flows import LONGDS
from stateguard.observation import WorkerStep
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.task import Task, Turn
from stateguard.workers import FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

LIMITS = SandboxLimits(cpu_seconds_per_cell=20, wall_seconds_per_cell=30, memory_mb=1536, grace_seconds=3)
CON = (
    "import duckdb\ncon = duckdb.connect()\n"
    "con.execute(\"create table sales as select * from read_csv('{data}')\")\n"
    "con.execute('create table big as select region, sum(amount) as total from sales group by region')"
)


def _kill(ws: SandboxWorkspace) -> None:
    """An outside SIGKILL of the kernel process, as the OOM killer would send it."""
    process = ws.kernel.proc
    os.kill(ws.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\nnorth,5\n")
    return folder


def _workspace(data: Path, root: Path, **limits: Any) -> SandboxWorkspace:
    return SandboxWorkspace(data, root / "scratch", root / "checkpoints", LIMITS.model_copy(update=limits))


def test_replay_rebuilds_a_live_connection_and_its_tables(data: Path, tmp_path: Path) -> None:
    ws = _workspace(data, tmp_path)
    try:
        assert ws.run_cell(CON.format(data=data / "sales.csv")).ok
        assert ws.run_cell("con.execute(\"insert into sales values ('east', 7)\")").ok
        ws.snapshot("c1")  # `con` cannot be pickled: this checkpoint alone would lose it
        assert ws.run_cell(
            "n = con.execute('select count(*) from sales').fetchone()[0]\nopen('log.txt', 'a').write('x')"
        ).ok
        _kill(ws)
        r = ws.run_cell(
            "n, con.execute('select total from big order by region').fetchall(), open('log.txt').read()"
        )
        assert r.ok and r.value == "(4, [(15,), (20,)], 'x')", r  # the append ran once, not twice
        assert any(
            "rebuilt by replaying 3 cell(s)" in n and "values match checkpoint 'c1'" in n for n in r.notes
        ), r.notes
        assert ws.degraded_reasons == [] and len(ws.restarts) == 1
    finally:
        ws.close()


def test_death_during_a_cell_fails_that_cell_only(data: Path, tmp_path: Path) -> None:
    ws = _workspace(data, tmp_path)
    try:
        assert ws.run_cell(CON.format(data=data / "sales.csv")).ok
        r = ws.run_cell("con.execute('drop table sales')\nimport os\nos._exit(1)")
        assert (
            not r.ok
            and "SandboxDied" in (r.error or "")
            and any("rebuilt by replaying" in n for n in r.notes)
        )
        # The dying cell's effects are gone with it: the table it dropped is back.
        assert ws.run_cell("con.execute('select count(*) from sales').fetchone()[0]").value == "3"
        assert ws.degraded_reasons == []
    finally:
        ws.close()


def test_replay_through_deletes_and_restores_of_dropped_checkpoints(data: Path, tmp_path: Path) -> None:
    ws = _workspace(data, tmp_path)
    try:
        assert ws.run_cell(CON.format(data=data / "sales.csv") + "\na = 1\nb = [1, 2]").ok
        ws.snapshot("txn-1")  # the harness's transaction checkpoints: taken, restored, dropped
        assert ws.run_cell("a = 2\nb.append(3)").ok
        ws.delete_variables(["b"])
        ws.restore("txn-1")
        ws.drop_checkpoint("txn-1")
        assert ws.run_cell("a, b").value == "(1, [1, 2])"
        _kill(ws)
        r = ws.run_cell("a, b, con.execute('select count(*) from big').fetchone()[0]")
        assert r.ok and r.value == "(1, [1, 2], 2)", r
        assert ws.degraded_reasons == []
    finally:
        ws.close()


def test_diverging_replay_falls_back_and_says_what_was_lost(data: Path, tmp_path: Path) -> None:
    ws = _workspace(data, tmp_path)
    try:
        assert ws.run_cell(CON.format(data=data / "sales.csv")).ok
        assert ws.run_cell("import random\nprint(random.random())").ok  # unseeded: replays differently
        ws.snapshot("c1")
        _kill(ws)
        r = ws.run_cell("con")
        assert not r.ok and "SandboxDied" in (r.error or "")
        assert any("cell 2 ended differently on replay" in n for n in r.notes), r.notes
        (reason,) = ws.degraded_reasons
        assert "killed by signal SIGKILL" in reason and "lost variables: con" in reason
        assert ws.run_cell("1 + 1").value == "2"  # and it keeps working
    finally:
        ws.close()


def test_process_isolation_replays_on_a_reset_scratch(data: Path, tmp_path: Path) -> None:
    ws = _workspace(data, tmp_path, isolation="process")
    try:
        assert ws.run_cell("open('log.txt', 'a').write('x')\nk = 5").ok
        _kill(ws)
        r = ws.run_cell("k, open('log.txt').read()")
        assert r.ok and r.value == "(5, 'x')", r
        assert not (tmp_path / "scratch.before-replay").exists()
    finally:
        ws.close()


def test_dict_workspace_is_never_degraded() -> None:
    assert DictWorkspace().degraded_reasons == []


# --- real rollouts ------------------------------------------------------------------------------
def _duckdb_task(folder: Path) -> Task:
    """Four turns over one DuckDB connection kept in the workspace, like the synthesized benchmark."""
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\nnorth,5\neast,7\n")
    codes = [
        "import duckdb\ncon = duckdb.connect()\n"
        'con.execute("create table sales as select * from read_csv(\'" + BASE_PATH + "/data/sales.csv\')")\n\n'
        "n = con.execute('select count(*) from sales').fetchone()[0]\nresult = {'n_rows': int(n)}\nprint(json.dumps(result))",
        "con.execute('create table by_region as select region, sum(amount) as total from sales group by region')\n\n"
        "top = con.execute('select region from by_region order by total desc limit 1').fetchone()[0]\n"
        "result = {'top_region': top}\nprint(json.dumps(result))",
        "north = con.execute(\"select total from by_region where region = 'north'\").fetchone()[0]\n\n"
        "result = {'north_total': int(north)}\nprint(json.dumps(result))",
        "k = con.execute('select count(*) from by_region').fetchone()[0]\n\nresult = {'regions': int(k)}\nprint(json.dumps(result))",
    ]
    answers = [{"n_rows": 4}, {"top_region": "south"}, {"north_total": 15}, {"regions": 3}]
    turns = [
        Turn(turn_id=i + 1, question=f"q{i + 1}", code=c, answer=a)
        for i, (c, a) in enumerate(zip(codes, answers, strict=True))
    ]
    (folder / "task.json").write_text(json.dumps([t.model_dump() for t in turns]))
    return Task(task_id="duck", turns=turns, base_path=str(folder))


class KillingWorker(ScriptedWorker):
    """The scripted worker, with the kernel SIGKILLed from outside after `kill_after` steps."""

    def __init__(self, kill_after: int, reference: Task):
        super().__init__(FaultModel(), reference=reference)
        self.kill_after = kill_after
        self.steps = 0

    def step(self, index: int) -> WorkerStep | None:
        if self.steps == self.kill_after:
            assert isinstance(self.ws, SandboxWorkspace)
            _kill(self.ws)
        self.steps += 1
        return super().step(index)


@pytest.fixture(scope="module")
def duck(tmp_path_factory: pytest.TempPathFactory) -> tuple[Task, Path]:
    """The task, checked once: without a kill both arms of the comparison would give these answers."""
    root = tmp_path_factory.mktemp("duck")
    task = _duckdb_task(root / "task")
    ws = SandboxWorkspace(
        root / "task" / "data", root / "clean" / "scratch", root / "clean" / "checkpoints", LIMITS
    )
    try:
        clean = rollout(
            task,
            ScriptedWorker(FaultModel(), reference=task),
            ws,
            flow=LONGDS,
            manager=RulesManager(),
            run_dir=root / "clean" / "run",
        )
    finally:
        ws.close()
    assert clean.answers == {t.turn_id: t.answer for t in task.turns} and not clean.degraded
    assert clean.workspace_isolation == "bwrap" and clean.degraded_reasons == []
    return task, root


@pytest.mark.parametrize("replay", [True, False])
def test_killed_kernel_mid_rollout_is_correct_or_degraded(duck: tuple[Task, Path], replay: bool) -> None:
    task, root = duck
    expected = {t.turn_id: t.answer for t in task.turns}
    arm = root / f"killed-replay-{replay}"
    ws = _workspace(root / "task" / "data", arm, replay=replay)
    try:
        killed = rollout(
            task,
            KillingWorker(kill_after=4, reference=task),
            ws,
            flow=LONGDS,
            manager=RulesManager(),
            run_dir=arm / "run",
        )
    finally:
        ws.close()
    assert len(ws.restarts) == 1
    saved = json.loads((arm / "run" / "result.json").read_text())
    assert saved["degraded"] == killed.degraded and saved["degraded_reasons"] == killed.degraded_reasons
    if replay:  # rebuilt: the same answers as without the kill
        assert killed.answers == expected and not killed.degraded and killed.degraded_reasons == []
    else:  # the connection is lost: whatever the answers, the result says so
        assert killed.degraded and any(
            "killed by signal SIGKILL" in r and "con" in r for r in killed.degraded_reasons
        )
        assert killed.answers != expected  # (and it did change them: this is what used to pass silently)
