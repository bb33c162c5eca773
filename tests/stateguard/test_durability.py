"""A writer killed with SIGKILL mid-commit leaves only whole committed states behind."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from stateguard.store import StateStore

# The child keeps committing states with relations and variables until it is killed.
CHILD = r"""
import sys
from stateguard.state import AnalyticalState, Conclusion, Relation, VariableRef
from stateguard.store import StateStore
store = StateStore(sys.argv[1])
while True:
    sid = store.reserve_id(); k = int(sid[1:])
    prev = store.latest_id()
    rels = [Relation(type="progress", related_state_id=prev)] if prev else [Relation(type="init")]
    if prev and k % 7 == 0:
        rels.append(Relation(type="invalidate", related_state_id="S1" if prev != "S1" else prev))
    vars_ = [VariableRef(name=f"v{k % 5}", version=sid, value=[k] * 50)]
    if prev:
        p = store.load(prev)
        vars_ += [VariableRef(name=v.name, version=v.version, value=v.value) for v in p.defined_variables()
                  if v.name != vars_[0].name]
    store.commit(AnalyticalState(id=sid, issue="x" * 2000, used_variables=vars_,
                                 conclusions=[Conclusion(text=f"c{k}")], relations=rels))
    print(sid, flush=True)
"""


def _check_whole(path: Path) -> int:
    """Every committed state is complete: its record, relation rows and variable rows agree."""
    store = StateStore(path)
    ids = store.ids()
    db = sqlite3.connect(path)
    for sid in ids:
        state = store.load(sid)  # parses and validates the whole record
        rel_rows = db.execute("SELECT COUNT(*) FROM relations WHERE state=?", (int(sid[1:]),)).fetchone()[0]
        var_rows = db.execute("SELECT COUNT(*) FROM variables WHERE state=?", (int(sid[1:]),)).fetchone()[0]
        assert rel_rows == len(state.relations), sid
        assert var_rows == len(state.used_variables), sid
        assert json.loads(store.raw_record(sid))["id"] == sid
    orphans = db.execute(
        "SELECT COUNT(*) FROM relations WHERE state NOT IN (SELECT num FROM states)"
    ).fetchone()[0]
    assert orphans == 0
    numbers = [int(s[1:]) for s in ids]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    db.close()
    store.close()
    return len(ids)


def test_sigkill_mid_commit_leaves_only_whole_states(tmp_path: Path) -> None:
    path = tmp_path / "run" / "states.sqlite"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    counts = []
    for _ in range(6):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env)
        assert child.stdout is not None
        child.stdout.readline()  # at least one commit in this life
        time.sleep(rng.uniform(0.01, 0.25))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        counts.append(_check_whole(path))
    assert counts == sorted(counts) and counts[-1] > counts[0]
    # The store keeps working after the crashes: invalidation has been maintained all along.
    store = StateStore(path)
    assert store.is_invalid("S1")
