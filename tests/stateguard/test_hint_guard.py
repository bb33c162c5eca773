"""Repair hints may explain a fault in words; they may not carry code or leak computed values."""

from __future__ import annotations

import pytest

from stateguard.hint_guard import HintRejected, check_repair_hint, find_code, find_leaked_value

TASK = "Report the 2021 profit margin per region for the top 5 regions, rounded to 3 decimals."
PROTECTED = [12.3456, 0.457, 1234567, "north: 88.25", {"nested": [41.9]}]


# ----------------------------------------------------------------------------- accepted
@pytest.mark.parametrize(
    "hint",
    [
        "The shares are shown with one decimal while the question asks for three-decimal rounding.",
        "The margin was computed from revenue@S1, which S4 replaced.",
        "The filter keeps rows from 2020 although the task asks for 2021 only.",
        "Only the top 5 regions were requested but the list has more.",
        "Three of the 3 regional totals are missing.",
        "The total (computed before deduplication) double-counts repeat orders.",
        "The variable total_sales (the sum over all rows) includes returns.",
        "Step 4 (the merge) drops customers that have no orders.",
        "The join dropped customers [those without orders] silently.",
        "Dates are parsed as text (e.g. '2020-01-05'), so the ordering is lexical.",
        "The variance divides by n rather than n - 1.",
        "The value of x = the total divided by count is wrong.",
        "Import duties were ignored in the cost figures.",
        "From the summary table it is clear that the totals differ.",
        "The condition year > 2020 excludes the year the task asks about.",
        "print statements were used instead of checking the data.",
        "The ratio is 3 times too large.",
        # ordinary English parentheticals: a word followed by "(...)" is not a call
        "The average (mean) was taken over all stores, not only open ones.",
        "Prices are in cents (not dollars) while costs are in dollars.",
        "The answer for region A (north) mixes units.",
        "Values are in thousands (k) but are compared with raw units.",
    ],
)
def test_plain_explanations_are_accepted(hint):
    assert find_code(hint) is None
    check_repair_hint(hint, ["margin", "revenue@S1"], protected_values=PROTECTED, allowed_text=TASK)


@pytest.mark.parametrize(
    "hint",
    [
        "The task asks for 2021 but the result covers 2020 as well.",  # 2021 is in the task text
        "Only 3 decimals are allowed.",  # 3 is in the task text
        "More than 5 regions are listed.",
        "Two of the 10 checks failed.",  # small counts are always fine
        "The margin is off by a factor of 100.",  # not a protected value
        "The share is reported with 2 decimals.",
    ],
)
def test_numbers_that_do_not_leak_are_accepted(hint):
    assert find_leaked_value(hint, PROTECTED + [2021, 3, 10, 5], allowed_text=TASK) is None
    check_repair_hint(hint, ["margin"], protected_values=PROTECTED + [2021, 3, 10, 5], allowed_text=TASK)


def test_no_protected_values_means_no_leak():
    assert find_leaked_value("the answer is 12.3456", []) is None
    assert find_leaked_value("the answer is 12.3456", [float("nan"), True]) is None


# ----------------------------------------------------------------------------- rejected: code
@pytest.mark.parametrize(
    ("hint", "code"),
    [
        ("Use this:\n```python\nratio = a / b\n```", "``` code block"),
        ("~~~\nratio = a / b\n~~~", "~~~ code block"),
        ("The filter is wrong:\n    df = df[df.year > 2020]", "df = df[df.year > 2020]"),
        ("The filter is wrong:\n\tdf = df.dropna()", "df = df.dropna()"),
        ("df = df[df.year > 2020]", "df = df[df.year > 2020]"),
        ("The margin is imprecise; use round(ratio, 3) instead.", "round(ratio, 3)"),
        ("set x = 5", "x = 5"),
        ("import pandas", "import pandas"),
        ("from pandas import read_csv", "from pandas import read_csv"),
        ("Sort the rows by lambda row: row.total", "lambda row: row.total"),
        ("Compute it with `len(df)` instead.", "len(df)"),
        ("The column `df['year']` is the wrong one.", "df['year']"),
        ("The loop forgets total += 1.", "total += 1."),
        ("def fix(df): return df", "def fix(df): return df"),
        ("return total / count", "return total / count"),
        ("df.loc[df.year > 2020, 'ok'] = True", "df.loc[df.year > 2020, 'ok'] = True"),
        ("Filter with df[df.region == 'north'] first.", "df[df.region == 'north']"),
        ("Convert via pd.to_datetime(df.date) before sorting.", "pd.to_datetime(df.date)"),
        ("The total (computed via sum(values)) is wrong.", "sum(values)"),
    ],
)
def test_code_is_rejected(hint, code):
    assert find_code(hint) == code
    with pytest.raises(HintRejected) as info:
        check_repair_hint(hint, ["ratio"])
    message = str(info.value)
    assert message.startswith("REPAIR rejected: error_hint.faulty_reasoning contains code")
    assert repr(code) in message


