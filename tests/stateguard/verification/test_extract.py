"""Deterministic requirement extraction: what each phrase becomes, and what it must not become."""

from __future__ import annotations

import pytest

from stateguard.verification.extract import definition_term, extract
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, resolve_column

VOCAB = Vocabulary(
    tables={
        "penguins": {
            "species": ColumnInfo(kind="text", values=["Adelie", "Chinstrap", "Gentoo"]),
            "island": ColumnInfo(kind="text", values=["Biscoe", "Dream", "Torgersen"]),
            "sex": ColumnInfo(kind="text", values=["female", "male"]),
            "bill_length_mm": ColumnInfo(kind="num"),
            "body_mass_g": ColumnInfo(kind="num"),
            "year": ColumnInfo(kind="num"),
        }
    }
)


def of(kind: Kind, reqs: list[Requirement]) -> list[Requirement]:
    return [r for r in reqs if r.kind is kind]


@pytest.mark.parametrize(
    ("question", "op", "value", "subject"),
    [
        ("An hour is windy when the wind speed is at least 13 mph.", ">=", 13.0, ["wind", "speed"]),
        ("Keep countries with a population of at least 1,200,000 people.", ">=", 1_200_000.0, ["population"]),
        ("How many orders are rated above 4.0?", ">", 4.0, ["rated"]),
        ("How many orders under 20 are there?", "<", 20.0, []),
        ("Keep orders with a price under 20.", "<", 20.0, ["price"]),
        ("Count products excluding those with a rating below 3.", ">=", 3.0, ["rating"]),
        (
            "Keep flights of at least 1600 miles.",
            ">=",
            1600.0,
            [],
        ),  # "flights" are the rows, not an attribute
        ("Keep the stations with 5 or more readings.", ">=", 5.0, []),
    ],
)
def test_comparisons(question: str, op: str, value: float, subject: list[str]) -> None:
    found = of(Kind.COMPARISON, extract(question))
    assert [(r.op, r.value, r.subject) for r in found] == [(op, value, subject)]


def test_range_year_and_percent() -> None:
    reqs = of(Kind.COMPARISON, extract("In 1972, keep growth between 10% and 25%."))
    assert {(r.op, r.value, r.upper, r.percent) for r in reqs} == {
        (">=", 10.0, 25.0, True),
        ("==", 1972.0, None, False),
    }
    assert of(Kind.COMPARISON, extract("Report it rounded to 2 decimal places.")) == []


def test_group_size_bound_is_a_count() -> None:
    (req,) = of(Kind.COMPARISON, extract("Keep only species-year groups with at least 9 birds."))
    assert req.function == "count" and req.subject == []


def test_scope_needs_the_data_vocabulary_and_reads_exclusions() -> None:
    question = "Keep the Gentoo penguins on Dream island, excluding male birds."
    assert of(Kind.SCOPE, extract(question)) == []
    scopes = {r.columns[0]: (r.values, r.exclude) for r in of(Kind.SCOPE, extract(question, vocab=VOCAB))}
    assert scopes == {"species": (["Gentoo"], False), "island": (["Dream"], False), "sex": (["male"], True)}


@pytest.mark.parametrize(
    ("question", "scopes"),
    [
        ("Leave Biscoe aside. What is the mean body mass?", {"island": (["Biscoe"], True)}),
        (
            "Set Dream and Torgersen aside: what is the mean body mass?",
            {"island": (["Dream", "Torgersen"], True)},
        ),
        ("Keep Biscoe out of it. What is the mean body mass?", {"island": (["Biscoe"], True)}),
        ("Bring Biscoe back. What is the mean body mass?", {}),  # a value returns: no scope
        ("How many penguins outside Biscoe are there?", {"island": (["Biscoe"], True)}),
        ("On Biscoe, leave the males aside.", {"island": (["Biscoe"], False)}),  # the frame holds males only
    ],
)
def test_a_value_inside_an_exclusion_frame_is_left_out(question: str, scopes: dict) -> None:
    found = {r.columns[0]: (r.values, r.exclude) for r in of(Kind.SCOPE, extract(question, vocab=VOCAB))}
    assert {k: v for k, v in found.items() if k != "sex"} == scopes


