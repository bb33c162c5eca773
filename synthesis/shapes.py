"""Segment-shaped tasks: DABstep-like and DAComp-DE-like tasks from the same analysis threads.

    build_shaped_task(out_dir, shape="dabstep", dataset="penguins", seed=0)     -> <out>/penguins_dab_s0
    build_shaped_task(out_dir, shape="dacomp_de", dataset="gapminder", seed=3)  -> <out>/gapminder_dac_s3

The turn-aligned tasks of `synthesis.tasks` teach the LongDS lifecycle (a state per turn). These
teach the segment-induced one (paper A.2), where states form post hoc from spans of worker steps:

* dabstep   -- one question answered in many steps (DABstep's shape): one thread's stages as the
               numbered steps of a single turn; after each stage the worker prints a check. The
               manager reviews every 3 steps (flow `dabstep`).
* dacomp_de -- a layered SQL build (DAComp-DE's shape): an implementation turn that builds every
               thread's tables layer by layer (staging, intermediate, marts, plus a Combine mart),
               then an evolution turn with a change request that rebuilds a tunable table and its
               child under a new definition (Invalidate). Reviews every 5 steps (flow `dacomp_de`).

Each stage is two code blocks: the `CREATE OR REPLACE TABLE` (kept as a frame of the same name),
then `# check: <stage>` with its answer query printed as JSON; the turn's answer is the last JSON
it prints. `hidden/graph.json` carries the flow, the stages (with the sub-question each answers)
and the `segments` -- where each stage ends -- for the teacher. Same arguments, same bytes; the
replay check and the manifest are those of `synthesis.tasks`.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Literal

import duckdb

from stateguard.artifacts.graph import RelationGraph, load_graph, save_graph
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.state import RelationType
from synthesis.replay import run_turns
from synthesis.sources.tabular import get_info, load_into_duckdb
from synthesis.sql_deps import Stage, stage_dependencies
from synthesis.stage_relations import derive_relations, invalidate, stage_state_ids
from synthesis.tasks import _answer_lines, _combine_spec, _dump, _loader, _write_csv, finish_task
from synthesis.threads import StageSpec, Thread, generate_threads

__all__ = ["SHAPES", "Shape", "build_shaped_task", "shaped_task_id"]

Shape = Literal["dabstep", "dacomp_de"]
SHAPES: dict[str, str] = {"dabstep": "dab", "dacomp_de": "dac"}


def shaped_task_id(dataset: str, shape: str, seed: int) -> str:
    if shape not in SHAPES:
        raise ValueError(f"unknown task shape {shape!r}; known: {sorted(SHAPES)}")
    return f"{get_info(dataset).name}_{SHAPES[shape]}_s{seed}"


def _stage_blocks(spec: StageSpec) -> str:
    answer = _answer_lines(spec)
    return "\n".join(
        [
            f'con.execute("""\n{spec.sql}\n""")',
            f'{spec.name} = con.table("{spec.name}").df()',
            "",
            f"# check: {spec.name}",
            *answer,
        ]
    )


def _dabstep_plan(
    threads: list[Thread], rng: random.Random
) -> tuple[list[list[StageSpec]], list[str], dict[str, list[str]]]:
    thread = rng.choice([t for t in threads if len(t.keys) >= 3] or threads)
    stages = thread.stages()
    steps = "\n".join(f"{k}. {s.question}" for k, s in enumerate(stages, start=1))
    question = (
        "Answer one question by working through these steps in order. After each step print a check "
        f"with the fields it names; the answer is what the last step reports.\n{steps}"
    )
    return [stages], [question], {}


def _dacomp_plan(
    threads: list[Thread], rng: random.Random
) -> tuple[list[list[StageSpec]], list[str], dict[str, list[str]]]:
    chosen = threads[:3]
    full = {t.thread_id: t.stages() for t in chosen}
    layers: dict[str, list[StageSpec]] = {"staging": [], "intermediate": [], "marts": []}
    for t in chosen:
        specs = full[t.thread_id]
        layers["staging"].append(specs[0])
        layers["intermediate"] += specs[1:-1]
        layers["marts"].append(specs[-1])
    pairs = [
        (a, b)
        for x, ta in enumerate(chosen)
        for tb in chosen[x + 1 :]
        for a in full[ta.thread_id]
        for b in full[tb.thread_id]
        if a.join_key and a.join_key == b.join_key
    ]
    if pairs:
        layers["marts"].append(_combine_spec(*rng.choice(pairs)))
    build = [s for layer in ("staging", "intermediate", "marts") for s in layers[layer]]
    lines = []
    for layer in ("staging", "intermediate", "marts"):
        lines.append(f"{layer.capitalize()} layer:")
        lines += [f"- `{s.name}`: {s.question}" for s in layers[layer]]
    impl = (
        "Implement this data pipeline in DuckDB, layer by layer: build each table below (kept as a frame of "
        "the same name) and, after each, print a check with the fields it names.\n" + "\n".join(lines)
    )
    upd = rng.choice([t for t in chosen if t.keys.index(t.tunable) + 1 < len(t.keys)])
    ti = upd.keys.index(upd.tunable)
    key_t, key_c = upd.tunable, upd.keys[ti + 1]
    orig_t, orig_c = upd.default_names[key_t], upd.default_names[key_c]
    new = upd.stages(
        params={upd.tunable_param: upd.alternative}, names={key_t: f"{orig_t}_v2", key_c: f"{orig_c}_v2"}
    )
    old_def, new_def = (
        upd.describe_change(upd.params[upd.tunable_param]),
        upd.describe_change(upd.alternative),
    )
    evol = (
        f"Change request: from now on, {new_def} (until now, {old_def}). Rebuild `{orig_t}` as `{orig_t}_v2` "
        f"and `{orig_c}` as `{orig_c}_v2` under the new definition, keeping the original tables, and print a "
        f"check after each.\n- `{orig_t}_v2`: {new[ti].question}\n- `{orig_c}_v2`: {new[ti + 1].question}"
    )
    return [build, [new[ti], new[ti + 1]]], [impl, evol], {new[ti].name: [orig_t], new[ti + 1].name: [orig_c]}


def build_shaped_task(
    out_dir: str | Path, *, shape: Shape, dataset: str = "penguins", seed: int = 0, worker_faults: int = 0
) -> Path:
    """Generate, run and write one segment-shaped task; returns `<out_dir>/<task_id>`."""
    info = get_info(dataset)
    task_id = shaped_task_id(info.name, shape, seed)
    rng = random.Random(f"{task_id}")
    prof = duckdb.connect()
    try:
        load_into_duckdb(prof, info.name)
        threads = generate_threads(prof, info.name, rng)
        turn_stages, questions, replaces = (_dabstep_plan if shape == "dabstep" else _dacomp_plan)(
            threads, rng
        )
        root = Path(out_dir) / task_id
        if root.exists():
            shutil.rmtree(root)
        folder = TaskFolder(root)
        folder.data.mkdir(parents=True)
        folder.hidden.mkdir()
        used = {s.name for specs in turn_stages for s in specs}
        base_tables = sorted(
            {b for t in threads for b in t.base_tables if any(n in used for n in t.default_names.values())}
            or {b for t in threads for b in t.base_tables},
            key=info.table_names.index,
        )
        for table in base_tables:
            _write_csv(prof, info.name, table, folder.data / f"{table}.csv")
    finally:
        prof.close()

    specs = [s for group in turn_stages for s in group]
    stages = [Stage(name=s.name, sql=s.sql) for s in specs]
    deps = stage_dependencies(stages, base_tables=info.table_names)
    relations = derive_relations(stages, deps)
    for name, targets in replaces.items():
        for target in targets:
            relations = invalidate(name, target, stages=stages, relations=relations)
    codes = []
    for i, group in enumerate(turn_stages, start=1):
        head = "\n".join(_loader(info.name, base_tables)) + "\n" if i == 1 else ""
        codes.append(head + "\n\n".join(_stage_blocks(s) for s in group) + "\n")
    answers = run_turns(codes, folder.agent)
    intro = (
        f"Dataset: {info.description} The base tables are CSV files under data/ "
        f"({', '.join(f'{t}.csv' for t in base_tables)}). Report every decimal-valued result rounded to 2 "
        "decimal places; compute with unrounded intermediate values."
    )
    turns_out = [
        {"turn_id": i, "context": intro if i == 1 else "", "question": q, "code": c, "answer": a}
        for i, (q, c, a) in enumerate(zip(questions, codes, answers, strict=True), start=1)
    ]
    folder.questions.write_text(
        _dump([{k: t[k] for k in ("turn_id", "context", "question")} for t in turns_out]), encoding="utf-8"
    )
    turn_of = {s.name: i for i, group in enumerate(turn_stages, start=1) for s in group}
    ids = stage_state_ids(stages)
    graph = {
        "task_id": task_id,
        "dataset": info.name,
        "seed": seed,
        "shape": shape,
        "flow": shape,
        "threads": [{"thread_id": t.thread_id, "family": t.family, "params": t.params} for t in threads],
        "stages": [
            {
                "turn_id": turn_of[s.name],
                "state_id": ids[s.name],
                "name": s.name,
                "role": "update" if s.name in replaces else "thread",
                "thread": s.thread,
                "sql": s.sql,
                "question": s.question,
                "deps": deps[s.name],
                "relations": [r.model_dump(mode="json") for r in relations[s.name]],
            }
            for s in specs
        ],
        "segments": [
            {"key": s.name, "turn": turn_of[s.name], "marker": f"# check: {s.name}", "issue": s.question}
            for s in specs
        ],
    }
    kinds = {r.type for rels in relations.values() for r in rels}
    if RelationType.INIT not in kinds:
        raise RuntimeError(f"{task_id}: no Init stage in the plan")
    save_graph(folder, RelationGraph.model_validate(graph))  # only the keys given are written (frozen bytes)
    folder.task.write_text(_dump(turns_out), encoding="utf-8")
    return finish_task(root, task_id, seed=seed, worker_faults=worker_faults)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m synthesis.shapes", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="dabstep")
    parser.add_argument("--dataset", default="penguins", choices=["penguins", "gapminder", "nyc"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    root = build_shaped_task(args.out_dir, shape=args.shape, dataset=args.dataset, seed=args.seed)
    graph = load_graph(TaskFolder(root))
    print(f"{root}: {len(graph.stages)} stages in {len(graph.segments or [])} segments")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