@pytest.mark.parametrize(
    "hint",
    [
        "The aggregation df.groupby('a').sum() counts duplicates.",
        "Use df.sort_values('x', ascending=False).head(3) to rank them.",
    ],
)
def test_chained_method_calls_inside_a_sentence_are_rejected(hint):
    assert find_code(hint) is not None
    with pytest.raises(HintRejected, match="error_hint.faulty_reasoning contains code"):
        check_repair_hint(hint, ["grouped"])


@pytest.mark.parametrize(
    "hint",
    [
        "Use ratio = revenue / cost when computing margins.",
        "Sort by lambda row: row.total before ranking.",
        "Add import pandas as pd before the merge.",
        "Set x = 5. Then round the result.",
    ],
)
def test_code_followed_by_more_prose_is_rejected(hint):
    assert find_code(hint) is not None


def test_code_in_error_variables_names_the_item():
    with pytest.raises(HintRejected) as info:
        check_repair_hint("The ratio is stale.", ["ratio", "df['x'].mean()"])
    assert "error_hint.error_variables[1] contains code" in str(info.value)


def test_plain_variable_names_are_fine():
    check_repair_hint("The ratio is stale.", ["ratio", "revenue@S2", "margin_by_region"])


# ----------------------------------------------------------------------------- rejected: leaked values
@pytest.mark.parametrize(
    ("hint", "leaked"),
    [
        ("The ratio should be 12.35, not what was reported.", "12.35"),
        ("The correct value is 12.3456.", "12.3456"),
        ("It should read 12.346 instead.", "12.346"),
        ("The share is actually 45.7%.", "45.7%"),
        ("The share is actually 46%.", "46%"),
        ("The share should be 0.457.", "0.457"),
        ("The row count should be 1,234,567.", "1,234,567"),
        ("The row count should be 1234567.", "1234567"),
        ("North should be 88.25.", "88.25"),  # number inside a protected string
        ("The nested figure is 41.9.", "41.9"),  # number inside a protected container
    ],
)
def test_leaked_values_are_rejected(hint, leaked):
    assert find_leaked_value(hint, PROTECTED, allowed_text=TASK) == leaked
    with pytest.raises(HintRejected) as info:
        check_repair_hint(hint, ["ratio"], protected_values=PROTECTED, allowed_text=TASK)
    message = str(info.value)
    assert f"error_hint.faulty_reasoning states the value {leaked}" in message
    assert "without giving values or answers" in message


def test_different_precision_is_not_a_leak():
    # 12.34 is neither 12.3456 nor any rounding of it
    assert find_leaked_value("the ratio is not 12.34", [12.3456]) is None
    assert find_leaked_value("the mean is 4.5", [-4.5]) is None


def test_allowed_text_exempts_large_numbers():
    assert find_leaked_value("in 2020 the total changed", [2020]) == "2020"
    assert find_leaked_value("in 2020 the total changed", [2020], allowed_text="sales in 2020") is None


def test_leak_in_error_variables_names_the_item():
    # inside an identifier the digits are part of a name, not a stated value
    assert find_leaked_value("margin_12.35", [12.3456]) is None
    with pytest.raises(HintRejected) as info:
        check_repair_hint("The margin is stale.", ["margin", "margin 12.35"], protected_values=[12.3456])
    assert "error_hint.error_variables[1] states the value 12.35" in str(info.value)


def test_code_is_reported_before_values():
    with pytest.raises(HintRejected, match="contains code"):
        check_repair_hint("use round(x, 2) to get 12.35", ["x"], protected_values=[12.3456])
