"""Bad input to `python -m eval.runner` (issue 31): every mistake exits 2 and names the key or file and the fix.

Run: `python -m pytest -q tests/eval/test_runner_bad_input.py`. The CLI cases start the real
entry point in a subprocess (Hydra's own refusals happen before `main`); the faults-file cases
go through `prepare`, as the runner does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from eval.benchmarks.variants import read_faults_file
from eval.config import ConfigError, validate_config
from eval.runner import prepare
from stateguard.workers import FaultError
from tests.eval.test_faults_and_detection import FAULTS, _cfg, _layout

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "eval.runner", *args, "progress=false"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["sandbox.memroy_mb=512"], "sandbox.memroy_mb"),
        (["bench=nope"], "bench/nope"),
        (["run_dir=/proc/x"], "run_dir=/proc/x: the run folder cannot be created"),
        (["+bench.foo=1"], "unknown config key(s): bench.foo"),
        (["+foo=1"], "unknown config key(s): foo"),
    ],
)
def test_cli_mistakes_exit_2_naming_the_key(args: list[str], named: str) -> None:
    done = _cli(*args)
    assert done.returncode == 2, done.stderr[-2000:]
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_an_unknown_top_level_key_is_an_error() -> None:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("eval", overrides=["+foo=1"])
    with pytest.raises(ConfigError, match=r"unknown config key\(s\): foo .*configs/eval.yaml"):
        validate_config(cfg)


@pytest.mark.parametrize(
    ("bench", "override", "named"),
    [
        ("synth", "+bench.judge=fields", "bench.judge"),  # longds's option, not synth's
        ("dev", "+bench.verify=true", "bench.verify"),
        ("longds", "+bench.data_dri=x", "bench.data_dri"),
    ],
)
def test_an_unknown_bench_key_is_an_error(bench: str, override: str, named: str) -> None:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("eval", overrides=[f"bench={bench}", override])
    with pytest.raises(ConfigError, match=rf"unknown config key\(s\): {named} .*configs/bench/{bench}.yaml"):
        validate_config(cfg)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b"{}", r"faults.json: not a faults file \(variants: Field required\)"),
        (
            json.dumps({**FAULTS, "schema_version": 2}).encode(),
            r"faults.json: not a faults file \(schema_version",
        ),
        (b'{"variants": {"caf\xe9": []}}', r"faults.json: not UTF-8 text \(byte 0xe9 at offset 18\)"),
    ],
)
def test_a_bad_faults_file_is_refused_naming_it(tmp_path: Path, content: bytes, named: str) -> None:
    path = tmp_path / "faults.json"
    path.write_bytes(content)
    with pytest.raises(FaultError, match=named):
        read_faults_file(path)


@pytest.mark.parametrize("selection", ["[clean,nope]", "[nope]"])
def test_a_variant_selection_that_matches_nothing_names_it(tmp_path: Path, selection: str) -> None:
    data = _layout(tmp_path / "ds", FAULTS)
    with pytest.raises(ConfigError, match=r"bench.variants: 'nope' matches no variant .*fault label"):
        prepare(_cfg(data, tmp_path / "run", f"bench.variants={selection}"))
    assert not (tmp_path / "run").exists()
