"""A cell whose whole output is one JSON object answers the turn (`worker_llm.answer_from_output`).

Under load the 1.5B worker (issue 30, nat3a) computed right values on iris turns 1, 3 and 4 and ran
out of time before the separate answer call; with the option on, printing the answer object ends
the turn with no further call. Intermediate prints (text, a Python repr, a data dump, the object
plus other lines) must not pass for an answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.components import endpoint_settings
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workers.output_answer import OUTPUT_ANSWER_NOTE, json_object_output
from stateguard.workers.registry import WORKERS, WorkerSetup
from tests.stateguard.workers.scripted_model import ScriptedModel as Model
from tests.stateguard.workers.scripted_model import run_first_turn


def _turn(tmp_path: Path, model: Model, **options: Any) -> tuple[LLMWorker, list[Any]]:
    return run_first_turn(tmp_path, model, ["How many flowers?"], 6, **options)


LOAD = 'flowers = json.load(open(f"{BASE_PATH}/data/iris.json"))\n'
JSON_CELL = f'<python>\n{LOAD}print(json.dumps({{"n_flowers": len(flowers)}}))\n</python>'
TEXT_CELL = f'<python>\n{LOAD}print("flowers:", len(flowers))\n</python>'
ANSWER = '<answer>{"n_flowers": 4}</answer>'


def test_a_json_object_printed_by_a_successful_cell_is_the_answer_with_no_further_call(
    tmp_path: Path,
) -> None:
    model = Model(JSON_CELL, ANSWER)
    worker, steps = _turn(tmp_path, model, answer_from_output=True)
    assert worker.answers == {1: {"n_flowers": 4}}
    assert len(model.requests) == 1  # the old worker needed a second call to answer
    assert steps[-1].meta["final"] is True and steps[-1].meta["answer_from_output"] is True
    assert worker.done()
    assert model.requests[0][0]["content"].endswith(OUTPUT_ANSWER_NOTE)  # the model is told the rule


PANDAS_CELL = (
    f"<python>\n{LOAD}df = pd.DataFrame(flowers)\n"
    "print_answer({'n_flowers': np.int64(len(df)), 'by_species': df['species'].value_counts(),"
    " 'first': pd.Timestamp('2000-01-01'), 'species': df['species'].unique()})\n</python>"
)


def test_print_answer_turns_pandas_and_numpy_values_into_the_answer_object(tmp_path: Path) -> None:
    # nat4's first try: told to print(json.dumps(...)), the 1.5B model passed a Series and an
    # int64 and failed with "not JSON serializable"; the session's helper converts them
    model = Model(PANDAS_CELL, ANSWER)
    worker, steps = _turn(tmp_path, model, answer_from_output=True)
    assert steps[0].success, steps[0].error
    assert worker.answers == {
        1: {"n_flowers": 4, "by_species": {"setosa": 4}, "first": "2000-01-01", "species": ["setosa"]}
    }
    assert len(model.requests) == 1


def test_off_the_worker_still_asks_for_the_answer(tmp_path: Path) -> None:
    model = Model(JSON_CELL, ANSWER)
    worker, steps = _turn(tmp_path, model, answer_from_output=False)
    assert len(model.requests) == 2
    assert worker.answers == {1: {"n_flowers": 4}}
    assert "answer_from_output" not in steps[0].meta
    assert OUTPUT_ANSWER_NOTE not in model.requests[0][0]["content"]


def test_a_text_print_is_not_taken_as_the_answer(tmp_path: Path) -> None:
    model = Model(TEXT_CELL, ANSWER)
    worker, _ = _turn(tmp_path, model, answer_from_output=True)
    assert len(model.requests) == 2
    assert worker.answers == {1: {"n_flowers": 4}}


@pytest.mark.parametrize(
    ("stdout", "value", "expected"),
    [
        ('{"n_flowers": 150}\n', None, {"n_flowers": 150}),
        (
            '{\n  "median": {"setosa": 3.4, "virginica": 3.0},\n  "widest": "setosa"\n}\n',
            None,
            {"median": {"setosa": 3.4, "virginica": 3.0}, "widest": "setosa"},
        ),
        ("", '{"n": 3}', {"n": 3}),  # the displayed value of a last expression
        ('n = 150\n{"n_flowers": 150}\n', None, None),  # the object and more
        ("{'n_flowers': 150}\n", None, None),  # a Python dict repr, not JSON
        ("[1, 2, 3]\n", None, None),  # a list
        ("{}\n", None, None),  # empty
        ("150\n", None, None),
        (json.dumps({f"c{i}": i for i in range(13)}), None, None),  # a row of a table, not an answer
        (json.dumps({"rows": list(range(61))}), None, None),  # a data dump
        (json.dumps({"text": "x" * 1600}), None, None),  # too long
        ('{"a": 1} trailing', None, None),
    ],
)
def test_the_output_rule(stdout: str, value: str | None, expected: Any) -> None:
    assert json_object_output(stdout, value) == expected


def test_the_config_key_is_checked_and_reaches_the_worker() -> None:
    assert "answer_from_output" not in endpoint_settings({"answer_from_output": True, "timeout_s": 5})
    with pytest.raises(ValueError, match="answer_from_output"):
        endpoint_settings({"answer_from_output": "yes"})
    setup = WorkerSetup(trace=None, client=lambda: Model(ANSWER), answer_from_output=True)  # type: ignore[arg-type]
    assert WORKERS["llm"](setup).answer_from_output is True  # type: ignore[attr-defined]
