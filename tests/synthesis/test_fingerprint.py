"""Tests for synthesis.fingerprint (paper Eq. 23): row-order invariance, content sensitivity,
the documented canonicalization rules, input equivalence, and determinism."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from synthesis import fingerprint as fpmod
from synthesis.fingerprint import CanonPolicy, fingerprint, fingerprint_scalar, row_digests
from synthesis.fingerprint_bench import make_table, naive_fingerprint

UTC = dt.UTC
REPO = Path(__file__).resolve().parents[2]


def col(values, typ=None):
    return pa.table({"c": pa.array(values, type=typ)})


def fp1(values, typ=None, **kw):
    """Fingerprint of a one-column table named 'c'."""
    return fingerprint(col(values, typ), **kw)


# ----------------------------------------------------------------------------------------------
# Random small tables (hypothesis)
# ----------------------------------------------------------------------------------------------
_I64 = st.integers(-(2**63), 2**63 - 1)
KINDS = {
    "int": (pa.int64(), st.one_of(st.none(), _I64, st.integers(-3, 3))),
    "float": (
        pa.float64(),
        st.one_of(
            st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.1, 0.3, -0.0, 5.0])
        ),
    ),
    "str": (
        pa.string(),
        st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["", "NULL", "a", "ab", "abcdefgh"])),
    ),
    "bool": (pa.bool_(), st.one_of(st.none(), st.booleans())),
    "date": (pa.date32(), st.one_of(st.none(), st.dates())),
    "ts": (pa.timestamp("us", tz="UTC"), st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)))),
}


@st.composite
def tables(draw, min_rows=0):
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=5))
    n = draw(st.integers(min_rows, 12))
    cols = {}
    for j, kind in enumerate(kinds):
        typ, values = KINDS[kind]
        cols[f"{kind}{j}"] = pa.array(draw(st.lists(values, min_size=n, max_size=n)), type=typ)
    return pa.table(cols), kinds


def _changed(kind, value):
    """A value whose canonical form surely differs from `value`'s."""
    if kind == "int":
        return 0 if value is None else (value + 1 if value < 2**63 - 1 else value - 1)
    if kind == "float":
        if value is None or value != value:  # NULL, or NaN (NULL by default)
            return 1.5
        if value in (float("inf"), float("-inf")):
            return -value
        return 1.0 if value == 0 else value * 2  # a factor 2 survives any rounding; 2*big -> inf
    if kind == "str":
        return "" if value is None else value + "x"
    if kind == "bool":
        return False if value is None else not value
    if kind == "date":
        if value is None:
            return dt.date(2000, 1, 1)
        return value + dt.timedelta(days=1) if value < dt.date.max else value - dt.timedelta(days=1)
    if kind == "ts":
        if value is None:
            return dt.datetime(1970, 1, 1, tzinfo=UTC)
        step = dt.timedelta(microseconds=1)
        return value + step if value < dt.datetime.max.replace(tzinfo=UTC) - step else value - step
    raise AssertionError(kind)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(), seed=st.integers(0, 2**32 - 1))
def test_shuffle_invariance(data, seed):
    table, _ = data
    perm = np.random.default_rng(seed).permutation(table.num_rows)
    assert fingerprint(table.take(perm)) == fingerprint(table)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(min_rows=1), where=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)))
def test_single_change_sensitivity(data, where):
    table, kinds = data
    i, j = where[0] % table.num_rows, where[1] % table.num_columns
    values = table.column(j).to_pylist()
    values[i] = _changed(kinds[j], values[i])
    changed = table.set_column(j, table.field(j), pa.array(values, type=table.field(j).type))
    assert fingerprint(changed) != fingerprint(table)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables())
def test_matches_naive_per_row_reference(data):
    table, _ = data
    assert fingerprint(table) == naive_fingerprint(table)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(min_rows=1), k=st.integers(0, 10**6))
def test_duplicated_row_changes_hash(data, k):
    table, _ = data
    i = k % table.num_rows
    doubled = pa.concat_tables([table, table.slice(i, 1)])
    assert fingerprint(doubled) != fingerprint(table)


