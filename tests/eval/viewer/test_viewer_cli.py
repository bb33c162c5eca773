"""The viewer's command line, configuration and output folder rules.

.venv/bin/python -m pytest -q tests/eval/viewer/test_viewer_cli.py
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from eval.viewer import ViewerConfig, ViewerError, build_view
from eval.viewer.__main__ import main
from eval.viewer.build import MARKER
from eval.viewer.config import CONFIG_FILE, load_config

ROOT = Path(__file__).resolve().parents[3]


def test_help_lists_every_option() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "eval.viewer", "--help"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert "RUN_DIR" in done.stdout and "--out" in done.stdout
    for field in dataclasses.fields(ViewerConfig):
        assert f"  {field.name} " in done.stdout


def test_config_file_matches_the_dataclass() -> None:
    values = yaml.safe_load(CONFIG_FILE.read_text(encoding="utf-8"))
    assert set(values) == {f.name for f in dataclasses.fields(ViewerConfig)}
    assert load_config() == ViewerConfig(**values)
    assert load_config(overrides=["jobs=3", "out=/tmp/x"]).jobs == 3
    with pytest.raises(ViewerError, match="key one of"):
        load_config(overrides=["bogus=1"])
    with pytest.raises(ViewerError, match="expected an integer"):
        load_config(overrides=["jobs=many"])


def test_cli_builds_and_prints_one_line(
    eval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(eval_run), "--out", str(tmp_path / "v"), "--jobs", "2"]) == 0
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and line.startswith("viewer: 2 tasks, 4 arms, 12 states") and "index.html" in line
    pages = sorted(p.name for p in (tmp_path / "v" / "tasks").iterdir())
    assert pages == ["six_turn_precision.html", "six_turn_stale.html"]
    assert {p.name for p in (tmp_path / "v" / "assets").iterdir()} == {"viewer.css", "viewer.js"}


def test_bundle_needs_no_network(eval_view_out: Path) -> None:
    for page in eval_view_out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert not re.search(r'(src|href)="(https?:)?//', html), page
        for ref in re.findall(r'(?:src|href)="([^"#][^"]*)"', html):
            assert (page.parent / ref.split("#")[0]).resolve().is_file(), (
                f"{page.name} links to missing {ref}"
            )


def test_errors_name_the_folder_and_the_fix(
    eval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "python -m eval.runner" in err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ViewerError, match="not a viewer folder"):
        build_view(eval_run, out=busy)
    assert (busy / "notes.txt").is_file()
    with pytest.raises(ViewerError, match="apt-get install -y graphviz"):
        build_view(eval_run, out=tmp_path / "v", config=ViewerConfig(dot="no-such-dot-binary"))
    with pytest.raises(ViewerError, match="would hold the run folder"):
        build_view(eval_run, out=eval_run.parent)


def test_rebuild_replaces_its_own_folder(eval_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "v"
    build_view(eval_run, out=out, config=ViewerConfig(jobs=1))
    (out / "tasks" / "stale.html").write_text("from an older build")
    build_view(eval_run, out=out, config=ViewerConfig(jobs=1))
    assert (out / MARKER).is_file() and not (out / "tasks" / "stale.html").exists()


@pytest.fixture
def eval_view_out(eval_run: Path, tmp_path: Path) -> Path:
    return build_view(eval_run, out=tmp_path / "v", config=ViewerConfig(jobs=1)).out
