"""`make test` / `make eval` find missing system packages themselves (scripts/system_deps.sh).

The packages are installed on the test machines, so the missing case is made with a PATH that
hides them (only the few tools the script itself uses are linked in), and the non-root case by
running the script as an unprivileged user; nothing is installed or removed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "system_deps.sh"


def _bare_path(tmp_path: Path, *extra: str) -> str:
    """A PATH with the shell tools the script needs and, of the checked ones, only `extra`."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in ("bash", "id", "env", "apt-get", *extra):
        found = shutil.which(tool)
        if found and not (folder / tool).exists():
            (folder / tool).symlink_to(found)
    return str(folder)


def _run(
    target: str, path: str, *args: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": "/tmp"}
    return subprocess.run(
        [*prefix, shutil.which("bash") or "bash", str(SCRIPT), target, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_nothing_to_do_when_everything_is_installed() -> None:
    if not all(shutil.which(t) for t in ("bwrap", "dot", "chromium", "chromedriver")):
        pytest.skip("this machine lacks a system package (make test would install it)")
    done = _run("test", os.environ["PATH"])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("target", "packages"),
    [
        ("eval", "bubblewrap"),
        ("view", "graphviz"),
        ("test", "bubblewrap graphviz chromium chromium-driver"),
    ],
)
def test_missing_tools_map_to_their_debian_packages(tmp_path: Path, target: str, packages: str) -> None:
    done = _run(target, _bare_path(tmp_path), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"apt-get install -y -q --no-install-recommends {packages}")
    assert "apt-get update -q &&" in done.stdout


def test_only_the_missing_ones_are_installed(tmp_path: Path) -> None:
    present = [t for t in ("dot", "chromium", "chromedriver") if shutil.which(t)]
    if len(present) < 3:
        pytest.skip("needs graphviz and chromium installed")
    done = _run("test", _bare_path(tmp_path, *present), "--dry-run")
    assert done.stdout.strip().endswith("--no-install-recommends bubblewrap"), done.stdout


def test_without_root_it_says_exactly_what_to_install(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run the script as another user")
    tmp_path.chmod(0o755)
    done = _run(
        "test", _bare_path(tmp_path), prefix=(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups")
    )
    assert done.returncode == 1
    assert "make test needs bwrap dot chromium chromedriver, which are not installed" in done.stderr
    assert (
        "sudo apt-get update && sudo apt-get install -y bubblewrap graphviz chromium chromium-driver"
        in done.stderr
    )


def test_skip_switch_and_bad_target(tmp_path: Path) -> None:
    env = {"PATH": _bare_path(tmp_path), "SKIP_SYSTEM_DEPS": "1"}
    done = subprocess.run(["bash", str(SCRIPT), "test"], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert _run("nope", _bare_path(tmp_path)).returncode == 2


def test_the_readme_commands_run_the_check() -> None:
    """`make test` and `make eval` call the script before their work (make -n only prints)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for target in ("test", "eval"):
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
        lines = done.stdout.splitlines()
        check = lines.index(f"bash scripts/system_deps.sh {target}")
        work = next(i for i, line in enumerate(lines) if "-m pytest" in line or "-m eval.benchmarks" in line)
        assert check < work, done.stdout
