"""The coding/filesystem interface: shell commands over a scratch repository, sandboxed by bubblewrap.

Execution runs the rendered command with the repository mounted read-write; every probe (`cat`,
`ls`) runs in a separate sandbox with the repository mounted read-only. Verifiers read the
package's own configuration (ci.cfg, build.cfg, settings.py), cache tags and freeze markers.

    env = CodingEnvironment(Path("runs/x/repo"))
    interface = CODING_INTERFACE
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from statewise.interface import ExecOutcome, Interface, Operation, TaskSpec, Verdict
from statewise.interfaces.bwrap import BwrapShell
from statewise.interfaces.coding_spec import CODING_SPEC

# Slot values enter shell commands verbatim, so only this character set is accepted: no quotes,
# no $, `, ;, |, &, <, >, parentheses or newlines; a planner cannot smuggle a second command in.
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_./:@+=, -]*$")


class CodingEnvironment:
    def __init__(self, root: Path, *, shell: BwrapShell | None = None):
        self.root = Path(root).resolve()
        self.shell = shell or BwrapShell(self.root)
        self.probes = 0

    def read_text(self, path: str, limit: int = 4000) -> str | None:
        self.probes += 1
        quoted = shlex.quote(path)
        out = self.shell.run(f"test -f {quoted} && head -c {int(limit)} -- {quoted}", writable=False)
        return out.stdout if out.rc == 0 else None

    def list_dir(self, path: str) -> list[str] | None:
        self.probes += 1
        quoted = shlex.quote(path)
        out = self.shell.run(f"test -d {quoted} && ls -A1 -- {quoted}", writable=False)
        return sorted(line for line in out.stdout.splitlines() if line) if out.rc == 0 else None

    def execute(self, program: str) -> ExecOutcome:
        out = self.shell.run(program, writable=True)
        return ExecOutcome(
            ok=out.rc == 0,
            output=out.stdout[-2000:],
            error=None if out.rc == 0 else f"exit {out.rc}: {out.stderr.strip()[-500:]}",
        )


def render(op: Operation, slots: dict[str, Any]) -> str:
    bad = {k: v for k, v in slots.items() if not SAFE_VALUE.match(str(v))}
    if bad:
        raise ValueError(f"slot values outside the safe character set for a shell command: {bad}")
    return op.template.format(**{k: str(v) for k, v in slots.items()})


# ---------------------------------------------------------------------------- verifiers
def _pkg(task: TaskSpec) -> str:
    return task.scope.split("/")[-1]


def _config_value(text: str | None, name: str) -> str | None:
    for line in (text or "").splitlines():
        match = re.match(rf"^\s*{re.escape(name)}\s*=\s*(.+?)\s*$", line)
        if match:
            return match.group(1).strip("'\"")
    return None


def verify_test_command(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    value = _config_value(env.read_text(f"{pkg}/ci.cfg"), "test_command")
    if value:
        return Verdict(conclusive=True, value=value, detail=f"{pkg}/ci.cfg: test_command = {value}")
    return Verdict(conclusive=False, detail=f"{pkg}/ci.cfg names no test_command")


def verify_build_dir(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    value = _config_value(env.read_text(f"{pkg}/build.cfg"), "out_dir")
    if value:
        return Verdict(conclusive=True, value=f"{pkg}/{value}", detail=f"{pkg}/build.cfg: out_dir = {value}")
    return Verdict(conclusive=False, detail=f"{pkg}/build.cfg names no out_dir")


def verify_cache_dir(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    tagged: list[str] = []
    frontier = [pkg]
    for _ in range(3):  # the package folder and two levels below it
        nxt = []
        for folder in frontier:
            listing = env.list_dir(folder) or []
            if "CACHEDIR.TAG" in listing:
                tagged.append(folder)
            nxt += [
                f"{folder}/{n}" for n in listing if "." not in n.lstrip(".") and n not in ("src", "tests")
            ]
        frontier = nxt
    if len(tagged) == 1:
        return Verdict(conclusive=True, value=tagged[0], detail=f"{tagged[0]} carries CACHEDIR.TAG")
    return Verdict(conclusive=False, detail=f"{len(tagged)} folders under {pkg} carry CACHEDIR.TAG: {tagged}")


def verify_module(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    mods = [
        n for n in env.list_dir(f"{pkg}/src") or [] if "__init__.py" in (env.list_dir(f"{pkg}/src/{n}") or [])
    ]
    if len(mods) == 1:
        return Verdict(conclusive=True, value=mods[0], detail=f"{pkg}/src holds one package: {mods[0]}")
    return Verdict(conclusive=False, detail=f"{pkg}/src holds {len(mods)} packages: {mods}")


def verify_config_path(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    module = verify_module(env, "package.module", task)
    if not module.conclusive:
        return Verdict(conclusive=False, detail=module.detail)
    value = _config_value(env.read_text(f"{pkg}/src/{module.value}/settings.py"), "CONFIG_PATH")
    if value:
        return Verdict(
            conclusive=True,
            value=f"{pkg}/{value}",
            detail=f"{pkg}/src/{module.value}/settings.py loads {value}",
        )
    return Verdict(conclusive=False, detail=f"{pkg}/src/{module.value}/settings.py has no CONFIG_PATH")


def verify_release_state(env: Any, key: str, task: TaskSpec) -> Verdict:
    pkg = _pkg(task)
    root = env.list_dir(".") or []
    here = env.list_dir(pkg) or []
    frozen = "RELEASE_FREEZE" in root or "FREEZE" in here
    return Verdict(
        conclusive=True,
        value="frozen" if frozen else "open",
        detail=f"freeze markers: RELEASE_FREEZE at the root {'present' if 'RELEASE_FREEZE' in root else 'absent'}, "
        f"{pkg}/FREEZE {'present' if 'FREEZE' in here else 'absent'}",
    )


CODING_INTERFACE = Interface(
    spec=CODING_SPEC,
    verifiers={
        "test_command": verify_test_command,
        "build_dir": verify_build_dir,
        "cache_dir": verify_cache_dir,
        "module": verify_module,
        "config_path": verify_config_path,
        "release_state": verify_release_state,
    },
    render=render,
)
