"""Fault suite, bad input: every case stops before the first task with exit status 2 and one
message naming the file or key and the fix (never an arm at 0%, a traceback, or a hang)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval import demo
from eval.runner import run_cli
from stateguard.task import load_task

ROOT = Path(__file__).resolve().parents[2]
TURN = {
    "turn_id": 1,
    "context": "",
    "question": "How many rows?",
    "code": "n = 3\nprint(json.dumps({'n': n}))",
    "answer": {"n": 3},
}


def _longds(root: Path, turns: object, *, data: bool = True, raw: bytes | None = None) -> Path:
    """A dataset root in LongDS's published layout with one task."""
    task = root / "task" / "longds" / "education" / "bi" / "task1"
    task.mkdir(parents=True)
    (task / "task.json").write_bytes(raw if raw is not None else json.dumps(turns).encode())
    if data:
        folder = root / "data" / "longds" / "education" / "bi" / "task1" / "data"
        folder.mkdir(parents=True)
        (folder / "x.csv").write_text("a\n1\n")
    return task / "task.json"


def _cfg(config: str, **over: object) -> DictConfig:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose(config, overrides=[f"{k}={v}" for k, v in over.items()])


def _runner(tmp_path: Path, **over: object) -> DictConfig:
    base = {
        "run_dir": tmp_path / "run",
        "bench": "longds",
        "bench.data_dir": tmp_path / "ds",
        "bench.judge": "fields",
        "workspace": "dict",
        "workers": 1,
        "progress": "false",
    }
    return _cfg("eval", **{**base, **over})


def _fails(capsys: pytest.CaptureFixture[str], cfg: DictConfig, *patterns: str) -> str:
    assert run_cli(cfg) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    for p in patterns:
        assert p in err, (p, err)
    return err


@pytest.mark.parametrize(
    ("over", "names"),
    [
        ({"manager": "nope"}, ["manager='nope'", "'rules'"]),
        ({"workspace": "nope"}, ["workspace='nope'", "'sandbox' or 'dict'"]),
        ({"worker": "nope"}, ["worker='nope'", "'scripted' or 'llm'"]),
        ({"limit": -1}, ["limit=-1", "greater than or equal to 1"]),
        ({"workers": "abc"}, ["workers='abc'", "valid integer"]),
        ({"arms": "[baseline,nope]"}, ["arms[1]='nope'"]),
    ],
)
def test_config_values_that_cannot_work_stop_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], over: dict[str, object], names: list[str]
) -> None:
    _longds(tmp_path / "ds", [TURN])
    _fails(capsys, _runner(tmp_path, **over), *names, "make eval ARGS=")
    assert not (tmp_path / "run").exists()  # nothing started


@pytest.mark.parametrize(
    ("turn", "field", "what"),
    [
        ({k: v for k, v in TURN.items() if k != "answer"}, "answer", "missing"),
        ({k: v for k, v in TURN.items() if k != "code"}, "code", "missing or not a string"),
        ({**TURN, "answer": [3]}, "answer", "is list"),
        ({**TURN, "answer": "3"}, "answer", "is str"),
    ],
)
def test_a_turn_without_its_reference_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], turn: dict[str, object], field: str, what: str
) -> None:
    path = _longds(tmp_path / "ds", [TURN, {**turn, "turn_id": 2}])
    _fails(capsys, _runner(tmp_path), f"{path}: turn #2 (turn_id 2), field '{field}': {what}")


def test_scripted_worker_needs_reference_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _longds(tmp_path / "ds", [TURN, {**TURN, "turn_id": 2, "code": "  "}])
    _fails(capsys, _runner(tmp_path), "turn(s) [2] have no reference `code`", "worker=llm")


def test_empty_turn_list_non_utf8_and_huge_turns_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _longds(tmp_path / "a", [])
    _fails(
        capsys, _runner(tmp_path, **{"bench.data_dir": tmp_path / "a"}), f"{path}: the list of turns is empty"
    )
    path = _longds(tmp_path / "b", None, raw=b'[{"turn_id": 1, "question": "caf\xe9"}]')
    _fails(
        capsys,
        _runner(tmp_path, **{"bench.data_dir": tmp_path / "b"}),
        f"{path}: not UTF-8 text (byte 0xe9 at offset 32); save the file as UTF-8",
    )
    huge = {**TURN, "question": "x" * 20_000_000}  # 20 MB: refused as it is read, not fed to parsers
    path = _longds(tmp_path / "c", [TURN, {**huge, "turn_id": 2}])
    _fails(
        capsys,
        _runner(tmp_path, **{"bench.data_dir": tmp_path / "c"}),
        f"{path}: turn #2 (turn_id 2): 20,000,",
        "a turn is at most 1,000,000",
    )
    big = tmp_path / "d"
    big.mkdir()
    (big / "task.json").write_bytes(b"[" + b" " * (65 * 1024 * 1024) + b"]")
    with pytest.raises(ValueError, match=r"task\.json: 68,157,442 bytes; a task\.json is at most"):
        load_task(big)


def test_missing_data_folder_stops_the_run_and_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _longds(tmp_path / "ds", [TURN], data=False)
    _fails(capsys, _runner(tmp_path), "data/longds/education/bi/task1/data", "make data BENCH=longds")
    task = tmp_path / "six"
    task.mkdir()
    (task / "task.json").write_bytes((ROOT / "eval/benchmarks/demo/six_turn/task.json").read_bytes())
    assert demo.run_cli(_cfg("demo", run_dir=tmp_path / "demo", task_dir=task)) == 2
    assert f"{task}/data: the task's data folder is missing" in capsys.readouterr().err
    assert demo.run_cli(_cfg("demo", run_dir=tmp_path / "demo", manager="nope")) == 2
    assert "manager='nope': use one of rules" in capsys.readouterr().err


def test_the_command_line_exits_2_naming_the_key(tmp_path: Path) -> None:
    """Through Hydra and `python -m`, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "eval.runner", f"run_dir={tmp_path / 'run'}", "workers=abc"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "workers='abc': Input should be a valid integer" in done.stderr and "Traceback" not in done.stderr


def test_missing_endpoint_variables_stop_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("STATEGUARD_")]:
        monkeypatch.delenv(name)
    _longds(tmp_path / "ds", [TURN])
    _fails(capsys, _runner(tmp_path, manager="llm"), "STATEGUARD_MANAGER_BASE_URL")
    _fails(capsys, _runner(tmp_path, worker="llm", arms="[baseline]"), "STATEGUARD_WORKER_BASE_URL")
    assert not (tmp_path / "run").exists()
