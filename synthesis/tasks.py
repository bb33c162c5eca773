"""Long-horizon tasks from interleaved analysis threads (paper Eq. 21), in LongDS format.

    build_task(out_dir, dataset="penguins", seed=0, turns=12)  ->  Path of <out>/<task_id>

Steps: generate threads (`synthesis.threads`), choose how many stages of each to keep,
interleave them (so a stage that reads a non-adjacent earlier stage becomes Branch), insert a
Combine stage joining two threads' results, a DEFINITION UPDATE (the tunable stage of one
thread re-created with a changed parameter, plus its re-computed child) and an explicit
ROLLBACK (the child recomputed on the original definition). Dependencies come only from
`stage_dependencies` over the stage SQL; relations from `derive_relations`, plus `invalidate`
for the update (-> original stage), its child (-> original child) and the rollback (-> updated
stage). Each turn's code runs its stage SQL in an in-memory DuckDB connection `con` kept in the
namespace (turn 1 loads the base tables from `BASE_PATH/data/*.csv`), keeps the stage as a
DataFrame of the same name, and prints the answer with `json_dumps_rounded`; answers are
obtained by running the code.

Layout:
    <out>/<task_id>/agent/data/<table>.csv     agent-visible base tables
    <out>/<task_id>/agent/questions.json       turn_id, context, question
    <out>/<task_id>/hidden/task.json           LongDS turns with code and answers
    <out>/<task_id>/hidden/graph.json          stages, SQL, deps, relations
    <out>/<task_id>/hidden/fingerprints.json   {turn_id: {stage: sha256, "answer": sha256}} (synthesis.replay)
    <out>/<task_id>/hidden/faults.json         with worker_faults > 0: the scripted worker's mistakes
                                               (synthesis.worker_faults), for the offline benchmark
    <out>/<task_id>/manifest.json              SHA-256 of every agent-visible file
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import random
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from stateguard.artifacts.graph import RelationGraph, load_graph, save_graph
from stateguard.artifacts.manifest import TaskManifest, save_manifest
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.state import RelationType
from synthesis.replay import TurnReplay, fingerprint_turn, run_turns, write_fingerprints
from synthesis.sources.tabular import DatasetInfo, get_info, load_into_duckdb
from synthesis.sql_deps import Stage, stage_dependencies
from synthesis.stage_relations import derive_relations, invalidate, stage_state_ids
from synthesis.threads import StageSpec, Thread, generate_threads
from synthesis.worker_faults import plan_worker_faults

__all__ = ["MIN_TURNS", "PlannedStage", "build_task", "main", "plan_task", "render_code"]

MIN_TURNS = 8
EXTRA_STAGES = 4  # combine, update, update child, rollback
MAX_COPIES = 4  # instances of each thread family a long task may draw


@dataclass
class PlannedStage:
    spec: StageSpec
    role: str  # thread | combine | update | update_child | rollback
    context: str = ""
    invalidates: list[str] = field(default_factory=list)
    refers_to: dict[str, str] = field(default_factory=dict)  # role-specific stage names


def _interleave(lists: list[list[StageSpec]], rng: random.Random) -> list[StageSpec]:
    queues = [list(x) for x in lists]
    out: list[StageSpec] = []
    while any(queues):
        live = [i for i, q in enumerate(queues) if q]
        i = rng.choices(live, weights=[len(queues[j]) for j in live])[0]
        out.append(queues[i].pop(0))
    return out


def _combine_spec(a: StageSpec, b: StageSpec) -> StageSpec:
    key = a.join_key
    assert key is not None and a.join_value and b.join_value
    va, vb = a.join_value, b.join_value
    if va == vb:
        va, vb = f"{va}_1", f"{vb}_2"
    name = f"{a.name}_vs_{b.thread.split('_', 1)[-1]}"
    sql = (
        f"CREATE OR REPLACE TABLE {name} AS\nSELECT l.{key}, l.{a.join_value} AS {va}, r.{b.join_value} AS {vb}\n"
        f"FROM {a.name} AS l\nJOIN {b.name} AS r USING ({key})"
    )
    return StageSpec(
        name=name,
        thread="combine",
        note=f"{a.note} joined with {b.note}",
        sql=sql,
        question=f"Put the two results side by side: join ({a.note}) with ({b.note}) on {key}, keeping the "
        f"{key} values present in both. Report `joined`: {key} -> {{`{va}`, `{vb}`}}, values rounded to 2 "
        "decimal places.",
        answer_sql=f"SELECT {key}, ROUND(CAST({va} AS DOUBLE), 2), ROUND(CAST({vb} AS DOUBLE), 2) FROM {name} "
        f"ORDER BY {key}",
        answer_kind="map",
        fields=("joined", va, vb),
    )


def plan_task(threads: list[Thread], rng: random.Random, turns: int) -> list[PlannedStage]:
    """Choose, interleave and extend thread stages into `turns` planned stages."""
    if turns < MIN_TURNS:
        raise ValueError(f"a task needs at least {MIN_TURNS} turns, got {turns}")
    full = {t.thread_id: t.stages() for t in threads}
    # Combine: two stages of different threads with the same join key.
    pairs = [
        (ta, ia, tb, ib)
        for x, ta in enumerate(threads)
        for y, tb in enumerate(threads)
        if x < y
        for ia, sa in enumerate(full[ta.thread_id])
        for ib, sb in enumerate(full[tb.thread_id])
        if sa.join_key and sa.join_key == sb.join_key
    ]
    if not pairs:
        raise ValueError("no two threads share a join key; cannot build a Combine stage")
    ta, ia, tb, ib = rng.choice(pairs)
    need: dict[str, int] = {ta.thread_id: ia + 1, tb.thread_id: ib + 1}
    # Update: a thread whose tunable stage has a child.
    candidates = [t for t in threads if t.keys.index(t.tunable) + 1 < len(t.keys)]
    upd = rng.choice(candidates)
    ti = upd.keys.index(upd.tunable)
    need[upd.thread_id] = max(need.get(upd.thread_id, 0), ti + 2)
    chosen = [t for t in threads if t.thread_id in need]
    budget = turns - EXTRA_STAGES
    for t in threads:  # add further threads when the budget allows
        if t not in chosen and sum(max(need.get(c.thread_id, 2), 2) for c in chosen) + 2 <= budget:
            chosen.append(t)
            need[t.thread_id] = 2
    lengths = {t.thread_id: max(need[t.thread_id], 2) for t in chosen}
    if sum(lengths.values()) > budget:
        raise ValueError(
            f"{turns} turns are too few for this plan (need {sum(lengths.values()) + EXTRA_STAGES})"
        )
    room = budget - sum(lengths.values())
    while room > 0:
        open_ = [t.thread_id for t in chosen if lengths[t.thread_id] < len(full[t.thread_id])]
        if not open_:
            raise ValueError(f"{turns} turns exceed what the threads provide ({turns - room})")
        lengths[rng.choice(open_)] += 1
        room -= 1
    kept = [full[t.thread_id][: lengths[t.thread_id]] for t in chosen]
    order = _interleave(kept, rng)
    planned = [PlannedStage(spec=s, role="thread") for s in order]
    names = [p.spec.name for p in planned]

    a, b = full[ta.thread_id][ia], full[tb.thread_id][ib]
    lo = max(names.index(a.name), names.index(b.name)) + 1
    pos = rng.randint(lo, len(planned))
    planned.insert(pos, PlannedStage(spec=_combine_spec(a, b), role="combine"))

    key_t, key_c = upd.tunable, upd.keys[ti + 1]
    orig_t, orig_c = upd.default_names[key_t], upd.default_names[key_c]
    v2 = {key_t: f"{orig_t}_v2", key_c: f"{orig_c}_v2"}
    new = upd.stages(params={upd.tunable_param: upd.alternative}, names=v2)
    rb = upd.stages(names={key_c: f"{orig_c}_orig"})[ti + 1]
    old_def, new_def = (
        upd.describe_change(upd.params[upd.tunable_param]),
        upd.describe_change(upd.alternative),
    )
    names = [p.spec.name for p in planned]
    # The update goes after every kept stage that builds on the original definition: a later
    # question would otherwise be answered (by the reference code) under the superseded one.
    tainted = {orig_t}
    for p in planned:
        if any(re.search(rf"\b{re.escape(t)}\b", p.spec.sql) for t in tainted):
            tainted.add(p.spec.name)
    pos = rng.randint(max(names.index(t) for t in tainted if t in names) + 1, len(planned))
    planned.insert(
        pos,
        PlannedStage(
            spec=new[ti],
            role="update",
            invalidates=[orig_t],
            refers_to={"original": orig_t},
            context=f"Update: from this turn on, {new_def} (until now, {old_def}). Later questions use this new "
            "definition unless they say otherwise.",
        ),
    )
    pos = rng.randint(pos + 1, min(pos + 2, len(planned)))
    planned.insert(
        pos,
        PlannedStage(
            spec=new[ti + 1], role="update_child", invalidates=[orig_c], refers_to={"original": orig_c}
        ),
    )
    pos = rng.randint(pos + 1, len(planned))
    planned.insert(
        pos,
        PlannedStage(
            spec=rb,
            role="rollback",
            invalidates=[v2[key_t]],
            refers_to={"original": orig_t, "updated": v2[key_t]},
            context=f"Explicit rollback for this turn: go back to the original definition ({old_def}), not the "
            "updated one.",
        ),
    )
    return planned


# --- code -----------------------------------------------------------------------------------


def _loader(dataset: str, tables: list[str]) -> list[str]:
    info = get_info(dataset)
    lines = [
        "import duckdb",
        "",
        "# in-memory: base tables and every stage table live here; one thread, so sums add in a fixed order",
        'con = duckdb.connect(config={"threads": 1})',
    ]
    for name in tables:
        spec = info.table(name)
        cols = ", ".join(f"'{c.name}': '{c.sql_type}'" for c in spec.columns)
        lines += [
            f'_path = f"{{BASE_PATH}}/data/{name}.csv"',
            f'con.execute("CREATE OR REPLACE TABLE {name} AS SELECT * FROM read_csv(\'" + _path + "\', '
            f"header = true, nullstr = '', columns = {{{cols}}})\")",
        ]
    return lines + [""]


def _join_and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _dep_comment(turn: int, deps: list[tuple[int, str]], rng: random.Random) -> list[str]:
    if not deps:
        return []
    style = rng.randrange(4)
    nums = [t for t, _ in deps]
    if style == 0:
        lines = [f"# T{turn}: depends on:"]
        return lines + [f"#   - {name} (T{t})" for t, name in deps]
    if len(deps) == 1:
        t, name = deps[0]
        return [f"# Depends on Task {t} ({name}): reads the table built there."]
    if style == 1 and len(deps) == 2:
        return [f"# Depends on Task {nums[0]}/{nums[1]} ({deps[0][1]}, {deps[1][1]})."]
    if style == 2 and nums == list(range(nums[0], nums[0] + len(nums))):
        return [f"# Depends on Tasks {nums[0]}-{nums[-1]} ({', '.join(n for _, n in deps)})."]
    return [f"# Depends on {_join_and([f'Task {t} ({n})' for t, n in deps])}."]


def _answer_lines(spec: StageSpec) -> list[str]:
    lines = [f'_answer_sql = """\n{spec.answer_sql}\n"""']
    if spec.answer_kind == "row":
        items = ", ".join(f'"{f}": _row[{i}]' for i, f in enumerate(spec.fields))
        lines += [
            "_row = con.execute(_answer_sql).fetchone()",
            f'result = {{"answer_type": "scalar", {items}}}',
        ]
    else:
        head, rest = spec.fields[0], spec.fields[1:]
        value = (
            "r[1]" if not rest else "{" + ", ".join(f'"{f}": r[{i + 1}]' for i, f in enumerate(rest)) + "}"
        )
        lines += [
            "_rows = con.execute(_answer_sql).fetchall()",
            f'result = {{"answer_type": "table", "{head}": {{str(r[0]): {value} for r in _rows}}}}',
        ]
    return lines + ["print(json_dumps_rounded(result, 2))"]


def render_code(
    planned: PlannedStage,
    turn: int,
    deps: list[tuple[int, str]],
    turn_of: dict[str, int],
    rng: random.Random,
    loader: list[str] | None = None,
) -> str:
    lines: list[str] = list(loader or [])
    lines += _dep_comment(turn, deps, rng)
    if planned.role == "update":
        t = turn_of[planned.invalidates[0]]
        lines.append(
            f"# UPDATE: replaces the definition of Task {t} ({planned.invalidates[0]}); later turns use "
            f"{planned.spec.name}."
        )
    elif planned.role == "update_child":
        t = turn_of[planned.invalidates[0]]
        lines.append(f"# Recomputes Task {t} ({planned.invalidates[0]}) under the updated definition.")
    elif planned.role == "rollback":
        upd = planned.refers_to["updated"]
        lines.append(
            f"# EXPLICIT BACKTRACK: ignores Task {turn_of[upd]} ({upd}); uses the original definition."
        )
    name = planned.spec.name
    lines += [f'con.execute("""\n{planned.spec.sql}\n""")', f'{name} = con.table("{name}").df()', ""]
    lines += _answer_lines(planned.spec)
    return "\n".join(lines) + "\n"


# --- files ----------------------------------------------------------------------------------


def _cell_texts(column: tuple[Any, ...]) -> Iterable[str]:
    """One column's CSV cells: None -> "", a float -> repr (round-trips exactly), else str.

    Decided once per column from the types it holds (a nyc table has 336k rows, and a per-value
    isinstance test was a third of a nyc task's build); the general case keeps the per-value rule.
    """
    kinds = {type(v) for v in column}
    if kinds <= {str}:
        return column
    floats = any(issubclass(k, float) for k in kinds)
    if kinds <= {float, type(None)}:
        return ["" if v is None else repr(v) for v in column] if type(None) in kinds else map(repr, column)
    if not floats:
        return ["" if v is None else str(v) for v in column] if type(None) in kinds else map(str, column)
    return ["" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in column]


# The CSV bytes of each base table this process has written, by (dataset, table). Every task over
# a dataset writes the same tables: they are loaded afresh from the installed package
# (`load_into_duckdb`) and a task's stage SQL writes only its own tables, never the dataset's
# schema. Rendering nyc's 336k flights again for each nyc task was a quarter of the benchmark
# build's CPU (issue 33).
_CSV_BYTES: dict[tuple[str, str], bytes] = {}


def _csv_bytes(con: duckdb.DuckDBPyConnection, dataset: str, table: str) -> bytes:
    cur = con.execute(f'SELECT * FROM "{dataset}"."{table}"')
    header = [d[0] for d in cur.description]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    rows = cur.fetchall()
    if rows:
        writer.writerows(zip(*(_cell_texts(col) for col in zip(*rows, strict=True)), strict=True))
    return buf.getvalue().encode("utf-8")


def _write_csv(con: duckdb.DuckDBPyConnection, dataset: str, table: str, path: Path) -> None:
    """Write base table `dataset.table` as CSV (rendered once per process, see `_CSV_BYTES`)."""
    data = _CSV_BYTES.get((dataset, table))
    if data is None:
        data = _CSV_BYTES[(dataset, table)] = _csv_bytes(con, dataset, table)
    path.write_bytes(data)


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# One connection per dataset and process, loaded from the installed package once: every task over
# the dataset only reads it (its profile, the threads' parameters, the CSVs), never writes it, and
# the profile is kept per connection (`synthesis.threads`). A dataset registered again under its
# name (another DatasetInfo) gets a connection of its own.
_DATASET_CONNECTIONS: dict[str, tuple[DatasetInfo, duckdb.DuckDBPyConnection]] = {}


def _dataset_connection(info: DatasetInfo) -> duckdb.DuckDBPyConnection:
    cached = _DATASET_CONNECTIONS.get(info.name)
    if cached is not None and cached[0] is info:
        return cached[1]
    con = duckdb.connect()
    try:
        load_into_duckdb(con, info.name)
    except BaseException:
        con.close()
        raise
    if cached is not None:
        cached[1].close()
    _DATASET_CONNECTIONS[info.name] = (info, con)
    return con


def build_task(
    out_dir: str | Path,
    *,
    dataset: str = "penguins",
    seed: int = 0,
    turns: int = 12,
    worker_faults: int = 0,
    verified_later: bool = False,
) -> Path:
    """Generate, run and write one task; returns `<out_dir>/<task_id>`. Same arguments -> same bytes.

    `verified_later`: the caller runs `verify_replay` on the task next (the pipeline does), a fresh
    run of the written files that must reproduce every answer and fingerprint; the builder's own
    run then takes the fingerprints. Otherwise a fresh replay here takes them, so that some fresh
    run of the written task always checks it."""
    info = get_info(dataset)
    rng = random.Random(f"{info.name}:{seed}:{turns}")
    prof = _dataset_connection(info)
    threads = generate_threads(prof, info.name, rng)
    copies = 1
    while sum(len(t.keys) for t in threads) + EXTRA_STAGES < turns and copies < MAX_COPIES:
        copies += 1  # long task: more instances of each family, from a stream of their own
        threads = generate_threads(
            prof, info.name, random.Random(f"{info.name}:{seed}:{turns}:{copies}"), copies=copies
        )
    for _attempt in range(50):
        planned = plan_task(threads, rng, turns)
        stages = [Stage(name=p.spec.name, sql=p.spec.sql) for p in planned]
        deps = stage_dependencies(stages, base_tables=info.table_names)
        relations = derive_relations(stages, deps)
        for p in planned:
            for target in p.invalidates:
                relations = invalidate(p.spec.name, target, stages=stages, relations=relations)
        kinds = {r.type for rels in relations.values() for r in rels}
        if {RelationType.INIT, RelationType.PROGRESS, RelationType.BRANCH} <= kinds:
            break
    else:  # pragma: no cover - the interleaving practically always yields both kinds
        raise RuntimeError("could not plan a task with Init, Progress and Branch stages")

    task_id = f"{info.name}_s{seed}_t{turns}"
    root = Path(out_dir) / task_id
    if root.exists():
        shutil.rmtree(root)
    folder = TaskFolder(root)
    data = folder.data
    data.mkdir(parents=True)
    folder.hidden.mkdir()
    base_tables = sorted({b for t in threads for b in t.base_tables}, key=info.table_names.index)
    for table in base_tables:
        _write_csv(prof, info.name, table, data / f"{table}.csv")

    turn_of = {p.spec.name: i for i, p in enumerate(planned, start=1)}
    codes = []
    for i, p in enumerate(planned, start=1):
        dep_list = [(turn_of[d], d) for d in deps[p.spec.name]]
        loader = _loader(info.name, base_tables) if i == 1 else None
        codes.append(render_code(p, i, dep_list, turn_of, rng, loader))
    # With `verified_later` the builder's run fingerprints each turn's stage as it goes (what a
    # replay would record); verify_replay then runs the task from scratch and must reproduce them.
    recorded: list[TurnReplay] = []

    def record(turn_id: int, namespace: dict[str, Any], answer: Any) -> bool:
        recorded.append(fingerprint_turn(turn_id, [planned[turn_id - 1].spec.name], namespace, answer))
        return False

    answers = run_turns(codes, folder.agent, after_turn=record if verified_later else None)

    intro = (
        f"Dataset: {info.description} The base tables are CSV files under data/ "
        f"({', '.join(f'{t}.csv' for t in base_tables)}). Report every decimal-valued result rounded to 2 "
        "decimal places; compute with unrounded intermediate values."
    )
    turns_out = []
    for i, (p, code, answer) in enumerate(zip(planned, codes, answers, strict=True), start=1):
        context = "\n".join(x for x in (intro if i == 1 else "", p.context) if x)
        turns_out.append(
            {"turn_id": i, "context": context, "question": p.spec.question, "code": code, "answer": answer}
        )
    folder.questions.write_text(
        _dump([{k: t[k] for k in ("turn_id", "context", "question")} for t in turns_out]), encoding="utf-8"
    )
    folder.task.write_text(_dump(turns_out), encoding="utf-8")
    ids = stage_state_ids(stages)
    graph = {
        "task_id": task_id,
        "dataset": info.name,
        "seed": seed,
        "turns": turns,
        "threads": [
            {
                "thread_id": t.thread_id,
                "family": t.family,
                "params": t.params,
                "tunable": t.default_names[t.tunable],
                "alternative": t.alternative,
            }
            for t in threads
        ],
        "stages": [
            {
                "turn_id": turn_of[p.spec.name],
                "state_id": ids[p.spec.name],
                "name": p.spec.name,
                "role": p.role,
                "thread": p.spec.thread,
                "sql": p.spec.sql,
                "deps": deps[p.spec.name],
                "relations": [r.model_dump(mode="json") for r in relations[p.spec.name]],
            }
            for p in planned
        ],
    }
    save_graph(folder, RelationGraph.model_validate(graph))  # only the keys given are written (frozen bytes)
    return finish_task(
        root, task_id, seed=seed, worker_faults=worker_faults, recorded=recorded if verified_later else None
    )


def finish_task(
    root: Path, task_id: str, *, seed: int, worker_faults: int, recorded: list[TurnReplay] | None = None
) -> Path:
    """The last steps of every task builder, once hidden/task.json and graph.json are written: the
    replay fingerprints, the worker's shipped mistakes (benchmark tasks), and the agent manifest.
    `recorded`: the fingerprints the builder's own run took (else a fresh replay takes them)."""
    write_fingerprints(root, recorded)  # {turn_id: {stage: sha256, "answer": sha256}}
    if worker_faults:  # benchmark tasks: the scripted worker's contaminating mistakes (hidden)
        plan_worker_faults(root, seed=seed, n=worker_faults)
    folder = TaskFolder(root)
    save_manifest(folder, TaskManifest.of(folder, task_id))
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m synthesis.tasks",
        description="Generate a long-horizon LongDS-format task from interleaved SQL analysis threads.",
    )
    parser.add_argument("out_dir", help="folder that receives <task_id>/agent, hidden and manifest.json")
    parser.add_argument("--dataset", default="penguins", choices=["penguins", "gapminder", "nyc"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=12, help=f"number of turns (at least {MIN_TURNS})")
    args = parser.parse_args(argv)
    root = build_task(args.out_dir, dataset=args.dataset, seed=args.seed, turns=args.turns)
    graph = load_graph(TaskFolder(root))
    counts: dict[str, int] = {}
    for stage in graph.stages:
        for rel in stage.relations:
            counts[rel.type.value] = counts.get(rel.type.value, 0) + 1
    print(f"{root}: {len(graph.stages)} turns; relations {json.dumps(counts, sort_keys=True)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