# ----------------------------------------------------------------------------------------------
# Single changes per column type, explicitly
# ----------------------------------------------------------------------------------------------
def test_single_change_in_each_column_type():
    base = make_table(50, seed=3)
    h = fingerprint(base)
    for j, name in enumerate(base.column_names):
        values = base.column(j).to_pylist()
        v = values[17]
        if name == "order_id":
            values[17] = v + 1
        elif name == "amount":
            values[17] = v + 0.01
        elif name == "customer":
            values[17] = v[:-1] + ("0" if v[-1] != "0" else "1")
        elif name == "returned":
            values[17] = not v
        elif name == "order_date":
            values[17] = v + dt.timedelta(days=1)
        elif name == "quantity":
            values[17] = None if v is not None else 1
        changed = base.set_column(j, base.field(j), pa.array(values, type=base.field(j).type))
        assert fingerprint(changed) != h, name


# ----------------------------------------------------------------------------------------------
# Floats
# ----------------------------------------------------------------------------------------------
def test_negative_zero_equals_zero_and_int_zero():
    assert fp1([-0.0]) == fp1([0.0]) == fp1([0], pa.int64())


def test_all_nans_equal_under_both_policies():
    payload_nan = np.array([0x7FF0000000000001, 0xFFF8000000000000], dtype=np.uint64).view(np.float64)
    keep = CanonPolicy(nan_is_null=False)
    for policy in (CanonPolicy(), keep):
        hashes = {fp1([x], pa.float64(), policy=policy) for x in [float("nan"), -np.nan, *payload_nan]}
        assert len(hashes) == 1
    # float32 NaN too
    assert fp1([np.float32("nan")], pa.float32(), policy=keep) == fp1([float("nan")], policy=keep)


def test_nan_vs_null_follows_policy():
    assert fp1([float("nan")]) == fp1([None], pa.float64()) == fp1([None], pa.string())
    keep = CanonPolicy(nan_is_null=False)
    assert fp1([float("nan")], policy=keep) != fp1([None], pa.float64(), policy=keep)
    # pandas input keeps NaN as NaN when the policy asks for it
    df = pd.DataFrame({"c": [np.nan]})
    assert fingerprint(df, policy=keep) == fp1([float("nan")], policy=keep)
    assert fingerprint(df) == fp1([None], pa.float64())


def test_infinities_distinct():
    hashes = {fp1([x]) for x in [float("inf"), float("-inf"), float("nan"), 1.7976931348623157e308, 0.0]}
    assert len(hashes) == 5


def test_rounding_policy_absorbs_float_noise():
    assert 0.1 + 0.2 != 0.3
    assert fp1([0.1 + 0.2]) == fp1([0.3])
    assert fp1([1 / 3]) == fp1([0.333333333333])  # 12 significant digits
    assert fp1([1.234567890124]) == fp1([1.23456789012])  # 13th digit rounds away
    assert fp1([1.23456789013]) != fp1([1.23456789012])  # 12th digit does not
    assert fp1([0.3]) != fp1([0.3000001])
    assert fp1([0.09999999999999999]) == fp1([0.1])  # renormalization across a decade
    assert fp1([4.9999999999999]) == fp1([5], pa.int64())
    assert fp1([1.234], policy=CanonPolicy(sig_digits=3)) == fp1([1.23], policy=CanonPolicy(sig_digits=3))


def test_tiny_and_huge_floats():
    assert fp1([1e-300]) != fp1([0.0])
    assert fp1([1e-300]) != fp1([2e-300])
    assert fp1([1e-300]) == fp1([1e-300 * (1 + 1e-14)])
    assert fp1([5e-324]) != fp1([0.0])
    assert fp1([5e-324]) != fp1([1e-323])
    assert fp1([1e308]) != fp1([float("inf")])
    assert fp1([-1e-300]) != fp1([1e-300])


