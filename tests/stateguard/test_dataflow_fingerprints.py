"""Which values the recorder fingerprints before a cell: not one the cell rebinds before anything
else can reach it through its name (a whole frame, for nothing), and every one the cell may change."""

from __future__ import annotations

import ast

import pandas as pd

from stateguard.dataflow import CellRecorder
from stateguard.dataflow.recorder import _rebound_first


def _prints_for(code: str, namespace: dict[str, object]) -> set[str]:
    recorder = CellRecorder()
    recorder.attach(namespace)
    prepared = recorder.start(code, namespace)
    watched = set(recorder._prints)
    exec(prepared.body, namespace)
    recorder.finish(False)
    return watched


def test_a_name_rebound_first_is_not_fingerprinted_but_one_changed_in_place_is() -> None:
    ns: dict[str, object] = {"df": pd.DataFrame({"b": [0.1, 0.7, 0.9]}), "kept": pd.DataFrame({"b": [1.0]})}
    assert "kept" not in _prints_for("kept = df[df['b'] > 0.5]\nkept['c'] = kept['b'] * 2", ns)
    assert "kept" in _prints_for("kept['d'] = 1", ns)  # the old value itself changes: fingerprinted
    assert "kept" in _prints_for("kept['e'] = 1\nkept = df", ns)  # changed before it is rebound


def test_rebound_first_reads_only_unconditional_top_level_bindings() -> None:
    tree = ast.parse(
        "a = 1\nb = b + 1\nif x:\n    c = 2\nd, e = 1, 2\nf = g = 3\nh.x = 1\nh = 2\nk = [k for k in y]\na2 = a"
    )
    assert _rebound_first(tree) == {"a", "a2"}
