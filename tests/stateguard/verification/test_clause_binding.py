"""Values bind only where the clause's parse accounts for them (issue 29): exact case, the words
around them (exclusion, restoration) and operators that are not groupings."""

from stateguard.verification.extract import extract, groupings, scopes
from stateguard.verification.requirements import Kind
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

VOCAB = Vocabulary(
    tables={
        "raw": {
            "type": ColumnInfo(kind="text", values=["Homicide", "Death", "Not riot-related"]),
            "death_date": ColumnInfo(kind="text"),
            "neighborhood": ColumnInfo(kind="text"),
        },
        "trials": {
            "site": ColumnInfo(kind="text", values=["Grand Rapids", "Morris", "Crookston"]),
            "yield": ColumnInfo(kind="num"),
        },
    }
)


def _scopes(text: str) -> list[tuple[list[str], bool]]:
    return [(r.values, r.exclude) for r in scopes(text, VOCAB, None)]


def test_a_capitalised_category_is_not_the_common_noun() -> None:
    # "dates of death" names the death_date column; "a death" is any row. Neither is type = Death.
    assert _scopes("what are the first and last dates of death") == []
    assert _scopes("A death counts once") == []
    assert _scopes("Keep only the rows typed Death") == [(["Death"], False)]


def test_a_value_after_unless_is_left_out() -> None:
    assert _scopes('A death is riot-related unless the Times typed it "Not riot-related"') == [
        (["Not riot-related"], True)
    ]


def test_a_bare_not_does_not_negate_a_later_value() -> None:
    assert _scopes("Among sites not yet ranked, how did Morris do") == [(["Morris"], False)]


def test_a_value_brought_back_is_no_scope() -> None:
    assert _scopes("Bring Grand Rapids back into the trials") == []
    assert _scopes("Restore Grand Rapids and recompute the yields") == []
    assert _scopes("Only Grand Rapids, please") == [(["Grand Rapids"], False)]


def test_divided_by_is_an_operator_not_a_grouping() -> None:
    assert groupings("Compute the phenol ratio, flavanoids divided by total phenols") == []
    assert [r.keys for r in groupings("the ratio of flavanoids to phenols by cultivar")] == [["cultivar"]]


def test_a_question_with_all_of_these_keeps_only_what_binds() -> None:
    reqs = extract(
        "How many deaths does it list, in how many distinct neighborhoods, and what are the first "
        "and last dates of death?",
        vocab=VOCAB,
    )
    assert [r for r in reqs if r.kind is Kind.SCOPE] == []


def test_a_counted_category_is_not_the_turns_scope() -> None:
    assert _scopes("How many deaths were typed Homicide, and what is the median age") == []
    assert _scopes("the number of deaths labelled Homicide") == []
    assert _scopes("How many Homicide deaths had an address") == [(["Homicide"], False)]


def test_by_after_a_join_verb_is_the_join_key() -> None:
    assert groupings("Record the phases in a table and join it to `monthly` by date") == []
    assert [r.keys for r in groupings("join the phases, then give the mean by phase")] == [["phase"]]


def test_a_not_elsewhere_does_not_flip_a_bound() -> None:
    from stateguard.verification.extract import comparisons

    text = "(on the scope, not rebuilt after the rollback) with the flag of turn 5 (longitude below -100)"
    assert [(r.op, r.value) for r in comparisons(text)] == [("<", -100.0)]
    assert [(r.op, r.value) for r in comparisons("airports not below 40 degrees")] == [(">=", 40.0)]
    assert [(r.op, r.value) for r in comparisons("excluding flights shorter than 500 miles")] == [
        (">=", 500.0)
    ]


def test_a_share_or_a_bare_count_of_a_category_is_not_the_turns_scope() -> None:
    assert _scopes("What percentage of them is Homicide, and the mean age") == []
    assert _scopes("How many are Death and how many Homicide, and the median age over all") == []


def test_a_segment_that_does_not_parse_whole_abstains() -> None:
    vocab = Vocabulary(tables={"flagged": {"bmi": ColumnInfo(kind="num"), "score": ColumnInfo(kind="num")}})
    narrated = "The clinic admits a patient for review once the BMI is at least 30."
    assert [r for r in extract(narrated, vocab=vocab) if r.kind is Kind.COMPARISON] == []
    plain = "Keep the rows with a BMI of at least 30."
    assert [(r.op, r.value) for r in extract(plain, vocab=vocab) if r.kind is Kind.COMPARISON] == [
        (">=", 30.0)
    ]
    assert extract(narrated)  # without the data's vocabulary nothing is bound: the words stay as written