def test_round_significant_is_decimal_rounding():
    rng = np.random.default_rng(5)
    f = np.concatenate(
        [
            [0.1 + 0.2, 2.675, 123456.7890123456, -9.99999999999951, 1e-11, 9.99e33],
            rng.choice([-1.0, 1.0], 2_000) * rng.uniform(1, 10, 2_000) * 10.0 ** rng.integers(-11, 34, 2_000),
        ]
    )
    got = fpmod._round_significant(f, 12)
    want = np.array([float(f"{x:.11e}") for x in f])  # Python's correctly rounded formatting
    np.testing.assert_array_equal(got, want)
    # outside 1e-11..1e34 the result may be 1 ulp from the nearest double, but stays rounded
    extreme = np.array([1e-300, 5e-324, 1.7976931348623157e308, 3.3e-200, 7.7e200])
    np.testing.assert_allclose(
        fpmod._round_significant(extreme, 12), [float(f"{x:.11e}") for x in extreme], rtol=3e-16
    )


def test_float32_compares_at_float32_precision():
    assert fp1([np.float32(0.1)], pa.float32()) == fp1([0.1])
    assert fp1([np.float32(5.0)], pa.float32()) == fp1([5], pa.int64())


# ----------------------------------------------------------------------------------------------
# Integers vs floats vs decimals vs booleans
# ----------------------------------------------------------------------------------------------
def test_integral_numbers_hash_equally_across_types():
    h = fp1([5, None, -7], pa.int64())
    for typ in (pa.int8(), pa.int16(), pa.int32(), pa.float64(), pa.float32()):
        assert fp1([5, None, -7], typ) == h, typ
    assert fp1([decimal.Decimal("5.00"), None, decimal.Decimal("-7.00")], pa.decimal128(10, 2)) == h
    assert fp1([decimal.Decimal(5), None, decimal.Decimal(-7)], pa.decimal128(38, 0)) == h
    assert fp1([5, None, 7], pa.uint8()) == fp1([5, None, 7], pa.int64())


def test_integers_are_exact_floats_are_rounded():
    big = 123456789012345
    assert fp1([big], pa.int64()) != fp1([big + 1], pa.int64())  # ints never rounded
    assert fp1([float(big)]) != fp1([big], pa.int64())  # documented: the float keeps 12 digits
    assert fp1([float(big)]) == fp1([123456789012000], pa.int64())
    assert fp1([decimal.Decimal(big)], pa.decimal128(38, 0)) == fp1([big], pa.int64())  # HUGEINT sums
    assert fp1([2**63 - 1], pa.int64()) != fp1([2**63 - 2], pa.int64())


def test_beyond_int64_takes_the_float_route():
    assert fp1([2**64 - 1], pa.uint64()) == fp1([float(2**64)])
    assert fp1([decimal.Decimal(2**70)], pa.decimal128(38, 0)) == fp1([float(2**70)])
    assert fp1([2**63 - 1], pa.uint64()) == fp1([2**63 - 1], pa.int64())


def test_bool_is_not_int():
    assert fp1([True]) != fp1([1], pa.int64())
    assert fp1([False]) != fp1([0], pa.int64())
    assert fp1([True]) != fp1([False])


# ----------------------------------------------------------------------------------------------
# NULLs and strings
# ----------------------------------------------------------------------------------------------
def test_null_vs_string_null_vs_empty():
    hashes = {fp1([None], pa.string()), fp1(["NULL"]), fp1([""]), fp1(["None"])}
    assert len(hashes) == 4


def test_null_is_one_token_across_types_and_libraries():
    h = fp1([None], pa.int64())
    for typ in (pa.string(), pa.float64(), pa.bool_(), pa.date32(), pa.timestamp("ns"), pa.null()):
        assert fp1([None], typ) == h, typ
    for value in (None, np.nan, pd.NaT, pd.NA):
        assert fingerprint(pd.DataFrame({"c": pd.Series([value], dtype=object)})) == h, value
    assert fingerprint(pd.DataFrame({"c": pd.array([None], dtype="Int64")})) == h
    assert fingerprint(pd.DataFrame({"c": pd.to_datetime([None])})) == h


