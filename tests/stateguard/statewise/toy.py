"""A toy interface for unit tests of the recovery core: an in-memory file tree (named so, not a sandbox).

Operation `copy_file` copies `src` into folder `dest` under the name `name`; `mode` (developer
intent) must be 'copy' (a 'hold' value stops it). `src.path` is machine-owned: a verifier reads
the pointer file `CURRENT` naming the current source. `delete_dir` empties a folder that must
carry a KEEP-free CACHE marker.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from statewise.interface import (
    ActionSlot,
    ExecOutcome,
    Interface,
    InterfaceSpec,
    Invariant,
    Operation,
    StateType,
    TaskSpec,
    Verdict,
)
from statewise.records import Authority, OpRecord, Provenance

NOW = datetime(2025, 6, 1, tzinfo=UTC)

SPEC = InterfaceSpec(
    name="toy",
    description="in-memory files",
    scope_levels=["project", "area"],
    state_types={
        "path": StateType(name="path", owner="machine", verifier="pointer", ttl_days=30),
        "mode": StateType(name="mode", owner="developer", ttl_days=60, domain=["copy", "hold"]),
        "folder": StateType(name="folder", owner="developer", ttl_days=60),
        "note": StateType(name="note", owner="developer", ttl_days=60),
    },
    keys={"src.path": "path", "copy.mode": "mode", "dest.dir": "folder", "note.": "note"},
    operations={
        "copy_file": Operation(
            name="copy_file",
            description="copy a file",
            effect="write",
            irreversible=False,
            slots=[
                ActionSlot(name="src", role="input", key="src.path", default="in/a.txt"),
                ActionSlot(name="mode", role="guard", key="copy.mode", default="copy"),
                ActionSlot(name="dest", role="write", key="dest.dir", default="out"),
                ActionSlot(name="name", role="param"),
            ],
            invariants=[
                Invariant(kind="within_roots", slot="dest", arg=["out", "shared"]),
                Invariant(kind="no_marker", slot="dest", arg=["FROZEN"]),
                Invariant(kind="exists", slot="src"),
            ],
            template="copy {src} {dest}/{name}",
        ),
        "delete_dir": Operation(
            name="delete_dir",
            description="empty a cache folder",
            effect="delete",
            irreversible=True,
            slots=[ActionSlot(name="folder", role="delete", key="dest.dir", default="cache")],
            invariants=[Invariant(kind="requires_marker", slot="folder", arg=["CACHE"])],
            template="delete {folder}",
        ),
    },
    stop_values=["hold", "undecided"],
)


class ToyEnv:
    """Files in a dict; `execute` interprets the two templates above."""

    def __init__(self, files: dict[str, str]):
        self.files = dict(files)
        self.probes = 0
        self.executed: list[str] = []

    def read_text(self, path: str, limit: int = 4000) -> str | None:
        self.probes += 1
        return self.files.get(path, None)

    def list_dir(self, path: str) -> list[str] | None:
        self.probes += 1
        prefix = path.rstrip("/") + "/"
        names = sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})
        return names or None

    def execute(self, program: str) -> ExecOutcome:
        self.executed.append(program)
        verb, *args = program.split()
        if verb == "copy":
            src, dst = args
            if src not in self.files:
                return ExecOutcome(ok=False, error=f"no {src}")
            self.files[dst] = self.files[src]
        else:
            self.files = {
                p: t for p, t in self.files.items() if not p.startswith(args[0] + "/") or p.endswith("/CACHE")
            }
        return ExecOutcome(ok=True)


def pointer(env: Any, key: str, task: TaskSpec) -> Verdict:
    text = env.read_text("CURRENT")
    if text is None:
        return Verdict(conclusive=False, detail="no CURRENT pointer")
    return Verdict(conclusive=True, value=text.strip(), detail=f"CURRENT names {text.strip()}")


INTERFACE = Interface(
    spec=SPEC, verifiers={"pointer": pointer}, render=lambda op, slots: op.template.format(**slots)
)


def record(
    key: str,
    value: Any,
    *,
    scope: str = "p/a",
    age: float = 5,
    authority: Authority = Authority.DEVELOPER,
    prov_scope: str | None = None,
    source: str = "task-1",
    rtype: str | None = None,
) -> OpRecord:
    rtype = rtype or SPEC.type_of(key).name
    return OpRecord(
        key=key,
        value=value,
        type=rtype,
        scope=scope,
        observed_at=NOW - timedelta(days=age),
        ttl_days=SPEC.type_of(key).ttl_days,
        authority=authority,
        provenance=Provenance(source=source, scope=prov_scope or scope),
    )


def task(
    op: str = "copy_file",
    *,
    name: str = "r.txt",
    scope: str = "p/a",
    permissions: tuple[str, ...] = ("write",),
) -> TaskSpec:
    params = {"name": name} if op == "copy_file" else {}
    return TaskSpec(
        task_id="t1",
        interface="toy",
        scope=scope,
        operation=op,
        params=params,
        instruction=f"do {op}",
        permissions=list(permissions),
        now=NOW,
    )  # type: ignore[arg-type]


FILES = {
    "in/a.txt": "old",
    "in/b.txt": "new",
    "CURRENT": "in/b.txt\n",
    "out/README": "",
    "shared/FROZEN": "",
    "cache/CACHE": "",
    "cache/x": "1",
    "keep/y": "2",
}
