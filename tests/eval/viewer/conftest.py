"""Shared fixtures for the viewer tests: a small real evaluation run, its built viewer, a browser.

The run is two six-turn demo tasks in both arms (see viewer_support; ~3 s). The browser is
Debian's headless Chromium driven by Selenium; when it is missing the browser tests FAIL with
the install commands rather than skip, because the DOM checks are the point of these tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from viewer_support import make_eval_run, make_handmade_arm

from eval.results import ArmResult, write_result
from eval.viewer import BuildReport, ViewerConfig, build_view
from eval.viewer.browser import BrowserMissing, headless_chromium


@pytest.fixture(scope="session")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_eval_run(tmp_path_factory.mktemp("viewer_eval") / "run")


@pytest.fixture(scope="session")
def eval_view(eval_run: Path, tmp_path_factory: pytest.TempPathFactory) -> BuildReport:
    return build_view(
        eval_run, out=tmp_path_factory.mktemp("viewer_eval_out") / "view", config=ViewerConfig(jobs=1)
    )


@pytest.fixture(scope="session")
def handmade_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A one-task run whose stateguard arm holds a rejected action and a rolled-back state."""
    root = tmp_path_factory.mktemp("viewer_handmade") / "run"
    arm_dir = root / "tasks" / "handmade" / "stateguard"
    facts = make_handmade_arm(arm_dir)
    write_result(
        root,
        ArmResult(
            bench="demo",
            task_id="handmade",
            arm="stateguard",
            correct={1: True, 2: False},
            repairs=3,
            committed_states=1,
            run_dir=str(arm_dir),
        ),
    )
    return root, facts


@pytest.fixture(scope="session")
def driver() -> Iterator[Any]:
    try:
        with headless_chromium(width=1400, height=1000) as browser:
            yield browser
    except BrowserMissing as exc:
        pytest.fail(f"the viewer's browser tests need headless Chromium: {exc}", pytrace=False)