def test_string_encoding_is_length_prefixed_and_exact():
    two = pa.table({"x": ["ab"], "y": ["c"]})
    other = pa.table({"x": ["a"], "y": ["bc"]})
    assert fingerprint(two) != fingerprint(other)
    assert fp1(["a"]) != fp1(["a\x00"])
    assert fp1(["abcdefgh"]) != fp1(["abcdefgh\x00"])  # exactly one 8-byte word vs two
    assert fp1(["abcdefghi"]) != fp1(["abcdefgih"])
    assert fp1(["x" * 1000]) != fp1(["x" * 999 + "y"])
    assert fp1(["é"]) != fp1(["e\u0301"])  # no Unicode normalization (documented)
    assert fp1(["A"]) != fp1(["a"])
    assert fp1([b"abc"], pa.binary()) != fp1(["abc"])  # binary is its own kind


def test_string_types_and_categoricals_agree():
    values = ["x", None, "yy", "", "x"]
    h = fp1(values, pa.string())
    assert fp1(values, pa.large_string()) == h
    assert fp1(values, pa.string_view()) == h
    assert fingerprint(pd.DataFrame({"c": pd.Categorical(values)})) == h
    assert fingerprint(pd.DataFrame({"c": pd.Series(values, dtype="str")})) == h
    assert fingerprint(pd.DataFrame({"c": pd.Series(values, dtype=object)})) == h
    assert fp1([b"ab", None], pa.binary()) == fp1([b"ab", None], pa.large_binary())


# ----------------------------------------------------------------------------------------------
# Dates, timestamps, durations
# ----------------------------------------------------------------------------------------------
def test_dates_and_timestamps_are_utc_instants():
    h = fp1([dt.date(2020, 1, 1)])
    assert fp1([dt.datetime(2020, 1, 1)]) == h  # naive timestamps read as UTC
    assert fp1([dt.datetime(2020, 1, 1, tzinfo=UTC)]) == h
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert fp1([dt.datetime(2020, 1, 1, 2, 0, tzinfo=plus2)]) == h
    for unit in ("s", "ms", "us", "ns"):
        assert fp1([dt.datetime(2020, 1, 1)], pa.timestamp(unit)) == h
    assert fp1([dt.date(2020, 1, 1)], pa.date64()) == h
    assert fp1([dt.date(2020, 1, 2)]) != h
    assert fp1([dt.datetime(2020, 1, 1, 0, 0, 0, 1)]) != h


def test_nanoseconds_and_far_dates():
    ns = pa.array([1_577_836_800_000_000_000, 1_577_836_800_000_000_001], pa.timestamp("ns"))
    assert fingerprint(pa.table({"c": ns.slice(0, 1)})) != fingerprint(pa.table({"c": ns.slice(1, 1)}))
    far = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), dt.date(1900, 3, 1)]
    assert len({fp1([d]) for d in far}) == 4
    assert fp1([dt.datetime(1, 1, 1)], pa.timestamp("us")) == fp1([dt.date(1, 1, 1)])


def test_durations_and_intervals():
    h = fp1([dt.timedelta(days=1, hours=1)])
    assert fp1([pa.MonthDayNano([0, 1, 3_600_000_000_000])], pa.month_day_nano_interval()) == h
    assert fp1([pa.MonthDayNano([0, 0, 90_000_000_000_000])], pa.month_day_nano_interval()) == h
    assert fp1([pa.MonthDayNano([1, 1, 3_600_000_000_000])], pa.month_day_nano_interval()) != h
    assert fp1([dt.timedelta(days=1)]) != fp1([dt.date(1970, 1, 2)])  # duration is not a date
    assert fp1([dt.time(1, 2, 3)]) != fp1([dt.time(1, 2, 4)])


# ----------------------------------------------------------------------------------------------
# Multiset, columns, inputs
# ----------------------------------------------------------------------------------------------
def test_duplicates_matter():
    once = pa.table({"a": [1, 2], "b": ["x", "y"]})
    twice = pa.table({"a": [1, 1, 2], "b": ["x", "x", "y"]})
    assert fingerprint(once) != fingerprint(twice)
    assert fingerprint(pa.table({"a": [1, 1, 2]})) != fingerprint(pa.table({"a": [1, 2, 2]}))


