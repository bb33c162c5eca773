"""The frozen offline benchmark: one manifest of every byte `make synth` wrote, checked against the repo.

    python -m synthesis.pipeline synth=bench            # builds data/synth-bench and checks it
    python -m synthesis.pipeline synth=bench freeze=update   # deliberate change: rewrite the record

`bench_manifest(out_dir, task_ids)` lists the SHA-256 of every file in each task folder (agent
files, hidden task/graph/fingerprints, manifest and replay marker), sorted, as canonical JSON;
its own SHA-256 is the benchmark's identity. The committed copy lives in
`eval/benchmarks/synth/frozen_manifest.json` and its hash in `configs/synth/bench.yaml`, so a
change to the generator that alters the benchmark fails loudly, naming the files that changed,
until someone updates the record on purpose. The eval side reads the same JSON (no import of
this package) to check the data it is about to score.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["FreezeError", "bench_manifest", "check_frozen", "manifest_sha256", "write_frozen"]

SCHEMA = "stateguard/synth-bench/1"


class FreezeError(RuntimeError):
    """The built benchmark differs from the frozen record."""


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def bench_manifest(out_dir: str | Path, task_ids: list[str]) -> dict[str, Any]:
    """{schema, tasks: {task_id: {relative path: sha256}}} over the given task folders."""
    out = Path(out_dir)
    tasks: dict[str, dict[str, str]] = {}
    for task_id in sorted(task_ids):
        root = out / task_id
        if not root.is_dir():
            raise FileNotFoundError(
                f"{root}: task folder missing; rebuild with `make synth ARGS=synth=bench`"
            )
        files = sorted(p for p in root.rglob("*") if p.is_file())
        tasks[task_id] = {p.relative_to(root).as_posix(): _sha256_file(p) for p in files}
    return {"schema": SCHEMA, "tasks": tasks}


def _canonical(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")


def manifest_sha256(manifest: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical(manifest)).hexdigest()


def write_frozen(manifest: dict[str, Any], path: str | Path) -> str:
    """Write the canonical manifest to `path`; returns its SHA-256."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(_canonical(manifest))
    return manifest_sha256(manifest)


def _differences(built: dict[str, Any], frozen: dict[str, Any]) -> list[str]:
    out: list[str] = []
    a, b = built.get("tasks", {}), frozen.get("tasks", {})
    out += [f"task {t} is new (not in the frozen benchmark)" for t in sorted(set(a) - set(b))]
    out += [f"task {t} is missing (frozen benchmark has it)" for t in sorted(set(b) - set(a))]
    for t in sorted(set(a) & set(b)):
        for f in sorted(set(a[t]) | set(b[t])):
            if a[t].get(f) != b[t].get(f):
                state = "missing" if f not in a[t] else "new" if f not in b[t] else "changed"
                out.append(f"{t}/{f} {state}")
    return out


def check_frozen(manifest: dict[str, Any], frozen_path: str | Path, expected_sha256: str | None) -> str:
    """Compare a built benchmark's manifest with the frozen record; returns the hash or raises FreezeError."""
    digest = manifest_sha256(manifest)
    path = Path(frozen_path)
    fix = "if the change is deliberate, rerun with `freeze=update` and commit the new record and hash"
    if not path.is_file():
        raise FreezeError(f"{path}: no frozen benchmark manifest to compare with; {fix}")
    frozen = json.loads(path.read_text(encoding="utf-8"))
    if manifest_sha256(frozen) != (expected_sha256 or manifest_sha256(frozen)):
        raise FreezeError(
            f"{path}: its hash {manifest_sha256(frozen)} is not the recorded {expected_sha256} "
            f"(configs/synth/bench.yaml frozen_sha256); {fix}"
        )
    diffs = _differences(manifest, frozen)
    if diffs or digest != manifest_sha256(frozen):
        shown = "; ".join(diffs[:10]) + (f"; ... {len(diffs) - 10} more" if len(diffs) > 10 else "")
        raise FreezeError(
            f"the built benchmark (sha256 {digest}) differs from the frozen one "
            f"({manifest_sha256(frozen)}): {shown or 'manifest layout'}; {fix}"
        )
    return digest
