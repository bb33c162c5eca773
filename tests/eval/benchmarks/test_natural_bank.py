"""The natural-mistake bank (issue 30): harvesting a real model's turn into a replayable fault.

Pure pieces only (no model, no dev-set build): which of the model's earlier cells a turn needs,
the answer cell, the reproduction test, the replay verdict, and how an entry becomes a task.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.benchmarks.base import EvalTask
from eval.benchmarks.natural.bank import DATA_ROOT, BankEntry, NaturalBank, load_bank, save_bank
from eval.benchmarks.natural.bench import entry_task
from eval.benchmarks.natural.harvest import (
    answer_block,
    defined_names,
    numbers_reproduced,
    one_block,
    replay_verdict,
    support_cells,
)
from stateguard.answers import last_json
from stateguard.task import Task, Turn
from stateguard.workers.faults import split_blocks


def _entry(**kw: object) -> BankEntry:
    base: dict[str, object] = {
        "id": "m15-iris-t2-base",
        "task": "botany__iris__task1",
        "turn": 2,
        "model": "qwen2.5-coder-1.5b-instruct",
        "source": "llm15/baseline",
        "kind": "wrong_value",
        "model_answer": {"n": 7},
        "code": "n = len(flowers) - 143\nprint(n)\n\n" + answer_block({"n": 7}),
    }
    return BankEntry.model_validate(base | kw)


def test_defined_names_cover_imports_defs_and_targets() -> None:
    code = "import duckdb as db\nfrom math import sqrt\nfor i in range(2):\n    x = i\ndef f():\n    pass"
    assert defined_names(code) == {"db", "sqrt", "i", "x", "f"}
    assert defined_names("this is not python(") == set()


def test_support_cells_bring_only_the_models_missing_definitions() -> None:
    earlier = [
        (1, "import pandas as pd\nraw = pd.read_json('x.json')"),
        (1, "flowers = raw[raw.petal > 1]"),
        (2, "unused = 3"),
        (2, "flowers = raw.copy()"),  # the latest definition wins
    ]
    cells = ["n = len(flowers)\nprint(n, pd.__version__)"]
    # pd comes from the prelude (available); flowers and, through it, raw from the model's own cells
    assert support_cells(cells, {"pd", "json"}, earlier) == [earlier[0], earlier[3]]
    # a name the reference prefix defines needs nothing from the model
    assert support_cells(cells, {"pd", "flowers"}, earlier) == []
    # a name defined earlier in the turn's own cells needs nothing either
    assert support_cells(["flowers = 1", "print(flowers)"], {"pd"}, earlier) == []


def test_answer_block_prints_what_the_scripted_worker_reads() -> None:
    import contextlib
    import io
    import json

    for answer, want in [({"n": 7, "name": "North"}, {"n": 7, "name": "North"}), (3.5, {"answer": 3.5})]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(answer_block(answer), {"json": json})  # noqa: S102 - the block the bank stores
        assert last_json(out.getvalue()) == want


@pytest.mark.parametrize(
    ("answer", "output", "missing"),
    [
        ({"n": 150, "mean": 3.76}, "n = 150\nmean 3.758", []),  # rounded at the places it was written with
        ({"mean": 3.76}, "mean 3.7", ["3.76"]),
        ({"share": 0.5, "top": "setosa"}, "0.5 SETOSA", []),  # texts match case-insensitively
        ({"top": "virginica"}, "setosa", ["'virginica'"]),
        ({"flag": True, "n": 2}, "2", []),  # booleans are derived, not printed
        ({"n": 12}, "120", ["12"]),  # a number is matched whole, not as a prefix
        ("Number of flowers: 150, species: 3", "150 rows\n3 species", []),  # free text: its numbers
        ("Number of flowers: 150", "149", ["150"]),
    ],
)
def test_numbers_reproduced(answer: object, output: str, missing: list[str]) -> None:
    assert numbers_reproduced(answer, output) == missing


@pytest.mark.parametrize(
    ("entry", "correct", "answer", "output", "confirmed"),
    [
        (_entry(), False, {"n": 7}, "7", True),
        (_entry(), True, {"n": 7}, "7", False),  # right on the reference prefix: not the model's mistake
        (_entry(), False, {"n": 7}, "9", False),  # the code no longer prints the model's value
        (_entry(), None, {"n": 7}, "7", False),
        (_entry(model_answer=None, kind="missing_answer"), False, None, "", True),
        (_entry(model_answer=None, kind="exec_error"), False, {"n": 1}, "1", False),
    ],
)
def test_replay_verdict(
    entry: BankEntry, correct: bool | None, answer: object, output: str, confirmed: bool
) -> None:
    assert replay_verdict(entry, correct, answer, output)[0] is confirmed


def test_an_exec_error_reproduces_only_with_the_same_exception() -> None:
    """A model's AttributeError that turns into a NameError on the reference prefix (a name only its
    own session had) is a different mistake: not confirmed."""
    entry = _entry(model_answer=None, kind="exec_error", model_error="AttributeError")
    same = "Traceback ...\nAttributeError: 'list' object has no attribute 'items'"
    assert replay_verdict(entry, False, None, "", same) == (
        True,
        "no answer, as in the model's run (AttributeError)",
    )
    ok, note = replay_verdict(entry, False, None, "", "NameError: name 'data' is not defined")
    assert not ok and "NameError" in note


def test_entry_becomes_a_cut_variant_with_its_fault() -> None:
    turns = [
        Turn(turn_id=i, question=f"q{i}", code=f"x{i} = {i}\nprint(x{i})", answer={"x": i}) for i in (1, 2, 3)
    ]
    base = EvalTask(
        task_id="botany__iris__task1",
        task=Task(task_id="botany__iris__task1", turns=turns),
        data_dir=Path("."),
        parents={2: [1], 3: [2]},
        split="fresh",
    )
    task = entry_task(base, _entry())
    assert task.task_id == "botany__iris__task1~nat-m15-iris-t2-base"
    assert [t.turn_id for t in task.task.turns] == [1, 2]
    assert task.parents == {2: [1]} and task.split == "fresh"
    assert task.base_task == "botany__iris__task1" and task.variant == "nat-m15-iris-t2-base"
    (fault,) = task.faults
    assert (fault.kind, fault.turn, fault.semantic, fault.code) == (
        "counterfactual",
        2,
        "other",
        _entry().code,
    )
    moved = entry_task(base, _entry(code=f"df = pd.read_json('{DATA_ROOT}/x.json')"), "/here/data/dev")
    assert moved.faults[0].code == "df = pd.read_json('/here/data/dev/x.json')"  # this checkout's folder
    with pytest.raises(ValueError, match="no turn 5"):
        entry_task(base, _entry(turn=5))


def test_bank_round_trip_and_duplicate_ids(tmp_path: Path) -> None:
    path = tmp_path / "bank.json"
    assert load_bank(path).entries == []
    bank = NaturalBank(entries=[_entry(), _entry(id="other", status="confirmed")])
    save_bank(bank, path)
    assert [e.id for e in load_bank(path).confirmed()] == ["other"]
    with pytest.raises(ValueError, match="duplicate"):
        save_bank(NaturalBank(entries=[_entry(), _entry()]), path)


@pytest.mark.parametrize(
    ("cell", "want"),
    [
        ("x = 1\n\nprint(x)", "x = 1\n#\nprint(x)"),  # one block: a raise in the first part stops the rest
        ("for i in range(2):\n    y = i\n\n    print(y)", "for i in range(2):\n    y = i\n#\n    print(y)"),
        ("print(1)", "print(1)"),
    ],
)
def test_one_block_keeps_a_cell_whole(cell: str, want: str) -> None:
    assert one_block(cell) == want
    assert split_blocks(one_block(cell)) == [want]


@pytest.mark.parametrize(
    "cell",
    [
        'conn.execute("""\nCREATE TABLE t (a INT\n\n""")\nprint(1',  # does not parse: the model's SyntaxError
        'q = """\nselect 1\n\nfrom t"""\nprint(q)',  # a blank line inside a string must stay
    ],
)
def test_one_block_runs_as_text_what_it_cannot_keep_whole(cell: str) -> None:
    import ast

    block = one_block(cell)
    assert len(split_blocks(block)) == 1 and ast.parse(block)  # θ' parses, as the fault check needs
    namespace: dict[str, object] = {"conn": None}
    if "select" in cell:
        exec(block, namespace)  # noqa: S102 - the same string, blank line kept
        assert namespace["q"] == "\nselect 1\n\nfrom t"
    else:
        with pytest.raises(SyntaxError):
            exec(block, namespace)  # noqa: S102 - raises what the model's cell raised


def test_a_cell_that_calls_print_answer_replays_with_the_helper() -> None:
    # nat4: with answer_from_output the model answers with the worker's print_answer helper,
    # which the scripted worker's session does not define
    import json

    from eval.benchmarks.natural.harvest import HELPER_MARK, with_session_helpers
    from stateguard.workers.faults import split_blocks
    from stateguard.workspace import DictWorkspace

    cell = "import pandas as pd\ns = pd.Series([3, 4], index=['a', 'b'])\nprint_answer({'by_key': s, 'n': s.sum()})"
    parts = with_session_helpers([cell])
    assert len(parts) == 2 and parts[0].startswith(HELPER_MARK)
    assert with_session_helpers(["print(1)"]) == ["print(1)"]
    # the scripted worker cuts θ' at blank lines, so the helper must hold none (nat4's first
    # confirm failed with IndentationError on it); each block runs as its own cell
    ws = DictWorkspace()
    results = [ws.run_cell(block) for block in split_blocks("\n\n".join(parts))]
    assert all(r.ok for r in results), [r.error for r in results]
    assert json.loads(results[-1].stdout) == {"by_key": {"a": 3, "b": 4}, "n": 7}