def test_column_order_and_names():
    t = pa.table({"a": [1, 2], "b": ["x", "y"]})
    swapped = t.select(["b", "a"])
    renamed = t.rename_columns(["a", "B"])
    assert fingerprint(swapped) != fingerprint(t)
    assert fingerprint(renamed) != fingerprint(t)
    assert fingerprint(renamed, include_names=False) == fingerprint(t, include_names=False)
    assert fingerprint(swapped, include_names=False) != fingerprint(t, include_names=False)
    # the same values under swapped names still differ: values are bound to positions
    assert fingerprint(pa.table({"a": [1], "b": [2]})) != fingerprint(pa.table({"a": [2], "b": [1]}))


def test_pandas_arrow_duckdb_agree():
    con = duckdb.connect()
    con.execute(
        """CREATE TABLE t AS SELECT * FROM (VALUES
            (1, 2.5, 'x', true, DATE '2020-01-01', TIMESTAMP '2020-01-01 10:00:00', NULL::INT, 12.30::DECIMAL(10,2)),
            (2, NULL, NULL, false, DATE '1969-07-20', NULL, 7, 0.10),
            (3, 0.1 + 0.2, '', NULL, NULL, TIMESTAMP '1999-12-31 23:59:59.999999', 3, NULL)
        ) v(id, x, s, b, d, ts, q, dec)"""
    )
    rel = con.sql("SELECT * FROM t")
    h = fingerprint(rel)
    assert fingerprint(rel.to_arrow_table()) == h
    assert fingerprint(rel.df()) == h
    with warnings.catch_warnings():  # DuckDB notes the extra copy a DB-API result costs
        warnings.simplefilter("ignore", UserWarning)
        assert fingerprint(con.execute("SELECT * FROM t")) == h
    by_hand = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "x": [2.5, np.nan, 0.3],
            "s": ["x", None, ""],
            "b": pd.array([True, False, None], dtype="boolean"),
            "d": pd.to_datetime(["2020-01-01", "1969-07-20", None]),
            "ts": pd.to_datetime(
                ["2020-01-01 10:00:00", None, "1999-12-31 23:59:59.999999"], format="ISO8601"
            ),
            "q": pd.array([None, 7, 3], dtype="Int64"),
            "dec": [12.3, 0.1, np.nan],
        }
    ).iloc[[2, 0, 1]]
    assert fingerprint(by_hand) == h


def test_sql_aggregates_match_pandas_results():
    con = duckdb.connect()
    df = pd.DataFrame({"g": ["a", "b", "a", "c"], "v": [1, 2, 3, 4], "w": [0.1, 0.2, 0.3, 0.4]})
    con.register("df", df)
    sql = con.sql("SELECT g, sum(v) AS v, sum(w) AS w FROM df GROUP BY g")  # sum(v) is HUGEINT -> DECIMAL
    pandas = df.groupby("g")[["v", "w"]].sum()
    assert fingerprint(sql) == fingerprint(pandas, index=True)
    assert fingerprint(sql) != fingerprint(pandas)  # without index=True the keys are missing
    assert fingerprint_scalar(len(df)) == fingerprint(con.sql("SELECT count(*) FROM df"), include_names=False)


def test_empty_tables():
    empty = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
    assert fingerprint(empty) == fingerprint(pd.DataFrame({"a": [], "b": []}))
    assert fingerprint(empty) != fingerprint(empty.rename_columns(["a", "c"]))
    assert fingerprint(empty, include_names=False) == fingerprint(
        empty.rename_columns(["a", "c"]), include_names=False
    )
    assert fingerprint(empty) != fingerprint(pa.table({"a": [None], "b": [None]}))
    assert fingerprint(empty) != fingerprint(empty.select(["a"]))
    assert fingerprint(pa.table({})) == fingerprint(pd.DataFrame())
    assert len(fingerprint(pa.table({}))) == 64
    no_columns = pd.DataFrame(index=range(3))
    assert fingerprint(no_columns) != fingerprint(pd.DataFrame())  # the row count is in the header
    assert fingerprint(no_columns) == naive_fingerprint(no_columns)


