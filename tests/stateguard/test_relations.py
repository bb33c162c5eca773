"""Relation normalization (paper Eq. 13): structure decides the type, invalidate stays explicit."""

from __future__ import annotations

import pytest

from stateguard.actions import ActionError, RelationArg
from stateguard.relation_rules import normalize_relations
from stateguard.state import Relation, RelationType

COMMITTED = {"S1", "S2", "S3", "S5"}  # S4 was abandoned: ids are burnt, S5 is the latest commit
DRAFT = "S6"
LATEST = "S5"

INIT = RelationType.INIT
PROGRESS = RelationType.PROGRESS
BRANCH = RelationType.BRANCH
COMBINE = RelationType.COMBINE
INVALIDATE = RelationType.INVALIDATE


def _arg(sid: str | None, kind: str | None = None) -> RelationArg:
    return RelationArg(related_state_id=sid, type=kind)


def _norm(proposed, *, latest: str | None = LATEST):
    relations, notes = normalize_relations(
        proposed, draft_id=DRAFT, latest_committed=latest, is_committed=COMMITTED.__contains__
    )
    return [(r.type, r.related_state_id) for r in relations], notes


@pytest.mark.parametrize(
    ("proposed", "expected", "notes"),
    [
        # no upstream -> init
        ([], [(INIT, None)], []),
        ([_arg(None)], [(INIT, None)], []),
        ([_arg(None, "init")], [(INIT, None)], []),
        # one upstream, the latest commit -> progress
        ([_arg("S5")], [(PROGRESS, "S5")], []),
        ([_arg("S5", "progress")], [(PROGRESS, "S5")], []),
        (
            [_arg("S5", "branch")],
            [(PROGRESS, "S5")],
            ["relation to S5 normalized from 'branch' to 'progress'"],
        ),
        # one upstream that is not the latest commit -> branch
        ([_arg("S2")], [(BRANCH, "S2")], []),
        ([_arg("S3", "branch")], [(BRANCH, "S3")], []),
        (
            [_arg("S3", "progress")],
            [(BRANCH, "S3")],
            ["relation to S3 normalized from 'progress' to 'branch'"],
        ),
        # two or more upstreams -> combine each, in the proposed order
        ([_arg("S3"), _arg("S1")], [(COMBINE, "S3"), (COMBINE, "S1")], []),
        (
            [_arg("S5", "progress"), _arg("S2", "combine"), _arg("S1", "branch")],
            [(COMBINE, "S5"), (COMBINE, "S2"), (COMBINE, "S1")],
            [
                "relation to S5 normalized from 'progress' to 'combine'",
                "relation to S1 normalized from 'branch' to 'combine'",
            ],
        ),
        # init listed next to a real upstream is dropped
        ([_arg(None, "init"), _arg("S5")], [(PROGRESS, "S5")], []),
    ],
)
def test_structural_types(proposed, expected, notes):
    assert _norm(proposed) == (expected, notes)


@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        # invalidate alone: kept, and no init is added
        ([_arg("S2", "invalidate")], [(INVALIDATE, "S2")]),
        ([_arg("S5", "invalidate")], [(INVALIDATE, "S5")]),
        # with an inherited upstream: inherited relation first, then the invalidation
        ([_arg("S1", "invalidate"), _arg("S5")], [(PROGRESS, "S5"), (INVALIDATE, "S1")]),
        ([_arg("S3", "invalidate"), _arg("S2", "branch")], [(BRANCH, "S2"), (INVALIDATE, "S3")]),
        (
            [_arg("S1", "invalidate"), _arg("S2"), _arg("S3"), _arg("S5", "invalidate")],
            [(COMBINE, "S2"), (COMBINE, "S3"), (INVALIDATE, "S1"), (INVALIDATE, "S5")],
        ),
    ],
)
def test_invalidate_is_kept_explicit(proposed, expected):
    relations, notes = _norm(proposed)
    assert relations == expected
    assert notes == []


def test_latest_is_decided_by_commit_order_not_id_arithmetic():
    # S4 was abandoned: S5 is "immediately preceding" for draft S6, S3 is not
    assert _norm([_arg("S5")])[0] == [(PROGRESS, "S5")]
    assert _norm([_arg("S3")])[0] == [(BRANCH, "S3")]
    # with no commit recorded as latest, a single upstream is a branch
    assert _norm([_arg("S5")], latest=None)[0] == [(BRANCH, "S5")]


@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        ([_arg("S5"), _arg("S5")], [(PROGRESS, "S5")]),
        ([_arg("S5", "progress"), _arg("S5", "combine")], [(PROGRESS, "S5")]),
        ([_arg("S1"), _arg("S2"), _arg("S1", "combine")], [(COMBINE, "S1"), (COMBINE, "S2")]),
        ([_arg("S2", "invalidate"), _arg("S2", "invalidate")], [(INVALIDATE, "S2")]),
    ],
)
def test_duplicates_collapse(proposed, expected):
    assert _norm(proposed)[0] == expected


def test_duplicate_keeps_first_requested_type_for_notes():
    relations, notes = _norm([_arg("S2", "progress"), _arg("S2", "branch")])
    assert relations == [(BRANCH, "S2")]
    assert notes == ["relation to S2 normalized from 'progress' to 'branch'"]


def test_accepts_relation_records():
    relations, notes = normalize_relations(
        [Relation(type=RelationType.BRANCH, related_state_id="S5")],
        draft_id=DRAFT,
        latest_committed=LATEST,
        is_committed=COMMITTED.__contains__,
    )
    assert relations == [Relation(type=RelationType.PROGRESS, related_state_id="S5")]
    assert all(isinstance(r, Relation) for r in relations)
    assert notes == ["relation to S5 normalized from 'branch' to 'progress'"]


@pytest.mark.parametrize(
    ("proposed", "fragments"),
    [
        (
            [_arg("S6")],
            ["relation to S6 is a self-reference", "relate the draft to earlier committed states"],
        ),
        ([_arg("S5"), _arg("S6", "invalidate")], ["relation to S6 is a self-reference"]),
        (
            [_arg("S9")],
            ["relation to S9: no committed state has that id", "use an id from the committed-state index"],
        ),
        ([_arg("S4", "branch")], ["relation to S4: no committed state has that id"]),  # abandoned id
        (
            [_arg("S2", "invalidate"), _arg("S2")],
            ["S2 listed both as invalidated and as inherited", "keep one relation per upstream state"],
        ),
        (
            [
                _arg("S3", "combine"),
                _arg("S1", "invalidate"),
                _arg("S1", "progress"),
                _arg("S3", "invalidate"),
            ],
            ["S1, S3 listed both as invalidated and as inherited"],
        ),
        ([_arg(None, "progress")], ["a 'progress' relation needs related_state_id"]),
        ([_arg(None, "invalidate")], ["a 'invalidate' relation needs related_state_id, e.g. 'S2'"]),
    ],
)
def test_invalid_relations_raise(proposed, fragments):
    with pytest.raises(ActionError) as info:
        _norm(proposed)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message


def test_relation_arg_rejects_malformed_ids():
    with pytest.raises(ValueError, match="not of the form S<positive integer>"):
        RelationArg(related_state_id="state2")
