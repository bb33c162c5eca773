"""backend=ray: the same per-task function as Ray tasks gives the same bytes as in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthesis.pipeline import TaskSpec, synth_one

ray = pytest.importorskip("ray", reason="Ray comes with the rl extra")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# starts a Ray cluster (15 s at load 2.7, 61 s at load 5 on 2 cores): `make test-slow`, run by CI
@pytest.mark.slow
def test_ray_tasks_build_the_same_task(tmp_path: Path) -> None:
    from stateguard.parallel import map_tasks

    spec = TaskSpec(dataset="penguins", index=0, seed=7, turns=10, task_id="penguins_s7_t10")
    local = synth_one(spec, str(tmp_path / "local"))
    try:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        got = list(map_tasks(synth_one, [spec], str(tmp_path / "ray"), True, in_flight=2))
    finally:
        ray.shutdown()
    assert [(s.task_id, o.status) for s, o in got] == [("penguins_s7_t10", "built")]
    assert got[0][1].relation_counts == local.relation_counts
    assert _files(tmp_path / "ray" / spec.task_id) == _files(tmp_path / "local" / spec.task_id)