def test_chunking_slicing_and_blocks_do_not_matter(monkeypatch):
    table = make_table(2_000, seed=7)
    h = fingerprint(table)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=333))
    assert fingerprint(chunked) == h
    offset = (
        pa.concat_tables([make_table(10, seed=1), table]).combine_chunks().slice(10)
    )  # arrays with offset 10
    assert offset.column(2).chunk(0).offset == 10
    assert fingerprint(offset) == h
    # tiny blocks and sort buckets exercise the merge, slice and bucket paths on small data
    monkeypatch.setattr(fpmod, "_BLOCK_ROWS", 64)
    monkeypatch.setattr(fpmod, "_SORT_BUCKET_ROWS", 16)
    monkeypatch.setattr(fpmod, "_PARTITION_ROWS", 100)
    assert fingerprint(chunked) == h
    assert fingerprint(table.take(np.random.default_rng(0).permutation(2_000))) == h
    assert naive_fingerprint(table) == h


def test_sort_is_lexicographic_on_both_lanes():
    rng = np.random.default_rng(1)
    d = rng.integers(0, 2**63, (70_000, 2), dtype=np.int64).view(np.uint64)
    d[:10, 0] = d[10:20, 0]  # equal lane 0, different lane 1
    d[20:30] = d[30:40]  # exact duplicates
    d[40:50, 0] = (d[50:60, 0] & ~np.uint64(0xFFFF)) | np.uint64(3)  # equal in lane 0's top 48 bits
    want = d[np.lexsort((d[:, 1], d[:, 0]))]
    for sub in (d[:1_000], d[:65_536], d):  # packed-key path, its size limit, the argsort path
        np.testing.assert_array_equal(
            fpmod._sort_bucket(sub[::-1].copy()), sub[np.lexsort((sub[:, 1], sub[:, 0]))]
        )
    import hashlib

    assert (
        fpmod._sorted_digest_hash(b"h", d[::-1].copy()) == hashlib.sha256(b"h" + want.tobytes()).hexdigest()
    )


def test_kind_tags_never_collide_in_both_lanes():
    # A NULL or a cell of another kind can only match a value in both lanes at once if the two
    # lanes' tag differences coincide. They must not, for any pair of kinds.
    tags = fpmod._TAG
    for a in range(len(tags)):
        for b in range(a + 1, len(tags)):
            assert tags[a][0] ^ tags[b][0] != tags[a][1] ^ tags[b][1]
    assert fpmod._DAY_MUL[1] % 2 == 1 and (fpmod._DAY_MUL[1] - fpmod._DAY_MUL[0]) % 2 == 1


def test_fmix_vector_matches_scalar():
    x = np.array([0, 1, 2**63, 2**64 - 1, 0x9E3779B97F4A7C15], dtype=np.uint64)
    y = x.copy()
    fpmod._fmix_inplace(y, np.empty_like(y))
    assert [int(v) for v in y] == [fpmod._fmix64_int(int(v)) for v in x]


def test_fingerprint_scalar():
    h = fingerprint_scalar(5)
    assert (
        fingerprint_scalar(5.0)
        == h
        == fingerprint_scalar(np.int64(5))
        == fingerprint_scalar(decimal.Decimal("5.00"))
    )
    assert fingerprint_scalar(np.array(5)) == h
    assert fingerprint_scalar("5") != h
    assert fingerprint_scalar(True) != h
    assert (
        fingerprint_scalar(None)
        == fingerprint_scalar(np.nan)
        == fingerprint_scalar(pd.NA)
        == fingerprint_scalar(pd.NaT)
    )
    assert fingerprint_scalar(0.1 + 0.2) == fingerprint_scalar(0.3)
    assert fingerprint_scalar(2**70) == fingerprint_scalar(float(2**70))
    assert fingerprint_scalar(dt.date(2020, 1, 1)) == fingerprint_scalar(pd.Timestamp("2020-01-01"))
    assert fingerprint_scalar(5) == fingerprint(pa.table({"whatever": [5]}), include_names=False)


