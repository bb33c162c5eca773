"""A term's definition follows the task's latest change of its rule, and a question that points
at another version of the term ("did not count as big under it") gets none imposed."""

from __future__ import annotations

from stateguard.verification.definitions import Definition, Definitions
from stateguard.verification.extract import context_requirements, definition_term
from stateguard.verification.requirements import Kind, Requirement
from tests.stateguard.verification.conftest import Session

DEFINE = (
    "An order is big when the price is at least 100 and the rating is at least 3. "
    "How many orders are big? Report `n_big`."
)
DEFINE_CODE = "orders['big'] = (orders['price'] >= 100) & (orders['rating'] >= 3)\nresult = {'n_big': int(orders['big'].sum())}"
DROP = "The rating part is dropped: big means a price of at least 100 again."
DROP_CODE = "orders['big'] = orders['price'] >= 100\nresult = {'n_big': int(orders['big'].sum())}"
LEFT = "Which big orders would the rating part have left out? Report `n_left`."
LEFT_CODE = "left = orders[orders['big'] & ~(orders['rating'] >= 3)]\nresult = {'n_left': len(left)}"


def _defined(session: Session) -> None:
    assert session.turn(DEFINE, DEFINE_CODE) == []
    assert [e.term for e in session.verifier.definitions.entries.values()] == ["big"]


def test_a_rule_change_not_read_as_a_definition_forgets_the_old_one() -> None:
    """Turn 2 drops the rating part in words the parser does not read as a definition; turn 3 uses
    'big' after it: the turn-1 rule (rating at least 3) must not be imposed."""
    session = Session()
    _defined(session)
    assert session.turn("How many orders are big now? Report `n_big`.", DROP_CODE, own_context=DROP) == []
    assert session.verifier.definitions.entries == {}
    assert session.turn(LEFT, LEFT_CODE) == []


def test_without_a_change_the_definition_still_applies() -> None:
    session = Session()
    _defined(session)
    assert session.turn("How many orders are big now? Report `n_big`.", DEFINE_CODE) == []
    assert len(session.verifier.definitions.entries) == 1


def _entry(term: str) -> Definition:
    req = Requirement(kind=Kind.COMPARISON, text="at least 3", subject=["rating"], op=">=", value=3.0)
    return Definition(term=term, scope=[], requirements=[req], turn_id=1, state_id="S1")


def test_a_term_pointing_at_another_version_is_not_a_use() -> None:
    defs = Definitions()
    entry = _entry("fit")
    assert defs.uses("How many members are fit now?", entry)
    assert not defs.uses("List the members who are fit now but did not count as fit under it.", entry)
    assert not defs.uses(
        "How many more masses are fit under the radius rule than under the area rule?", entry
    )


def test_again_is_not_part_of_the_defined_term() -> None:
    assert (
        definition_term(
            "Bring the radius rule back: a mass is large again when its mean radius is at least 15."
        )
        == "large"
    )


def test_from_here_on_states_a_definition_like_from_now_on() -> None:
    context = (
        "The lab now sizes masses by area: from here on a mass is large when its mean area is more than 600."
    )
    assert definition_term(context) == "large"
    assert [r.describe() for r in context_requirements(context)] == ["mean area > 600"]


def test_a_turn_that_restores_a_rule_without_naming_the_term_gets_no_carried_definition() -> None:
    """Turn 1 defines 'big' with a rating part; turn 2 goes back to an older rule in words that do
    not name the term, and rebuilds the flag: the turn-1 rule is not carried into turn 2. The same
    question without the rollback words carries it."""

    def carried(session: Session) -> list[str]:
        return [r.describe() for r in session.verifier.last.requirements if r.term == "big"]

    session = Session()
    _defined(session)
    restore = "Restore the old flag. How many orders are big? Report `n_big`."
    assert session.turn(restore, DROP_CODE, own_context="Go back to the price-only rule.") == []
    assert carried(session) == []
    again = Session()
    _defined(again)
    again.turn("How many orders are big? Report `n_big`.", DEFINE_CODE)
    assert carried(again) != []
