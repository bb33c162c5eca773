"""The dev set tells an LLM worker how to write an answer its field judge can read (issue 30).

With LongDS's own wording ("in the form the question requires") the 1.5B model answered right
values in sentences, which the dev set's field judge scores wrong; the dev protocol now asks for
one JSON object of the requested values, and an answer written that way is read and judged.
"""

from __future__ import annotations

from pathlib import Path

from eval.benchmarks.base import EvalTask
from eval.benchmarks.dev.bench import FIELD_ANSWERS, DevBench
from eval.benchmarks.longds.bench import LongDSBench
from eval.benchmarks.longds.judge import judge_fields
from stateguard.task import Task, Turn
from stateguard.workers.answer_text import structured_answer

EXPECTED = {"answer_type": "table", "n_long": 71, "long_by_species": {"versicolor": 21, "virginica": 50}}


def _task(tmp_path: Path) -> EvalTask:
    turn = Turn(
        turn_id=1, question="How many flowers are long-petalled, per species?", code="", answer=EXPECTED
    )
    return EvalTask(task_id="botany__iris__task1", task=Task(task_id="t", turns=[turn]), data_dir=tmp_path)


def test_dev_protocol_asks_for_a_json_object_of_the_requested_values(tmp_path: Path) -> None:
    task = _task(tmp_path)
    dev = DevBench().worker_protocol(task).system_prompt
    longds = LongDSBench().worker_protocol(task).system_prompt
    assert dev == longds + FIELD_ANSWERS  # the dialogue is LongDS's; only the answer's form is added
    assert "one JSON object" in dev and "No sentences" in dev


def test_an_answer_in_the_asked_form_is_judged_and_a_sentence_is_not() -> None:
    asked = structured_answer('{"n_long": 71, "long_by_species": {"versicolor": 21, "virginica": 50}}')
    sentence = structured_answer("There are 71 long-petalled flowers, virginica (50) and versicolor (21).")
    assert judge_fields(EXPECTED, asked) is True
    assert sentence is None  # prose stays text, and the field judge finds no fields in it
    assert judge_fields(EXPECTED, sentence) is False