def test_compared_alternatives_are_not_a_scope() -> None:
    assert of(Kind.SCOPE, extract("Which is heavier on average, Adelie or Gentoo?", vocab=VOCAB)) == []


def test_not_null_aggregation_share_grouping_join_order() -> None:
    reqs = extract(
        "For male penguins with a recorded body mass, compute the median bill length per species "
        "and year. Report `mean_mass_g` and `n_groups`.",
        vocab=VOCAB,
    )
    assert [r.subject for r in of(Kind.NOT_NULL, reqs)] == [["body", "mass"]]
    assert {(r.function, tuple(r.subject)) for r in of(Kind.AGGREGATION, reqs)} == {
        ("median", ("bill", "length")),
        ("mean", ("mass", "g")),
    }
    assert [r.keys for r in of(Kind.GROUPING, reqs)] == [["species", "year"]]
    # a row condition on a quantity the data does not hold parses only in part: it abstains
    partial = extract("Keep the penguins with a flipper length of at least 200.", vocab=VOCAB)
    assert of(Kind.COMPARISON, partial) == []
    assert of(Kind.COMPARISON, extract("Keep the penguins with a bill length of at least 40.", vocab=VOCAB))
    assert of(Kind.OUTPUT, reqs)[0].fields == ["mean_mass_g", "n_groups"]
    share = of(
        Kind.SHARE, extract("What share of all delayed flights does each carrier have? Report `share_pct`.")
    )
    assert share and share[0].fields == ["share_pct"] and share[0].percent
    assert of(Kind.SHARE, extract("Which 5 carriers have the largest shares of delays? Report `top`.")) == []
    join = of(
        Kind.JOIN,
        extract("Join the orders with customers on customer_id, keeping orders without a customer."),
    )
    assert [(r.how, r.keys) for r in join] == [("left", ["customer_id"])]
    (order,) = of(Kind.ORDER, extract("Which 3 carriers have the largest shares of those delays?"))
    assert (order.k, order.descending) == (3, True)


def test_per_capita_is_not_grouping_and_rounding_prefers_the_question() -> None:
    reqs = extract(
        "Compute GDP per capita growth, rounded to 3 decimal places.", context="Round to 2 decimal places."
    )
    assert of(Kind.GROUPING, reqs) == []
    assert [r.decimals for r in of(Kind.ROUNDING, reqs)] == [3]


def test_definitions_and_column_resolution() -> None:
    assert definition_term("An hour at LGA is windy when the wind speed is at least 18 mph.") == "windy"
    assert definition_term("Call a Gentoo penguin heavy when its body mass is at least 5000 g.") == "heavy"
    assert definition_term("Keep flights of at least 1600 miles.") is None
    columns = ["dep_delay", "arr_delay", "lifeExp", "gdpPercap", "flipper_length_mm", "body_mass_g", "flight"]
    assert resolve_column(["departure", "delay"], columns) == ["dep_delay"]
    assert resolve_column(["life", "expectancy"], columns) == ["lifeExp"]
    assert resolve_column(["GDP", "per", "capita"], columns) == ["gdpPercap"]
    assert resolve_column(["mass"], columns) == [] and resolve_column(["mass"], columns, partial=True) == [
        "body_mass_g"
    ]


def test_schema_refuses_incomplete_requirements() -> None:
    with pytest.raises(ValueError, match="comparison requirement needs op, value"):
        Requirement(kind=Kind.COMPARISON, text="above")
    with pytest.raises(ValueError, match="value <= upper"):
        Requirement(kind=Kind.COMPARISON, text="between", op=">=", value=5, upper=1)


