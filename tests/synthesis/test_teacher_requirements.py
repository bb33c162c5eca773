"""The teacher's constraints are read off the question text (synthesis.teacher.requirements)."""

from __future__ import annotations

from stateguard.workspace import DictWorkspace
from synthesis.teacher.requirements import requirements

QUESTION = (
    "Call a Adelie penguin heavy when its body mass is at least 3550 g. Keep the penguins on Biscoe island. "
    "Report `n_heavy` (count of heavy birds) and `mean_flipper_mm` (rounded to 2 decimal places)."
)


def test_fields_conditions_scope_and_rounding_become_constraints() -> None:
    texts = [c["text"] for c in requirements(QUESTION, places=2)]
    assert texts == [
        "the result reports `n_heavy`, `mean_flipper_mm`",
        "stated condition: its body mass is at least 3550 g",
        "stated condition: on Biscoe island",
        "decimal results are reported rounded to 2 decimal places",
    ]
    assert all("code" not in c for c in requirements(QUESTION, places=2))


def test_a_question_without_requirements_gives_none() -> None:
    assert requirements("Describe the data.", places=None) == []


def test_the_frame_check_runs_in_a_workspace() -> None:
    check = requirements(QUESTION, places=None, frame="heavy")[-1]
    assert check["text"] == "`heavy` holds at least one row"
    ws = DictWorkspace()
    ws.run_cell("import pandas as pd\nheavy = pd.DataFrame({'a': [1]})\nempty = pd.DataFrame({'a': []})")
    assert ws.run_probe(check["code"]).ok
    empty = requirements(QUESTION, places=None, frame="empty")[-1]
    result = ws.run_probe(empty["code"])
    assert not result.ok and "empty is empty" in (result.error or "")
    assert requirements(QUESTION, places=None, frame="not a name")[-1]["text"].startswith("stated condition")
