"""A DictWorkspace probe sees every value and can change none: values are copied on first read."""

from __future__ import annotations

import pandas as pd  # noqa: F401 - the probes below rely on it being importable

from stateguard.probe_namespace import ProbeNamespace
from stateguard.workspace import DictWorkspace


def _ws() -> DictWorkspace:
    ws = DictWorkspace()
    r = ws.run_cell(
        "import pandas as pd\n"
        "df = pd.DataFrame({'a': range(1000), 'b': [1.0] * 1000})\n"
        "rows = [1, 2, 3]\nsame = rows\nresult = 'the user variable'"
    )
    assert r.ok, r.error
    return ws


def test_a_probe_changes_nothing_in_the_live_namespace() -> None:
    ws = _ws()
    before = ws.namespace["df"].copy(deep=True)
    probe = ws.run_probe(
        "df['b'] = 0.0\ndf.drop(columns=['a'], inplace=True)\ndf.iloc[0, 0] = 9.0\n"
        "rows.append(4)\ndel same\nresult = (len(rows), 'same' in globals(), list(df.columns))"
    )
    assert probe.ok, probe.error
    assert list(probe.value) == [4, False, ["b"]]
    assert ws.namespace["df"].equals(before)
    assert ws.namespace["rows"] == [1, 2, 3] and ws.namespace["same"] is ws.namespace["rows"]


def test_aliases_share_one_copy_and_unread_values_are_not_copied() -> None:
    ws = _ws()
    scratch = ProbeNamespace(ws.namespace)
    exec("same.append(4)\nresult = rows", scratch)
    assert scratch["result"] == [1, 2, 3, 4]  # one copy for both names, as a deep copy of all gives
    assert "df" not in dict.keys(scratch)  # never read, never copied
    assert isinstance(scratch["df"], pd.DataFrame) and scratch["df"] is not ws.namespace["df"]


def test_result_defaults_to_the_user_variable_and_missing_names_raise() -> None:
    ws = _ws()
    assert ws.run_probe("x = 1").value == "the user variable"  # as when the whole namespace was copied
    bad = ws.run_probe("result = undefined_name")
    assert not bad.ok and bad.error is not None and "NameError" in bad.error
    assert ws.run_probe("del rows\nresult = 'rows' in dir()").ok
    assert not ws.run_probe("del rows\ndel rows").ok


def test_a_probe_result_holding_numpy_scalars_is_a_json_value_as_the_sandbox_replies_it() -> None:
    """The cells' own `result` dict (numpy counts in it) is what a probe re-running them leaves:
    the tool reply must serialize (it raised PydanticSerializationError before)."""
    from stateguard.workspace import DictWorkspace

    ws = DictWorkspace()
    assert ws.run_cell(
        "import numpy as np\nresult = {'n': np.int64(3), 'mean': np.float64(2.5), 'x': {1, 2}}"
    ).ok
    probe = ws.run_probe("x = 1")
    assert probe.ok and probe.value == {"n": 3, "mean": 2.5, "x": "{1, 2}"}
    assert probe.model_dump(mode="json")["value"]["n"] == 3