def test_a_value_the_data_lost_earlier_is_history_not_scope() -> None:
    q = "Compare with the island table of turn 2 (built before Dream was left out): what is the difference?"
    assert of(Kind.SCOPE, extract(q, vocab=VOCAB)) == []
    assert [
        r.values
        for r in of(
            Kind.SCOPE, extract("Among the Dream penguins, what is the mean bill length?", vocab=VOCAB)
        )
    ] == [["Dream"]]


@pytest.mark.parametrize(
    "question",
    [
        "How many penguins are both heavier than their species mean and male?",
        "How many penguins are above the mean body mass?",
    ],
)
def test_a_mean_used_as_a_reference_is_not_the_statistic_asked(question: str) -> None:
    assert of(Kind.AGGREGATION, extract(question)) == []


def test_the_statistic_asked_is_still_read_next_to_a_reference() -> None:
    found = of(
        Kind.AGGREGATION,
        extract("How many penguins are above the mean body mass, and what is the mean bill length of those?"),
    )
    assert [(r.function, r.subject) for r in found] == [("mean", ["bill", "length"])]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What was the highest nonfarm level before 2010?", [("<", 2010.0, ["year"])]),
        ("What is the total nonfarm change summed over 2015?", [("==", 2015.0, ["year"])]),
        ("Average the rainfall over 2000-2014.", []),  # a span, not a bound
        ("Keep the sites with an elevation above 2000.", [(">", 2000.0, ["elevation"])]),  # not a time word
    ],
)
def test_a_year_after_a_time_word_bounds_time(
    question: str, expected: list[tuple[str, float, list[str]]]
) -> None:
    assert [(r.op, r.value, r.subject) for r in of(Kind.COMPARISON, extract(question))] == expected


def test_a_code_in_capitals_is_not_an_english_word() -> None:
    vocab = Vocabulary(
        tables={
            "airports": {
                "state": ColumnInfo(kind="text", values=["IN", "OR", "TX"]),
                "country": ColumnInfo(kind="text", values=["USA"]),
            }
        }
    )
    assert of(Kind.SCOPE, extract("How many airports are in scope, in the USA?", vocab=vocab)) == [
        Requirement(kind=Kind.SCOPE, text="USA", values=["USA"], columns=["country"])
    ]
    found = of(Kind.SCOPE, extract("Keep the airports in IN.", vocab=vocab))
    assert [(r.values, r.columns) for r in found] == [(["IN"], ["state"])]


@pytest.mark.parametrize(
    ("question", "keys"),
    [
        ("For each model year, what percentage of cars are efficient?", [["model year"]]),
        ("For each year, how many jobs were there?", [["year"]]),
        ("What is the mean generation of each source over the whole period?", [["source"]]),
        ("Compute the mean rating per carrier and month.", [["carrier", "month"]]),
    ],
)
def test_grouping_keys_in_words(question: str, keys: list[list[str]]) -> None:
    assert [r.keys for r in of(Kind.GROUPING, extract(question))] == keys


@pytest.mark.parametrize(
    ("question", "how"),
    [
        ("Join it to the airports in scope, keeping only airports whose state has a region.", "inner"),
        ("Join it to `annual` so that every year is labelled (recession or not).", "left"),
        (
            "Put the two series side by side, matching months on the date (keep only months where both have a price).",
            "inner",
        ),
        ("Attach the island summary to the colony list, keeping every listed island.", "left"),
        ("Merge the hub list with the counts, retaining all hubs.", "left"),
        ("Link the regions to their sales, keeping each region.", "left"),
    ],
)
def test_join_phrasing(question: str, how: str) -> None:
    assert [r.how for r in of(Kind.JOIN, extract(question))] == [how]


def test_outside_a_place_does_not_negate_a_later_bound() -> None:
    (req,) = of(Kind.COMPARISON, extract("How many countries outside Oceania gained at least 25 years?"))
    assert (req.op, req.value) == (">=", 25.0)


