"""The semantic rule registry: the built-in kinds in their reading order, requirement kinds that
old traces wrote, and a toy rule added from a temporary package through `register_rule` only
(one module: its kind, its reader, its binding and its probe builder) that the verifier extracts,
binds, probes and reports as a finding, and that stays silent on a clean turn.

Run: `python -m pytest -q tests/stateguard/verification/test_rule_registry.py`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stateguard.verification.extract import extract
from stateguard.verification.requirements import Kind, Requirement, kind_names
from stateguard.verification.rules import SemanticRule, register_rule, rules, unregister_rule
from tests.stateguard.verification.conftest import Session

# registered after the built-in kinds: read from the run's code, not the question
FROM_CODE = ["superseded_definition", "standing_scope", "subset_rows"]
BUILT_IN_ORDER = [
    "comparison",
    "not_null",
    "scope",
    "aggregation",
    "share",
    "grouping",
    "order",
    "join",
    "source",
    "rounding",
    "output",
]

TOY = '''
"""A toy semantic rule: "without duplicate rows" asks that the frame the turn keeps holds no row twice."""
import re

from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import Requirement
from stateguard.verification.rules import Reading, SemanticRule, register_rule

_PHRASE = re.compile(r"\\bwithout duplicate rows\\b", re.IGNORECASE)


def read(clause: str, reading: Reading) -> list[Requirement]:
    m = _PHRASE.search(clause)
    return [Requirement(kind="distinct_rows", text=m.group(0))] if m else []


def duplicates_probe(frame: str) -> str:
    return f"_f = {frame}\\n_d = int(_f.duplicated().sum())\\n_v = _d > 0\\n_o = {{'duplicate_rows': _d}}"


def bind(binder: Binder, req: Requirement, plan: Plan) -> None:
    for sel in binder.sem.selections:
        art = binder.artifact(sel)
        if art is not None and art[0] == "frame":
            plan.notes.append(f"{req.describe()}: checked on the frame {art[1]}")
            plan.items.append(
                binder.item(req, "duplicates", duplicates_probe(art[1]), binder.variables(sel), "missing")
            )
            return
    plan.unverified.append(req)


RULE = register_rule(
    SemanticRule(
        "distinct_rows",
        bind=bind,
        read_clause=read,
        describe=lambda req: "no row kept twice",
        reason=lambda req, status: f"some rows are kept twice although the question asks for them {req.text}",
    )
)
'''

QUESTION = "Keep the orders without duplicate rows. Report `n_rows`."
DUPES = "dupes = pd.concat([orders, orders.head(5)], ignore_index=True)"
FAULTY = "kept = dupes[dupes.rating > 0]\nresult = {'n_rows': len(kept)}"
CLEAN = "dedup = dupes.drop_duplicates()\nkept = dedup[dedup.rating > 0]\nresult = {'n_rows': len(kept)}"


@pytest.fixture
def toy_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The toy rule as a package in a temporary folder on the path, imported (which registers it)."""
    (tmp_path / "toy_rule").mkdir()
    (tmp_path / "toy_rule" / "__init__.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module("toy_rule")
    finally:
        sys.modules.pop("toy_rule", None)
        unregister_rule("distinct_rows")


def _session() -> Session:
    session = Session()
    assert session.ws.run_cell(DUPES).ok
    return session


def test_the_built_in_rules_are_read_in_their_order() -> None:
    """The order is behaviour (dedupe keeps the first, probe items are numbered in order)."""
    assert [str(r.kind) for r in rules()] == [*BUILT_IN_ORDER, *FROM_CODE]
    assert sorted(BUILT_IN_ORDER) == sorted(k.value for k in Kind)
    assert [str(r.kind) for r in rules() if r.row_condition] == ["comparison", "not_null", "scope"]


@pytest.mark.parametrize("kind", BUILT_IN_ORDER)
def test_a_built_in_kind_reads_back_as_the_enum_member(kind: str) -> None:
    """A trace written before the registry: the same strings, the same enum members."""
    needed: dict[str, dict[str, Any]] = {
        "comparison": {"op": ">=", "value": 3},
        "scope": {"values": ["a"]},
        "not_null": {"subject": ["x"]},
        "aggregation": {"function": "mean"},
        "grouping": {"keys": ["k"]},
        "join": {"how": "left"},
        "order": {"descending": True},
        "rounding": {"decimals": 2},
        "output": {"fields": ["f"]},
        "source": {"subject": ["jobs"]},
    }
    fields = needed.get(kind, {})
    req = Requirement.model_validate({"kind": kind, "text": "t", **fields})
    assert req.kind is Kind(kind)
    assert Requirement.model_validate_json(req.model_dump_json()).kind is Kind(kind)
    assert f'"kind":"{kind}"' in req.model_dump_json()


def test_registration_is_refused_for_a_taken_or_malformed_kind() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register_rule(SemanticRule("scope"))
    with pytest.raises(ValueError, match="lower-case name"):
        register_rule(SemanticRule("Distinct Rows"))
    with pytest.raises(ValueError, match="has its fields and words in requirements.py"):
        register_rule(SemanticRule("order", needs=("k",)))
    assert [str(r.kind) for r in rules()] == [*BUILT_IN_ORDER, *FROM_CODE]


def test_a_registered_kind_is_validated_by_the_fields_it_needs() -> None:
    register_rule(SemanticRule("toy_needs", needs=("fields",)))
    try:
        with pytest.raises(ValueError, match="a toy_needs requirement needs fields"):
            Requirement(kind="toy_needs", text="t")
        req = Requirement(kind="toy_needs", text="t", fields=["f"])
        assert req.kind == "toy_needs" and req.describe() == "toy_needs: t"  # the generic words
        assert Requirement.model_validate_json(req.model_dump_json()) == req
    finally:
        unregister_rule("toy_needs")
    with pytest.raises(ValueError, match="unknown requirement kind 'toy_needs'"):
        Requirement(kind="toy_needs", text="t", fields=["f"])


def test_a_toy_rule_is_extracted_bound_probed_and_reported(toy_rule: ModuleType) -> None:
    assert "distinct_rows" in kind_names()
    assert [str(r.kind) for r in extract(QUESTION)] == ["distinct_rows", "output"]
    assert [str(r.kind) for r in extract("Keep the orders. Report `n_rows`.")] == ["output"]

    session = _session()
    findings = session.turn(QUESTION, FAULTY)
    assert len(findings) == 1
    (finding,) = findings
    assert finding.check == "semantic" and finding.variables == ["kept"]
    assert (
        finding.reason
        == "some rows are kept twice although the question asks for them without duplicate rows"
    )
    assert finding.evidence.startswith("distinct_rows requirement 'no row kept twice': code missing")
    assert "'duplicate_rows': 5" in finding.evidence
    assert "no row kept twice: checked on the frame kept" in session.verifier.last.notes


def test_the_toy_rule_stays_silent_on_a_clean_turn(toy_rule: ModuleType) -> None:
    session = _session()
    assert session.turn(QUESTION, CLEAN) == []
    # it was bound and probed (not left unverified): the probe saw no duplicate
    assert [str(r.kind) for r in session.verifier.last.requirements] == ["distinct_rows", "output"]
    assert session.verifier.last.unverified == []
    assert session.verifier.last.outcomes["R1"] == {"violated": False, "observed": {"duplicate_rows": 0}}


def test_the_toy_kind_is_unknown_without_its_rule(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown requirement kind 'distinct_rows'"):
        Requirement(kind="distinct_rows", text="without duplicate rows")
    assert [str(r.kind) for r in extract(QUESTION)] == ["output"]