def test_bounds_joined_by_or_are_a_disjunction_and_abstain() -> None:
    from stateguard.verification.extract import comparisons

    text = "a patient is at risk when the BMI is at least 30 or the blood pressure is 110 mm Hg or more"
    assert comparisons(text) == []
    assert [(r.op, r.value) for r in comparisons("flights of at least 500 miles and below 2000 miles")] == [
        (">=", 500.0),
        ("<", 2000.0),
    ]


def test_a_treat_as_sentence_defines_a_term() -> None:
    from stateguard.verification.extract import definition_term

    assert definition_term("The clinic treats a patient as at risk when the BMI is at least 30.") == "at risk"
    assert definition_term("We count a day as hot if it reached 30 degrees.") == "hot"
    assert definition_term("The clinic treats patients in the morning.") is None


def test_a_definition_frame_leaves_only_its_condition_to_parse() -> None:
    """Who calls, which rows and the term before "when" are the sentence's form; the condition after it
    must still parse whole, and a frame that negates or names another version of the rule does not count."""
    vocab = Vocabulary(tables={"flagged": {"bmi": ColumnInfo(kind="num"), "score": ColumnInfo(kind="num")}})

    def bounds(text: str) -> list[tuple[str | None, float | None]]:
        return [(r.op, r.value) for r in extract(text, vocab=vocab) if r.kind is Kind.COMPARISON]

    assert bounds("The clinic treats a patient as at risk when the BMI is at least 30.") == [(">=", 30.0)]
    assert bounds("Our health desk calls a patient obese in a given year when the BMI is at least 30.") == [
        (">=", 30.0)
    ]
    assert (
        bounds("The clinic treats a patient as at risk when the BMI of the patient's partner is at least 30.")
        == []
    )
    assert bounds("The withdrawn rule treats a patient as at risk when the BMI is at least 30.") == []
    assert bounds("The clinic does not treat a patient as at risk when the BMI is at least 30.") == []


def test_the_words_right_after_a_number_are_its_unit() -> None:
    """ "8,000 miles per capita", "100 mg/dl", "4,500 g": a unit (and a rate's denominator) names no
    attribute, so it need not bind; a word further on still must."""
    vocab = Vocabulary(tables={"t": {"miles": ColumnInfo(kind="num"), "sugar": ColumnInfo(kind="num")}})

    def bounds(text: str) -> list[tuple[str | None, float | None]]:
        return [(r.op, r.value) for r in extract(text, vocab=vocab) if r.kind is Kind.COMPARISON]

    assert bounds("How many rows have a sugar above 100 mg/dl?") == [(">", 100.0)]
    assert bounds("How many rows have more than 8,000 miles per capita?") == [(">", 8000.0)]
    assert bounds("How many rows have a sugar above 100 mg/dl in fasting patients?") == []


def test_a_sentence_ending_in_a_number_ends_its_segment() -> None:
    from stateguard.verification.extract import clauses

    assert clauses("The bar is at least 70. Flag that in a column. And 2.5 or 3.") == [
        "The bar is at least 70",
        "Flag that in a column",
        "And 2.5 or 3",
    ]


def test_bounds_no_row_can_meet_together_are_bands_not_filters() -> None:
    from stateguard.verification.extract import comparisons

    banding = "rural when under 50 percent urban, mixed from 50 up to under 75, urban at 75 or more"
    assert comparisons(banding) == []
    # bounds on two quantities, or two bounds that overlap, stay
    assert [r.text for r in comparisons("a pulse below 55 and more than 150 sit-ups")] == [
        "below 55",
        "more than 150",
    ]
    assert [r.text for r in comparisons("a price above 40 and below 90")] == ["above 40", "below 90"]


def test_a_percentage_of_another_quantity_is_no_bound_on_its_own() -> None:
    from stateguard.verification.extract import comparisons

    assert comparisons("gross investment is at least 10 percent of the firm's market value") == []
    assert [r.value for r in comparisons("a return of at least 10 percent")] == [10.0]


def test_a_rule_in_a_turns_context_must_parse_whole_once_the_data_is_known() -> None:
    from stateguard.verification.extract import context_requirements

    vocab = Vocabulary(tables={"fert": {"tfr": ColumnInfo(kind="num"), "code": ColumnInfo(kind="text")}})
    rule = "From now on a country is low when its tfr is under 2.1."
    assert [r.value for r in context_requirements(rule, vocab, ["fert"])] == [2.1]
    narrated = "From now on a country is low when its tfr averaged with the neighbouring years is under 2.1."
    assert context_requirements(narrated) != []  # words only, before the data is known
    assert context_requirements(narrated, vocab, ["fert"]) == []
