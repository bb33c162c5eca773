"""Stage fingerprints of a built task, and a from-scratch replay that must reproduce them.

    write_fingerprints(task_dir)   -> {turn_id: {stage: sha256, "answer": sha256}}  (hidden/fingerprints.json,
                                      stateguard.artifacts.replay.FingerprintTable; the builder
                                      passes the turns its own run fingerprinted instead)
    verify_replay(task_dir)        -> ReplayReport(ok, mismatches)
    run_turns(codes, agent_dir)    -> [answer per turn]  (the builder's and the fault planner's runner)

A replay runs every turn's reference code (`hidden/task.json`) in one fresh namespace started
by `stateguard.task.prelude`, with BASE_PATH pointing at the task's own `agent/` folder (the only
thing that is relocated). After each turn the stages the turn materializes (one per turn in a
turn-aligned task, several in a segment-shaped one) -- the DataFrames named after them in
`hidden/graph.json`, copies of the DuckDB tables of the same names -- are fingerprinted with `synthesis.fingerprint.fingerprint`, and the last printed line is parsed as the
turn's answer, hashed as canonical JSON (sorted keys, no whitespace).

`verify_replay` passes only when the agent files still match `manifest.json`, every turn runs,
every answer equals the one in `task.json`, and every stored fingerprint (stage and answer) is
reproduced exactly. A passing verification may be recorded in `hidden/replay.json`; the marker
holds hashes of the files it vouches for, so editing any of them invalidates it
(`has_valid_marker`).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.manifest import load_manifest
from stateguard.artifacts.replay import (
    FingerprintTable,
    ReplayMarker,
    TurnFingerprints,
    load_fingerprints,
    load_marker,
    save_fingerprints,
    save_marker,
)
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.task import Task, load_task, prelude
from synthesis.fingerprint import fingerprint

__all__ = [
    "MARKER",
    "Mismatch",
    "ReplayReport",
    "TurnReplay",
    "answer_digest",
    "canonical_json",
    "fingerprint_turn",
    "has_valid_marker",
    "replay_turns",
    "run_turns",
    "verify_replay",
    "write_fingerprints",
    "write_marker",
]

_HIDDEN = TaskFolder(Path("."))  # relative names inside a task folder, as the manifest and marker record them
FINGERPRINTS = _HIDDEN.rel(_HIDDEN.fingerprints)
MARKER = _HIDDEN.rel(_HIDDEN.replay)


def run_turns(
    codes: list[str],
    base_path: Path,
    after_turn: Callable[[int, dict[str, Any], Any], bool] | None = None,
) -> list[Any]:
    """Run a task's turn programs in one fresh namespace; the JSON answer each turn printed last.

    `after_turn(turn_id, namespace, answer)`, when given, runs after each turn (the builder takes
    the turn's stage fingerprints there, `fingerprint_turn`); True stops the run after that turn
    (the fault planner stops once an intervention is known not to change its turn's answer), and
    the answers so far are returned."""
    namespace: dict[str, Any] = {}
    exec(prelude(Task(task_id="build", turns=[], base_path=str(base_path))), namespace)
    answers = []
    try:
        for i, code in enumerate(codes, start=1):
            out = io.StringIO()
            with redirect_stdout(out):
                exec(compile(code, f"<turn {i}>", "exec"), namespace)
            printed = [line for line in out.getvalue().splitlines() if line.strip()]
            answers.append(json.loads(printed[-1]))
            if after_turn is not None and after_turn(i, namespace, answers[-1]):
                break
    finally:
        con = namespace.get("con")
        if con is not None:
            con.close()
    return answers


class Mismatch(BaseModel):
    """One reason a replay failed. `turn_id` is None for task-level problems (files, manifest)."""

    turn_id: int | None = None
    stage: str | None = None
    file: str | None = None
    kind: str = Field(
        description="agent_file | missing_file | execution | answer | stage_fingerprint | "
        "answer_fingerprint | fingerprints_file"
    )
    reason: str


class ReplayReport(BaseModel):
    task_id: str
    ok: bool
    turns: int = 0
    mismatches: list[Mismatch] = Field(default_factory=list)

    def summary(self) -> str:
        """One line: 'ok' or the first few reasons."""
        if self.ok:
            return "ok"
        head = "; ".join(m.reason for m in self.mismatches[:3])
        more = len(self.mismatches) - 3
        return head + (f"; (+{more} more)" if more > 0 else "")


class TurnReplay(BaseModel):
    """What one turn produced in a replay."""

    turn_id: int
    stage: str | None = None  # the turn's last stage (the only one in a turn-aligned task)
    stage_fingerprint: str | None = None
    stages: dict[str, str] = Field(
        default_factory=dict, description="every stage the turn builds -> fingerprint"
    )
    answer: Any = None
    answer_fingerprint: str | None = None
    error: str | None = None


def canonical_json(obj: Any) -> str:
    """The answer's canonical JSON text: sorted keys, compact separators, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def answer_digest(answer: Any) -> str:
    return hashlib.sha256(canonical_json(answer).encode("utf-8")).hexdigest()


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stage_names(task_dir: Path) -> dict[int, list[str]]:
    """turn -> the stages it materializes, in order (one per turn, several in a segment-shaped task)."""
    return load_graph(TaskFolder(task_dir)).stages_by_turn()


def _load(task_dir: Path) -> Task:
    folder = TaskFolder(task_dir)
    return load_task(folder.hidden, task_id=task_dir.name, base_path=str(folder.agent.resolve()))


def replay_turns(task_dir: str | Path) -> list[TurnReplay]:
    """Run every turn's reference code from scratch; stops after the first turn that raises
    (later turns read its namespace)."""
    task_dir = Path(task_dir)
    task = _load(task_dir)
    stages = _stage_names(task_dir)
    namespace: dict[str, Any] = {}
    exec(prelude(task), namespace)
    results: list[TurnReplay] = []
    try:
        for turn in task.turns:
            names = stages.get(turn.turn_id, [])
            rec = TurnReplay(turn_id=turn.turn_id, stage=names[-1] if names else None)
            results.append(rec)
            out = io.StringIO()
            try:
                with redirect_stdout(out):
                    exec(compile(turn.code, f"<{task.task_id} turn {turn.turn_id}>", "exec"), namespace)
            except Exception as exc:  # noqa: BLE001 - any failure of reference code is a replay failure
                rec.error = f"{type(exc).__name__}: {exc}"
                break
            printed = [line for line in out.getvalue().splitlines() if line.strip()]
            if not printed:
                rec.error = "printed nothing (expected the answer as JSON on the last line)"
                break
            try:
                answer = json.loads(printed[-1])
            except json.JSONDecodeError as exc:
                rec.error = f"last printed line is not JSON ({exc.msg})"
                break
            rec = results[-1] = fingerprint_turn(turn.turn_id, names, namespace, answer)
            if rec.error is not None:
                break
    finally:
        con = namespace.get("con")
        if con is not None and hasattr(con, "close"):
            con.close()
    return results


def fingerprint_turn(turn_id: int, names: list[str], namespace: dict[str, Any], answer: Any) -> TurnReplay:
    """What a replay records of one finished turn: its answer's digest and the fingerprint of each
    stage it materialized (`replay_turns`, and the builder's own run through `run_turns`)."""
    rec = TurnReplay(turn_id=turn_id, stage=names[-1] if names else None, answer=answer)
    rec.answer_fingerprint = answer_digest(answer)
    missing = [n for n in names if namespace.get(n) is None]
    if missing:
        rec.error = f"stage {missing[0]!r} was not materialized in the namespace"
        return rec
    rec.stages = {n: fingerprint(namespace[n]) for n in names}
    if rec.stage is not None:
        rec.stage_fingerprint = rec.stages[rec.stage]
    return rec


def _as_table(results: list[TurnReplay]) -> FingerprintTable:
    return FingerprintTable(
        {str(r.turn_id): TurnFingerprints.of(r.stages, r.answer_fingerprint) for r in results}
    )


def write_fingerprints(
    task_dir: str | Path, results: list[TurnReplay] | None = None
) -> dict[str, dict[str, str]]:
    """Replay the task, check each answer against `task.json`, and write `hidden/fingerprints.json`.
    Raises RuntimeError when a turn fails or its answer differs (the task is not reproducible).

    `results`: the turns as the builder's own run of `task.json`'s code recorded them
    (`fingerprint_turn`), instead of a replay here; `verify_replay` is then the from-scratch run
    that must reproduce them."""
    task_dir = Path(task_dir)
    expected = {t.turn_id: t.answer for t in _load(task_dir).turns}
    if results is None:
        results = replay_turns(task_dir)
    elif [r.turn_id for r in results] != sorted(expected):
        raise RuntimeError(f"{task_dir.name}: the build recorded turns {[r.turn_id for r in results]}")
    for r in results:
        if r.error is not None:
            raise RuntimeError(f"{task_dir.name}: turn {r.turn_id} failed: {r.error}")
        if r.answer != expected[r.turn_id]:
            raise RuntimeError(f"{task_dir.name}: turn {r.turn_id} answer differs from task.json")
    table = _as_table(results)
    save_fingerprints(TaskFolder(task_dir), table)
    return table.as_json()


def _check_manifest(task_dir: Path) -> list[Mismatch]:
    folder = TaskFolder(task_dir)
    name = folder.rel(folder.manifest)
    if not folder.manifest.is_file():
        return [Mismatch(kind="missing_file", file=name, reason=f"{name} is missing")]
    manifest = load_manifest(folder)
    agent = task_dir / manifest.agent_dir
    listed = manifest.sha256
    out: list[Mismatch] = []
    for rel, digest in sorted(listed.items()):
        f = agent / rel
        if not f.is_file():
            out.append(Mismatch(kind="agent_file", file=rel, reason=f"agent file {rel} is missing"))
        elif _file_sha256(f) != digest:
            out.append(Mismatch(kind="agent_file", file=rel, reason=f"agent file {rel} differs from {name}"))
    present = (
        {p.relative_to(agent).as_posix() for p in agent.rglob("*") if p.is_file()}
        if agent.is_dir()
        else set()
    )
    for rel in sorted(present - set(listed)):
        out.append(Mismatch(kind="agent_file", file=rel, reason=f"agent file {rel} is not in {name}"))
    return out


def _load_saved(task_dir: Path) -> tuple[FingerprintTable | None, list[Mismatch]]:
    folder = TaskFolder(task_dir)
    if not folder.fingerprints.is_file():
        return None, [Mismatch(kind="missing_file", file=FINGERPRINTS, reason=f"{FINGERPRINTS} is missing")]
    try:
        return load_fingerprints(folder), []
    except ArtifactError as exc:  # not JSON, or not per-turn digests (a placeholder?)
        detail = str(exc).split(": ", 1)[-1]
        return None, [
            Mismatch(
                kind="fingerprints_file",
                file=FINGERPRINTS,
                reason=f"{FINGERPRINTS} holds no per-turn fingerprints (placeholder?): {detail}",
            )
        ]


def verify_replay(task_dir: str | Path) -> ReplayReport:
    """Re-run the task from scratch; ok only if the agent files, the answers and every saved
    fingerprint reproduce exactly. Each mismatch names its turn, stage or file."""
    task_dir = Path(task_dir)
    mismatches = _check_manifest(task_dir)
    saved, problems = _load_saved(task_dir)
    mismatches += problems
    try:
        task = _load(task_dir)
    except (FileNotFoundError, ValueError) as exc:
        mismatches.append(Mismatch(kind="missing_file", file=_HIDDEN.rel(_HIDDEN.task), reason=str(exc)))
        return ReplayReport(task_id=task_dir.name, ok=False, mismatches=mismatches)
    expected = {t.turn_id: t.answer for t in task.turns}
    results = replay_turns(task_dir)
    for r in results:
        t = r.turn_id
        if r.error is not None:
            mismatches.append(
                Mismatch(
                    turn_id=t,
                    stage=r.stage,
                    kind="execution",
                    reason=f"turn {t}: reference code failed: {r.error}",
                )
            )
            continue
        if r.answer != expected[t]:
            mismatches.append(
                Mismatch(
                    turn_id=t,
                    kind="answer",
                    reason=f"turn {t}: answer {canonical_json(r.answer)} differs from "
                    f"task.json {canonical_json(expected[t])}",
                )
            )
        if saved is None:
            continue
        entry = saved.turn(t)
        if entry is None:
            mismatches.append(
                Mismatch(turn_id=t, kind="fingerprints_file", reason=f"turn {t}: no saved fingerprints")
            )
            continue
        if entry.answer != r.answer_fingerprint:
            mismatches.append(
                Mismatch(
                    turn_id=t,
                    kind="answer_fingerprint",
                    reason=f"turn {t}: answer fingerprint does not reproduce",
                )
            )
        for name, value in r.stages.items():
            if entry.stages.get(name) != value:
                mismatches.append(
                    Mismatch(
                        turn_id=t,
                        stage=name,
                        kind="stage_fingerprint",
                        reason=f"turn {t}: stage {name} fingerprint does not reproduce",
                    )
                )
        stray = sorted(set(entry.stages) - set(r.stages))
        if stray:
            mismatches.append(
                Mismatch(
                    turn_id=t,
                    kind="fingerprints_file",
                    reason=f"turn {t}: saved fingerprints for unknown stage(s) {stray}",
                )
            )
    ran = {r.turn_id for r in results}
    for t in sorted(set(expected) - ran):
        mismatches.append(Mismatch(turn_id=t, kind="execution", reason=f"turn {t}: not reached"))
    if saved is not None:
        for key in sorted(saved.turn_ids - {str(t) for t in expected}, key=str):
            mismatches.append(
                Mismatch(
                    kind="fingerprints_file",
                    file=FINGERPRINTS,
                    reason=f"saved fingerprints for turn {key}, which the task lacks",
                )
            )
    return ReplayReport(task_id=task_dir.name, ok=not mismatches, turns=len(results), mismatches=mismatches)


# --- marker ---------------------------------------------------------------------------------

_VOUCHED = (
    _HIDDEN.rel(_HIDDEN.manifest),
    _HIDDEN.rel(_HIDDEN.task),
    _HIDDEN.rel(_HIDDEN.graph),
    FINGERPRINTS,
)


def _vouched_hashes(task_dir: Path) -> dict[str, str] | None:
    hashes = {}
    for rel in _VOUCHED:
        path = task_dir / rel
        if not path.is_file():
            return None
        hashes[rel] = _file_sha256(path)
    return hashes


def write_marker(task_dir: str | Path, report: ReplayReport) -> Path:
    """Record a passing replay; the content is deterministic (hashes only, no times)."""
    task_dir = Path(task_dir)
    if not report.ok:
        raise ValueError(f"{task_dir.name}: refusing to mark a failed replay ({report.summary()})")
    hashes = _vouched_hashes(task_dir)
    if hashes is None:
        raise FileNotFoundError(f"{task_dir}: incomplete task folder")
    marker = ReplayMarker(ok=True, task_id=report.task_id, turns=report.turns, sha256=hashes)
    return save_marker(TaskFolder(task_dir), marker)


def has_valid_marker(task_dir: str | Path) -> bool:
    """True when the folder holds a passing replay marker whose hashes match the current manifest,
    task, graph and fingerprints, and the agent files still match the manifest."""
    task_dir = Path(task_dir)
    folder = TaskFolder(task_dir)
    if not folder.replay.is_file():
        return False
    try:
        marker = load_marker(folder)
    except ArtifactError:  # an unreadable marker vouches for nothing; the task is rebuilt
        return False
    hashes = _vouched_hashes(task_dir)
    if not marker.ok or hashes is None or marker.sha256 != hashes:
        return False
    return not _check_manifest(task_dir)
