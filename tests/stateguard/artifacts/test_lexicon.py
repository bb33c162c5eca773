"""The lexicon is the one table of question words; every reader builds its patterns from it."""

import re

from stateguard.artifacts.lexicon import LEXICON


def test_no_phrase_states_two_ops() -> None:
    for position in ("prefix", "postfix"):
        phrases = LEXICON.comparator_phrases(position=position)  # type: ignore[arg-type]
        assert phrases, position
        for phrase in phrases:
            assert len(LEXICON.ops_of(phrase, position)) == 1, phrase  # type: ignore[arg-type]


def test_pattern_prefers_the_longest_phrase() -> None:
    pattern = re.compile(LEXICON.pattern(["less", "no less than", "less than"]))
    assert pattern.match("no less than 5").group(0) == "no less than"
    assert re.fullmatch(LEXICON.pattern(["at least"]), "at   least")


def test_lookups() -> None:
    assert LEXICON.ops_of("No  fewer than") == (">=",)
    assert LEXICON.statistic("Average") == "mean"
    assert LEXICON.is_temporal("before") and not LEXICON.is_temporal("below")
    assert "at least" in LEXICON.comparator_phrases(core=True)
    assert "over" not in LEXICON.comparator_phrases(core=True)
    assert "or more" in LEXICON.direction_words() and "before" not in LEXICON.direction_words()


def test_every_reader_sees_a_phrase_only_the_lexicon_lists() -> None:
    # "no fewer than" was known to the extractor only; now the teacher's constraints, the
    # screening of interventions and the extractor all read it from the lexicon.
    from stateguard.artifacts.mistakes import _DIRECTION
    from stateguard.verification.extract import comparisons
    from synthesis.teacher.requirements import _conditions

    text = "stations with no fewer than 12 readings"
    assert _DIRECTION.search(text)
    assert _conditions(text) == ["stations with no fewer than 12 readings"]
    assert [(r.op, r.value) for r in comparisons(text)] == [(">=", 12.0)]


def test_stated_cutoffs_and_routing_read_the_core_comparators() -> None:
    from stateguard.policies.checks import stated_thresholds
    from stateguard.policies.hierarchical import SEMANTIC

    assert stated_thresholds("keep rows with at least 3 and below 40%") == [(3.0, False), (40.0, True)]
    assert SEMANTIC.search("drop the outliers") and SEMANTIC.search("limited to Gentoo")
    assert not SEMANTIC.search("How many orders are there?")


def test_the_statistics_a_text_names() -> None:
    from stateguard.artifacts.lexicon import LEXICON

    assert LEXICON.statistics_in("their average size, and the median count") == {"mean", "median"}
    assert LEXICON.statistics_in("the middle value of the totals") == {"median"}
    # a word inside another word names nothing ("meant", "meaning")
    assert LEXICON.statistics_in("what is meant by meaning") == set()