def test_row_digests():
    t = pa.table({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    d = row_digests(t)
    assert d.shape == (3, 2) and d.dtype == np.uint64
    assert (d[0] == d[2]).all() and not (d[0] == d[1]).all()
    assert (row_digests(t.rename_columns(["p", "q"])) == d).all()


def test_unsupported_inputs_raise_type_error():
    with pytest.raises(TypeError, match="unsupported column type"):
        fingerprint(pa.table({"l": pa.array([[1, 2]])}))
    with pytest.raises(TypeError, match="no single Arrow type"):
        fingerprint(pd.DataFrame({"m": pd.Series([1, "a"], dtype=object)}))
    with pytest.raises(TypeError, match="expected a pandas"):
        fingerprint([[1, 2]])


def test_policy_is_validated_frozen_and_hashed():
    with pytest.raises(ValidationError):
        CanonPolicy(sig_digits=0)
    with pytest.raises(ValidationError):
        CanonPolicy(sig_digits=16)
    with pytest.raises(ValidationError):
        CanonPolicy(rounding="x")
    policy = CanonPolicy()
    with pytest.raises(ValidationError):
        policy.sig_digits = 3
    t = pa.table({"a": [1]})
    assert fingerprint(t, policy=CanonPolicy(sig_digits=11)) != fingerprint(t)


# ----------------------------------------------------------------------------------------------
# Determinism
# ----------------------------------------------------------------------------------------------
_GOLDEN_SCRIPT = textwrap.dedent(
    """
    import datetime as dt, decimal
    import pyarrow as pa
    from synthesis.fingerprint import fingerprint
    # Values come from plain arithmetic, not an RNG, so a numpy upgrade cannot change them.
    n = 5_000
    mixed = pa.table({
        "id": [i * 7919 % 100_003 - 50_000 for i in range(n)],
        "x": [(i * 0.37) % 13.1 for i in range(n)],
        "s": [f"customer_{i * 31 % 997}" for i in range(n)],
        "b": [i % 3 == 0 for i in range(n)],
        "d": [dt.date(2000, 1, 1) + dt.timedelta(days=i % 4_000) for i in range(n)],
        "q": [None if i % 10 == 0 else i % 17 for i in range(n)],
    })
    extra = pa.table({
        "f": [0.1 + 0.2, -0.0, float("inf"), None, 1e-300],
        "s": ["é", "", None, "NULL", "a much longer string than eight bytes"],
        "ts": pa.array([dt.datetime(2020, 1, 1, 12, tzinfo=dt.UTC), None, dt.datetime(1, 1, 1, tzinfo=dt.UTC),
                        dt.datetime(2262, 1, 1, tzinfo=dt.UTC), dt.datetime(1969, 12, 31, 23, 59, tzinfo=dt.UTC)]),
        "dec": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("-3.00"), decimal.Decimal("0.01"), decimal.Decimal(0)]),
    })
    print(fingerprint(mixed), fingerprint(extra))
    """
)


def _golden_hashes() -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": "12345", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _GOLDEN_SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_deterministic_across_processes():
    namespace: dict = {}
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(_GOLDEN_SCRIPT, namespace)
    here = buf.getvalue().split()
    assert _golden_hashes() == here


# Pinned digests of the v1 specification. If this fails, the canonical encoding changed: bump
# VERSION in synthesis/fingerprint.py and re-pin, since stored fingerprints are no longer comparable.
GOLDEN = [
    "e0ccd646db6630b0b2dc5f93572e1b8b02654437604cade51fb6be4946c55c3d",
    "1a3daaa3d0889bccdb29b860ff4fbfa6d619d59362539461d8c9bdec71c8ef04",
]


def test_golden_values():
    assert _golden_hashes() == GOLDEN


def test_golden_tables_match_naive_reference():
    namespace: dict = {"print": lambda *args: None}
    exec(_GOLDEN_SCRIPT, namespace)
    for name in ("mixed", "extra"):
        assert naive_fingerprint(namespace[name]) == fingerprint(namespace[name]), name
