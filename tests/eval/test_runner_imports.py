"""A run that calls no model imports no model client: not in the runner, not in its pool workers.

openai (and the httpx stack under it) cost about a second of CPU per process on a quiet machine,
paid by the runner and again by every spawned pool worker of a scripted-worker, rules-manager run
(issue 33). Python's own import log (`PYTHONPROFILEIMPORTTIME`, inherited by the spawned workers)
says what each process imported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")


def _imported(log: str, module: str) -> int:
    """How many processes of the log imported `module` itself (not a submodule of it)."""
    return len(re.findall(rf"^import time:.*\|\s+{re.escape(module)}$", log, re.M))


def test_a_scripted_run_imports_no_llm_client(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    build_task(bench, dataset="penguins", seed=4, turns=12, worker_faults=2)
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval.runner",
            f"run_dir={tmp_path / 'run'}",
            f"bench.data_dir={bench}",
            "bench.verify=false",
            "workspace=dict",
            "workers=2",  # two spawned pool workers, one job each
            "progress=false",
            "bootstrap_resamples=200",
            "bench.variants=[shipped]",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stderr
    # the log covers the runner and both pool workers (each imports the job module)
    assert _imported(log, "eval.jobs") == 3
    assert _imported(log, "stateguard.llm.client") >= 1  # the client module itself is still imported
    assert _imported(log, "openai") == 0
    assert _imported(log, "httpx") == 0