def test_a_possessive_after_each_is_no_grouping() -> None:
    question = "Add each island's total mass, and count the birds per species."
    assert [r.keys for r in of(Kind.GROUPING, extract(question))] == [["species"]]


def test_keeping_all_without_a_join_verb_names_only_the_kept_entries() -> None:
    """No join verb, so no join is asserted: the entries kept whole are recorded, and only a join
    the code makes with a side that reads stations can be held to it (bind_shape.join)."""
    (req,) = of(Kind.JOIN, extract("Keep all stations, and report the mean rainfall."))
    assert (req.how, req.subject) == ("left", ["stations"])


@pytest.mark.parametrize(
    ("clause", "noun"),
    [
        (
            "Put the bands in a table and count the countries in each band, keeping every band even when none",
            "band",
        ),
        ("match every district to its grade, listing every grade even when no district falls in it", "grade"),
        ("the lagging districts per grade, every grade listed with zero where there are none", "grade"),
        (
            "attach the respondents to the codebook so that every label is listed even without respondents",
            "label",
        ),
        ("the number of faint images per label word, all eleven labels listed", "labels"),
        ("combine it with the profile so that every company on the list is kept", "company"),
        ("make `lga_airlines` with every airline in the directory and its late flights", "airline"),
        ("How many flights did every carrier fly?", None),  # no keep verb beside the entries
        ("keep every band and list every region", None),  # two kept nouns: which side is not known
    ],
)
def test_the_entries_a_clause_keeps_whole(clause: str, noun: str | None) -> None:
    reqs = of(Kind.JOIN, extract(clause))
    assert [r.subject[:1] for r in reqs if r.subject] == ([[noun]] if noun else [])


def test_years_compared_are_a_scope_and_every_value_is_no_scope() -> None:
    assert [
        (r.kind, r.values)
        for r in extract("What is the mean yield in 1931 and in 1932?")
        if r.kind in (Kind.SCOPE, Kind.COMPARISON)
    ] == [(Kind.SCOPE, ["1931", "1932"])]
    question = "What share of the birds of each species (Adelie, Chinstrap, Gentoo) is female?"
    assert [r for r in of(Kind.SCOPE, extract(question, vocab=VOCAB)) if r.columns == ["species"]] == []


def test_the_noun_after_a_bound_is_its_subject_when_none_precedes() -> None:
    (req,) = of(Kind.COMPARISON, extract("Among year-months with at least 5 warm days, what is the mean?"))
    assert (req.op, req.value, req.subject) == (">=", 5.0, ["warm", "days"])
    assert resolve_column(req.subject, ["warm_days", "wet_days", "year"]) == ["warm_days"]
    (count,) = of(Kind.COMPARISON, extract("Which groups have at least 9 birds?"))
    assert count.function == "count" and count.subject == []


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("With the current `jobs`, recompute the yearly averages.", [["jobs"]]),
        ("With the current clean share, in how many years was it above 20 percent?", [["clean", "share"]]),
        ("Under the current definition, how many cars are efficient?", []),
        ("What is the mean of the current stations' mean yields?", []),
    ],
)
def test_the_current_version_of_a_named_table(question: str, subject: list[list[str]]) -> None:
    assert [r.subject for r in of(Kind.SOURCE, extract(question))] == subject


@pytest.mark.parametrize(
    ("subject", "columns", "expected"),
    [
        (["calendar", "year"], ["yr", "qtr", "vol"], ["yr"]),
        (["quarter"], ["yr", "qtr"], ["qtr"]),
        (["index"], ["idx", "mo"], ["idx"]),
        (["month"], ["mo", "yr"], ["mo"]),
        (["mean", "rate"], ["yr", "rate"], ["rate"]),  # a short form names only its own word
    ],
)
def test_column_short_forms_bind_to_the_words_they_stand_for(
    subject: list[str], columns: list[str], expected: list[str]
) -> None:
    assert resolve_column(subject, columns) == expected
