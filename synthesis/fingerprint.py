"""Result fingerprints for materialized analytical results (paper Appendix B, Eq. 23).

    h_i = SHA256( sort{ canon(r) | r in E_i } )

`fingerprint(table)` returns a 64-character hex digest of a result table. The digest does not
depend on row order. It changes when any canonical value changes, when a row is added or
dropped (rows form a multiset, so a duplicated row counts twice), and when columns are reordered
or renamed. Usage::

    from synthesis.fingerprint import CanonPolicy, fingerprint, fingerprint_scalar

    fingerprint(df)                          # pandas DataFrame or Series
    fingerprint(arrow_table)                 # pyarrow Table, RecordBatch or RecordBatchReader
    fingerprint(con.sql("SELECT ..."))       # DuckDB relation (via Arrow); an executed
                                             # connection works too, but DuckDB warns it copies
    fingerprint(df, include_names=False)     # column names left out of the hash
    fingerprint(df, index=True)              # the index levels count as leading columns
    fingerprint(df, policy=CanonPolicy(sig_digits=10))
    fingerprint_scalar(42.0)                 # a scalar result, the same as a 1x1 unnamed table
    row_digests(df)                          # (n, 2) uint64 per-row digests, in row order

Canonicalization (the `canon` of Eq. 23; version tag `stateguard-fingerprint-v1`)
---------------------------------------------------------------------------------
Each cell is mapped to a *kind* and a payload. Types do not appear in the hash: SQL engines and
pandas disagree on result types for the same analytical content.

* NULL: Arrow null, None, NaN (while `nan_is_null`, the default), NaT and pd.NA are all one NULL
  token. It is the same in every column type and distinct from the strings "NULL" and "".
* Numbers (all int, uint, float and decimal widths) share one kind.
  - Integers are exact: no rounding at any magnitude.
  - Floats are rounded to `sig_digits` significant decimal digits (default 12; float32 columns use
    `min(sig_digits, float32_sig_digits)`, default 6). Rounding is half-to-even on the scaled
    binary value. Within 1e-11..1e34 the result is the double nearest to the rounded decimal;
    outside that range it may be 1 ulp off, but it is still a deterministic function of the
    rounded decimal.
  - A rounded float that is integral and below 2**63 in magnitude is encoded exactly as that
    integer. So int64 5, float64 5.0, 4.9999999999999 and DECIMAL 5.00 hash equally, and so do
    -0.0 and 0.0. Integers are never rounded, so int 123456789012345 and float
    123456789012345.0 differ; the float keeps only 12 digits (123456789012000).
  - +inf and -inf are distinct values. With `nan_is_null=False`, every NaN is one value, distinct
    from NULL. Pandas stores missing floats as NaN, and DuckDB returns NULL where pandas gives NaN
    (0/0), so the default treats NaN as NULL.
  - Decimals with scale <= 0 that fit int64 are exact integers. All other decimals take the float
    route. Unsigned values above 2**63 - 1 take the float route too.
* Booleans are their own kind: True is not 1.
* Strings are UTF-8 bytes, exact: no Unicode normalization, no trimming, case-sensitive. The
  length enters the hash, so ("ab", "c") != ("a", "bc"). Binary values are a separate kind with
  the same encoding. Large and view string types equal plain strings; categoricals equal their
  values.
* Dates and timestamps are instants in UTC: (day number since 1970-01-01, nanosecond of the day).
  That pair carries exactly the information of the ISO-8601 UTC text `YYYY-MM-DDTHH:MM:SS.fffffffffZ`.
  Tz-aware timestamps are compared as instants, naive timestamps are read as UTC, and a date
  equals the naive or UTC timestamp at its midnight. Any unit (s, ms, us, ns) works.
* Durations (timedelta, and Arrow month-day-nano intervals whose month field is 0) are total
  nanoseconds. Intervals with months are a separate kind. Times of day are nanoseconds since
  midnight.
* Column order always matters. With `include_names=True` (the default), the column names (as
  `str`) are part of the header, so a renamed column changes the hash. Set `include_names=False`
  to compare results whose engines named their columns differently.
* The pandas index is ignored unless `index=True`, so a filtered frame equals its SQL
  counterpart. Groupby results keep their keys in the index, so pass `index=True` for them, or
  call `reset_index()` first. `index` has no effect on Arrow or DuckDB inputs.
* Nested types (list, struct, map, union) raise TypeError. Cast or flatten them first.

How the hash is built, and what collisions cost
-----------------------------------------------
Eq. 23 sorts canonical rows and hashes them. Sorting variable-width rows would need per-row work,
so this module uses two 64-bit lanes instead.

1. Each cell becomes a 64-bit word per lane: the payload XOR a per-lane kind tag. Strings are
   summed from per-word mixes; see `_string_words`.
2. A row digest is the sum mod 2**64, over columns j, of fmix64(word ^ column_key[j]), where
   fmix64 is the MurmurHash3 finalizer, a bijection. Two lanes with independent keys give a
   128-bit digest per row.
3. The (lane0, lane1) pairs are sorted as 128-bit keys. SHA-256 is then taken over a header
   (version, policy, column count, optionally the names, row count) and the sorted pairs, each
   as two little-endian uint64. The sort is a radix partition on the top bits of lane 0,
   followed by an in-cache sort of each bucket.

All steps run on whole numpy arrays, in blocks of `_BLOCK_ROWS` rows. No Python code runs per
row. Memory beyond the input is about 33 bytes per row: the digests and their partitioned copy.

Collisions. Suppose one cell changes, and its old and new values share a kind other than string,
binary or interval-with-months. Then the row digest always changes: within a lane, that kind's
encoding is injective, and fmix64 and the column sum are bijective in that one term. Any other
difference between two rows collides with probability about 2**-128, assuming fmix64 of keyed
inputs behaves like a random function. So a table of n rows has a within-table digest
collision with probability about n**2 / 2**129; at 1e9 rows that is about 1e-21. After that, only
SHA-256 collisions remain. Row order cannot matter: ties in the sort are identical 128-bit
pairs. The hash is *not* built to resist an adversary who crafts collisions (fmix64 is
invertible); its job is to detect accidental changes to results.

Determinism. Everything is integer arithmetic, or correctly rounded IEEE-754 operations on
fixed constants. No transcendental functions (log10, pow) are used: their last-bit results can
vary across CPUs and libms. Bytes are read little-endian explicitly. Python's hash() is not used.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CanonPolicy", "fingerprint", "fingerprint_scalar", "row_digests"]

VERSION = "stateguard-fingerprint-v1"

# Rows per block. Each block's columns, word arrays and scratch buffers stay in L2 cache, so the
# many elementwise numpy passes run at cache speed, not memory speed. Memory outside the final
# digest arrays stays bounded however long the table is.
_BLOCK_ROWS = 1 << 15


class CanonPolicy(BaseModel):
    """How values are normalized before hashing. It is part of the hash header, so two
    fingerprints compare equal only under the same policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sig_digits: int = Field(
        12, ge=1, le=15, description="significant decimal digits kept for floats (<=15: fits a double)"
    )
    float32_sig_digits: int = Field(
        6, ge=1, le=15, description="cap for float16/float32 columns (FLT_DIG = 6 round-trips)"
    )
    nan_is_null: bool = Field(True, description="NaN is the NULL token (pandas' missing marker)")


_DEFAULT_POLICY = CanonPolicy()

# --------------------------------------------------------------------------------------------
# Constants. They derive from splitmix64 of fixed domain/index pairs. Nothing is random at
# import time, so any process on any machine gets the same values.
# --------------------------------------------------------------------------------------------
_M64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _const(domain: int, index: int) -> int:
    return _splitmix64((domain << 32) | index)


def _fmix64_int(x: int) -> int:
    """Scalar MurmurHash3 fmix64; the vectorized `_fmix_inplace` must agree with it bit for bit."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & _M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & _M64
    return x ^ (x >> 33)


# Kinds: the type-free classes of canonical values (see module docstring).
NULL, BOOL, INT, FLOAT, STRING, BINARY, TEMPORAL, TIME, DURATION, INTERVAL = range(10)
_LANES = (0, 1)
_TAG = [[_const(1, 2 * kind + lane) for lane in _LANES] for kind in range(10)]  # _TAG[kind][lane]
_WORD_MUL = [_const(3, lane) | 1 for lane in _LANES]  # odd: (w+1)*mul differs for every position w
_LEN_MUL = [_const(4, lane) | 1 for lane in _LANES]
# Temporal (day d, ns-of-day t) -> d*C + t. Lane 0 uses C = ns per day (the natural total-ns
# encoding). Lane 1 uses an odd C. C1 - C0 is odd, so the pair of lanes is injective over every
# (d, t), even where total nanoseconds wrap mod 2**64.
_NS_PER_DAY = 86_400_000_000_000
_DAY_MUL = [_NS_PER_DAY, _const(5, 1) | 1]
_CANON_NAN_BITS = 0x7FF8000000000000


def _column_key(j: int, lane: int) -> int:
    return _const(2, 2 * j + lane)


_U = np.uint64
_FM1 = _U(0xFF51AFD7ED558CCD)
_FM2 = _U(0xC4CEB9FE1A85EC53)
_S33 = _U(33)


def _fmix_inplace(x: np.ndarray, tmp: np.ndarray) -> None:
    """MurmurHash3 fmix64 on a uint64 array, in place. `tmp` avoids temporaries: allocating
    would cost more than the arithmetic in these cache-sized blocks."""
    np.right_shift(x, _S33, out=tmp)
    x ^= tmp
    x *= _FM1
    np.right_shift(x, _S33, out=tmp)
    x ^= tmp
    x *= _FM2
    np.right_shift(x, _S33, out=tmp)
    x ^= tmp


# --------------------------------------------------------------------------------------------
# Floats: deterministic rounding to significant decimal digits, vectorized.
# --------------------------------------------------------------------------------------------
# Powers of ten as parsed (correctly rounded) doubles. Exact for 0..22. Beyond that they are
# fixed constants, so the arithmetic stays deterministic even when it is not exact.
_P10 = np.array([float(f"1e{k}") for k in range(0, 331)])  # 1e309.. are inf; never indexed
_P10_OFF = 330
_P10_SIGNED = np.array([float(f"1e{k}") for k in range(-_P10_OFF, _P10_OFF + 1)])  # 1e-330 -> 0.0
_LOG10_2 = 0.30102999566398119521


def _round_significant(f: np.ndarray, digits: int) -> np.ndarray:
    """Round float64 values to `digits` significant digits and return them as doubles (the
    nearest ones within 1e-11..1e34; see the note before the reconstruction below).

    Non-finite values and zeros pass through unchanged. The decade comes from the exact binary
    exponent (frexp) and a comparison with tabulated powers of ten, not from log10, so it never
    depends on the libm.
    """
    with np.errstate(all="ignore"):
        a = np.abs(f)
        _, e2 = np.frexp(a)
        # For a in [2**(e2-1), 2**e2), floor((e2-1)*log10 2) is the decade or one below it.
        e10 = np.floor((e2 - 1) * _LOG10_2).astype(np.int64)
        np.clip(e10, -_P10_OFF, _P10_OFF - 1, out=e10)  # zeros/inf/nan give junk e2; keep in range
        e10 += a >= _P10_SIGNED[e10 + 1 + _P10_OFF]
        k = (digits - 1) - e10  # scale a by 10**k, which lands q in [10**(digits-1), 10**digits)
        kpos = np.maximum(k, 0)
        kneg = np.maximum(-k, 0)
        np.minimum(kneg, 330, out=kneg)
        k1 = np.minimum(kpos, 300)  # split large positive scales (subnormals) so 10**k stays finite
        k2 = np.minimum(kpos - k1, 330)
        # Multiply by the positive power and divide by the negative one, each exactly once. Both
        # ops are correctly rounded, and factors of 1.0 are exact no-ops.
        q = a * _P10[k1]
        if k2.any():
            q *= _P10[k2]
        q /= _P10[kneg]
        r = np.rint(q)
        top = r >= 10.0**digits  # 9.99..96 rounded up into the next decade: renormalize
        if top.any():
            r[top] = 10.0 ** (digits - 1)
            kk = k - top
            kpos = np.maximum(kk, 0)
            kneg = np.minimum(np.maximum(-kk, 0), 330)
            k1 = np.minimum(kpos, 300)
            k2 = np.minimum(kpos - k1, 330)
        # r is an integer < 2**53 and 10**k is exact for |k| <= 22, so r / 10**k is the double
        # nearest to the rounded decimal: what parsing its decimal text would give. For larger |k|
        # the inexact power or the second division can leave it 1 ulp off. That is harmless: equal
        # decimals still map to equal doubles, and distinct ones stay ~1e12 ulps apart.
        v = r * _P10[kneg]
        v /= _P10[k1]
        if k2.any():
            v /= _P10[k2]
        np.copysign(v, f, out=v)
        passthrough = ~np.isfinite(f) | (a == 0)
        if passthrough.any():
            v[passthrough] = f[passthrough]
    return v


def _number_words(
    f: np.ndarray, digits: int, policy: CanonPolicy
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Lane words for float64 values, plus a mask of NaNs that the policy maps to NULL."""
    v = _round_significant(f, digits)
    with np.errstate(all="ignore"):
        is_int = (np.floor(v) == v) & (np.abs(v) < 9.223372036854775808e18)
        payload = np.where(is_int, v.astype(np.int64).view(_U), v.view(_U))
    nan = np.isnan(v)
    nan_null: np.ndarray | None = None
    if nan.any():
        if policy.nan_is_null:
            nan_null = nan
        else:
            payload[nan] = _U(_CANON_NAN_BITS)  # every NaN bit pattern becomes one value
    words = []
    for lane in _LANES:
        tag = np.where(is_int, _U(_TAG[INT][lane]), _U(_TAG[FLOAT][lane]))
        words.append(payload ^ tag)
    return words, nan_null


def _int_words(vals: np.ndarray) -> list[np.ndarray]:
    u = vals.astype(np.int64, copy=False).view(_U)
    return [u ^ _U(_TAG[INT][lane]) for lane in _LANES]


# --------------------------------------------------------------------------------------------
# Strings and binaries: vectorized per-string hashing over 8-byte words.
# --------------------------------------------------------------------------------------------
_TAIL_MASK = np.array([(1 << (8 * r)) - 1 if r < 8 else _M64 for r in range(9)], dtype=_U)


def _string_words(offsets: np.ndarray, data: np.ndarray, kind: int) -> list[np.ndarray]:
    """Lane words for variable-length byte strings.

    A string of n bytes splits into 8-byte little-endian words, zero-padding the last one.
    Lane L holds  (sum_w fmix64(word_w + (w+1)*WORD_MUL[L]) + n*LEN_MUL[L]) ^ TAG[kind][L].
    For a fixed position w, the term is a bijection of the word, so one changed word always
    changes the sum. The length term separates "a" from "a\\x00". The words are read straight
    from the Arrow data buffer through an unaligned strided view. The work is a fixed number of
    numpy passes over all the words of the block, with no per-string Python.
    """
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    n_words = (lengths + 7) >> 3
    word_end = np.cumsum(n_words)
    total = int(word_end[-1]) if len(word_end) else 0
    word_start = word_end - n_words
    base = int(offsets[0]) if len(offsets) else 0
    nbytes = (int(offsets[-1]) - base) if len(offsets) else 0
    # Eight bytes of zero padding, so the view can read a full word at the last byte.
    padded = np.zeros(nbytes + 8, dtype=np.uint8)
    padded[:nbytes] = data[base : base + nbytes]
    unaligned = np.ndarray(shape=(nbytes + 1,), dtype="<u8", buffer=padded, strides=(1,))
    pos = np.arange(total, dtype=np.int64) - np.repeat(word_start, n_words)  # word index in its string
    src = np.repeat(starts - base, n_words) + (pos << 3)
    words = unaligned[src].astype(_U, copy=False)
    has = n_words > 0
    last = word_end[has] - 1
    words[last] &= _TAIL_MASK[lengths[has] - ((n_words[has] - 1) << 3)]
    pos += 1
    pos_u = pos.view(_U)
    bounds = np.empty(len(starts) + 1, dtype=np.int64)  # word range of string i: bounds[i]:bounds[i+1]
    bounds[0] = 0
    bounds[1:] = word_end
    out = []
    tmp = np.empty(total, dtype=_U)
    len_u = lengths.astype(np.int64).view(_U)
    for lane in _LANES:
        y = pos_u * _U(_WORD_MUL[lane])
        y += words
        _fmix_inplace(y, tmp)
        # Segmented sum by differencing a running sum. Wrap-around is harmless mod 2**64.
        running = np.zeros(total + 1, dtype=_U)
        np.cumsum(y, out=running[1:])
        s = running[bounds[1:]] - running[bounds[:-1]]
        s += len_u * _U(_LEN_MUL[lane])
        s ^= _U(_TAG[kind][lane])
        out.append(s)
    return out


# --------------------------------------------------------------------------------------------
# Arrow array -> lane words (one block of one column).
# --------------------------------------------------------------------------------------------
_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _buffer_values(arr: pa.Array, dtype: Any) -> np.ndarray:
    """Zero-copy numpy view of a fixed-width array's values. Null slots hold arbitrary values;
    callers overwrite them."""
    n = len(arr)
    buf = arr.buffers()[1]
    dt = np.dtype(dtype)
    if n == 0 or buf is None:
        return np.zeros(n, dtype=dt)
    return np.frombuffer(buf, dtype=dt, count=n, offset=arr.offset * dt.itemsize)


def _bool_values(arr: pa.Array) -> np.ndarray:
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint8)
    first, shift = divmod(arr.offset, 8)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=(shift + n + 7) // 8, offset=first)
    return np.unpackbits(raw, bitorder="little")[shift : shift + n]


def _temporal_words(days: np.ndarray, ns_of_day: np.ndarray, kind: int) -> list[np.ndarray]:
    d = days.astype(np.int64, copy=False).view(_U)
    t = ns_of_day.astype(np.int64, copy=False).view(_U)
    out = []
    for lane in _LANES:
        w = d * _U(_DAY_MUL[lane])
        w += t
        w ^= _U(_TAG[kind][lane])
        out.append(w)
    return out


def _split_days(vals: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Floor-divide a count of `unit` since the epoch into (day, ns of day), without overflow."""
    per_day = _NS_PER_DAY // _UNIT_NS[unit]
    days, rem = np.divmod(vals.astype(np.int64, copy=False), per_day)
    return days, rem * _UNIT_NS[unit]


def _is_view(t: pa.DataType, what: str) -> bool:
    """string_view / binary_view, which pyarrow < 16 does not know."""
    check = getattr(pa.types, f"is_{what}_view", None)
    return bool(check(t)) if check is not None else False


def _null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _cell_words(arr: pa.Array, policy: CanonPolicy) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Canonical lane words for one block of one column, plus its NULL mask (None: no NULLs)."""
    t = arr.type
    n = len(arr)
    if isinstance(t, pa.BaseExtensionType):  # e.g. arrow.uuid: hashed by its storage
        return _cell_words(arr.storage, policy)
    if pa.types.is_null(t):
        return [np.full(n, _TAG[NULL][lane], dtype=_U) for lane in _LANES], np.ones(n, dtype=bool)
    null = None if pa.types.is_dictionary(t) else _null_mask(arr)
    if pa.types.is_dictionary(t):
        dictionary, indices = arr.dictionary, arr.indices
        if len(dictionary) > n:  # hashing a large dictionary for a small block would cost more
            return _cell_words(pc.take(dictionary, indices), policy)
        dict_words, dict_null = _cell_words(dictionary, policy)
        idx = np.asarray(pc.fill_null(indices, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        words = [w[idx] for w in dict_words]
        null = _null_mask(indices)
        if dict_null is not None:
            null = dict_null[idx] if null is None else (null | dict_null[idx])
    elif pa.types.is_boolean(t):
        b = _bool_values(arr).astype(_U)
        words = [b ^ _U(_TAG[BOOL][lane]) for lane in _LANES]
    elif pa.types.is_integer(t):
        vals = _buffer_values(arr, t.to_pandas_dtype())
        if pa.types.is_uint64(t) and n and bool((vals > np.uint64(2**63 - 1)).any()):
            big = vals > np.uint64(2**63 - 1)
            words = _int_words(np.where(big, 0, vals).astype(np.int64))
            big_words, _ = _number_words(vals[big].astype(np.float64), policy.sig_digits, policy)
            for lane in _LANES:
                words[lane][big] = big_words[lane]
        else:
            words = _int_words(vals)
    elif pa.types.is_floating(t):
        vals = _buffer_values(arr, t.to_pandas_dtype()).astype(np.float64, copy=False)
        digits = policy.sig_digits
        if not pa.types.is_float64(t):
            digits = min(digits, policy.float32_sig_digits)
        words, nan_null = _number_words(vals, digits, policy)
        if nan_null is not None:
            null = nan_null if null is None else (null | nan_null)
    elif pa.types.is_decimal(t):
        words, null = _decimal_words(arr, policy, null)
    elif (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        kind = BINARY if (pa.types.is_binary(t) or pa.types.is_large_binary(t)) else STRING
        bufs = arr.buffers()
        off_dtype = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        if n == 0:
            offsets = np.zeros(1, dtype=np.int64)
        else:
            offsets = np.frombuffer(
                bufs[1], dtype=off_dtype, count=n + 1, offset=arr.offset * np.dtype(off_dtype).itemsize
            ).astype(np.int64)
        data = (
            np.frombuffer(bufs[2], dtype=np.uint8) if (n and bufs[2] is not None) else np.zeros(0, np.uint8)
        )
        words = _string_words(offsets, data, kind)
    elif _is_view(t, "string"):
        return _cell_words(pc.cast(arr, pa.large_string()), policy)
    elif _is_view(t, "binary"):
        return _cell_words(pc.cast(arr, pa.large_binary()), policy)
    elif pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * width
        words = _string_words(offsets, data, BINARY)
    elif pa.types.is_date32(t):
        days = _buffer_values(arr, np.int32)
        words = _temporal_words(days, np.zeros(n, dtype=np.int64), TEMPORAL)
    elif pa.types.is_date64(t):
        words = _temporal_words(*_split_days(_buffer_values(arr, np.int64), "ms"), TEMPORAL)
    elif pa.types.is_timestamp(t):
        # Arrow stores tz-aware timestamps as UTC instants, so the tz string can be ignored.
        words = _temporal_words(*_split_days(_buffer_values(arr, np.int64), t.unit), TEMPORAL)
    elif pa.types.is_duration(t):
        words = _temporal_words(*_split_days(_buffer_values(arr, np.int64), t.unit), DURATION)
    elif pa.types.is_time(t):
        dtype = np.int32 if pa.types.is_time32(t) else np.int64
        ns = _buffer_values(arr, dtype).astype(np.int64) * _UNIT_NS[t.unit]
        words = [ns.view(_U) ^ _U(_TAG[TIME][lane]) for lane in _LANES]
    elif t == pa.month_day_nano_interval():
        words = _interval_words(arr)
    else:
        raise TypeError(
            f"fingerprint: unsupported column type {t}; cast or flatten nested/union columns first "
            "(e.g. to a JSON string)"
        )
    if null is not None:
        for lane in _LANES:
            words[lane][null] = _U(_TAG[NULL][lane])
    return words, null


def _decimal_words(
    arr: pa.Array, policy: CanonPolicy, null: np.ndarray | None
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Decimals with scale <= 0 are integers (DuckDB's SUM(BIGINT) is DECIMAL(38,0)). Each value
    that fits int64 stays exact, as an int64 column would. All other values take the float
    route, like pandas' float results for the same query."""
    t = arr.type
    as_float = _decimal_as_float(arr)
    words, nan_null = _number_words(as_float, policy.sig_digits, policy)
    if t.scale <= 0 and len(arr):
        wide = pa.decimal256(76, 0) if isinstance(t, pa.Decimal256Type) else pa.decimal128(38, 0)
        lo = pa.scalar(_decimal.Decimal(-(2**63)), type=wide)
        hi = pa.scalar(_decimal.Decimal(2**63 - 1), type=wide)
        fits_arr = pc.and_(pc.greater_equal(arr, lo), pc.less_equal(arr, hi))
        fits = np.asarray(pc.fill_null(fits_arr, False).to_numpy(zero_copy_only=False), dtype=bool)
        if fits.any():
            zero = pa.scalar(_decimal.Decimal(0), type=t)
            exact = pc.cast(pc.if_else(pa.array(fits), arr, zero), pa.int64())
            ints = _int_words(np.asarray(pc.fill_null(exact, 0).to_numpy(zero_copy_only=False)))
            for lane in _LANES:
                words[lane] = np.where(fits, ints[lane], words[lane])
    if nan_null is not None:
        null = nan_null if null is None else (null | nan_null)
    return words, null


def _decimal_as_float(arr: pa.Array) -> np.ndarray:
    vals = pc.fill_null(pc.cast(arr, pa.float64(), safe=False), 0.0)
    return np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float64)


def _interval_words(arr: pa.Array) -> list[np.ndarray]:
    """DuckDB's INTERVAL (timestamp - timestamp). With months == 0 it is a duration, equal to
    pandas' timedelta. With months it is its own kind: a month has no fixed length."""
    n = len(arr)
    rec = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
    vals = _buffer_values(arr, rec) if n else np.zeros(0, dtype=rec)
    months = vals["months"].astype(np.int64)
    extra_days, ns = np.divmod(vals["nanos"], _NS_PER_DAY)
    days = vals["days"].astype(np.int64) + extra_days
    words = _temporal_words(days, ns, DURATION)
    has_months = months != 0
    if has_months.any():
        tmp = np.empty(int(has_months.sum()), dtype=_U)
        for lane in _LANES:
            base = words[lane][has_months] ^ _U(_TAG[DURATION][lane])
            mix = months[has_months].view(_U) ^ _U(_TAG[INTERVAL][lane])
            _fmix_inplace(mix, tmp)
            words[lane][has_months] = base ^ mix
    return words


# --------------------------------------------------------------------------------------------
# Inputs -> Arrow.
# --------------------------------------------------------------------------------------------
def _pandas_to_arrow(df: Any, policy: CanonPolicy, index: bool) -> pa.Table:
    import pandas as pd

    if isinstance(df, pd.Series):
        df = df.to_frame()
    if index:
        df = df.reset_index()
    names, arrays = [], []
    for j in range(df.shape[1]):
        col = df.iloc[:, j]
        name = str(df.columns[j])
        try:
            if not policy.nan_is_null and isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
                arrays.append(pa.array(col.to_numpy(), from_pandas=False))  # keep NaN as NaN
            else:
                arrays.append(pa.array(col, from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TypeError(
                f"fingerprint: column {name!r} (dtype {col.dtype}) has no single Arrow type ({exc}); "
                "cast it first, e.g. df[col].astype(str)"
            ) from exc
        names.append(name)
    if not arrays:  # keep the row count of a frame without columns
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.nulls(len(df), pa.struct([])))])
    return pa.Table.from_arrays(arrays, names=names)


def _as_arrow(table: Any, policy: CanonPolicy, index: bool) -> pa.Table:
    if isinstance(table, pa.Table):
        return table
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    if isinstance(table, pa.RecordBatchReader):
        return table.read_all()
    import pandas as pd  # imported here: Arrow and DuckDB callers need not pay for it

    if isinstance(table, (pd.DataFrame, pd.Series)):
        return _pandas_to_arrow(table, policy, index)
    # DuckDB relations and executed connections (running the query or fetching the result),
    # then anything else that speaks the Arrow C stream protocol (polars, ...).
    for method in ("to_arrow_table", "fetch_arrow_table"):
        fetch = getattr(table, method, None)
        if callable(fetch):
            result = fetch()
            if isinstance(result, pa.Table):
                return result
    if hasattr(table, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(table).read_all()
    raise TypeError(
        f"fingerprint: expected a pandas DataFrame/Series, a pyarrow Table/RecordBatch or a DuckDB "
        f"relation/result, got {type(table).__name__}"
    )


def _blocks(table: pa.Table, size: int) -> Iterator[pa.RecordBatch]:
    """Yield row blocks of `size` rows (the last may be shorter). Big chunks are sliced, which is
    zero-copy. Small chunks are merged, so that per-call overhead stays amortized."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in table.to_batches():
        start = 0
        while start < batch.num_rows:
            take = min(size - count, batch.num_rows - start)
            pending.append(batch.slice(start, take))
            count += take
            start += take
            if count == size:
                yield _concat(pending)
                pending, count = [], 0
    if pending:
        yield _concat(pending)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    if hasattr(pa, "concat_batches"):  # pyarrow >= 19
        return pa.concat_batches(batches)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


# --------------------------------------------------------------------------------------------
# Public API.
# --------------------------------------------------------------------------------------------
def _table_digests(
    table: pa.Table, policy: CanonPolicy, bits: int = 0
) -> tuple[np.ndarray, np.ndarray | None]:
    """(n, 2) uint64 row digests, computed block by block. With `bits` > 0, also return each row's
    sort bucket: the top `bits` bits of lane 0, taken while the block is still in cache."""
    n = table.num_rows
    digests = np.zeros((n, 2), dtype=_U)
    top = np.zeros(n, dtype=np.uint8 if bits <= 8 else np.uint16) if bits else None
    if table.num_columns and n:
        keys = [[_U(_column_key(j, lane)) for lane in _LANES] for j in range(table.num_columns)]
        row = 0
        for block in _blocks(table, _BLOCK_ROWS):
            m = block.num_rows
            tmp = np.empty(m, dtype=_U)
            acc = [np.zeros(m, dtype=_U) for _ in _LANES]
            for j, column in enumerate(block.columns):
                words, _ = _cell_words(column, policy)
                for lane in _LANES:
                    x = words[lane]
                    x ^= keys[j][lane]
                    _fmix_inplace(x, tmp)
                    acc[lane] += x
            digests[row : row + m, 0] = acc[0]
            digests[row : row + m, 1] = acc[1]
            if top is not None:
                top[row : row + m] = acc[0] >> _U(64 - bits)
            row += m
    elif top is not None:  # no columns: every digest is 0, so every row is in bucket 0
        top[:] = 0
    return digests, top


def row_digests(table: Any, *, index: bool = False, policy: CanonPolicy | None = None) -> np.ndarray:
    """Per-row 128-bit digests as an (n, 2) uint64 array, in the table's row order.

    Two rows have equal digests exactly when their canonical values are equal, up to the
    collision bound in the module docstring. Comparing two results' digests with `np.isin` or
    `set` shows which rows differ. Column names do not enter row digests.
    """
    policy = policy or _DEFAULT_POLICY
    return _table_digests(_as_arrow(table, policy, index), policy)[0]


def _header(names: list[str] | None, ncols: int, nrows: int, policy: CanonPolicy) -> bytes:
    head = (
        f"{VERSION}\nsig_digits={policy.sig_digits};float32_sig_digits={policy.float32_sig_digits};"
        f"nan_is_null={int(policy.nan_is_null)};names={int(names is not None)};ncols={ncols};nrows={nrows}\n"
    ).encode()
    if names is not None:
        for name in names:
            raw = name.encode("utf-8", "surrogatepass")
            head += f"{len(raw)}:".encode() + raw
    return head


# The sort runs bucket by bucket: a radix partition on the top bits of lane 0, then an in-cache
# sort per bucket. A single argsort over millions of keys is limited by cache misses. A bucket of
# about 2**15 rows sorts in L2, and the partition costs O(n).
_SORT_BUCKET_ROWS = 1 << 15
_PARTITION_ROWS = 1 << 17
_LOW16 = _U(0xFFFF)


def _sort_bits(n: int) -> int:
    """Number of top lane-0 bits that split n rows into buckets of about _SORT_BUCKET_ROWS."""
    return min(16, max(0, (n - 1) // _SORT_BUCKET_ROWS).bit_length()) if n else 0


def _as_rows(pairs: np.ndarray) -> np.ndarray:
    """View a C-contiguous (m, 2) uint64 array as m opaque 16-byte items. Fancy indexing on
    those copies bytes through numpy's fast fixed-size path, 5-10x faster than on (m, 2) rows."""
    return pairs.view("V16").reshape(-1)


def _as_pairs(rows: np.ndarray) -> np.ndarray:
    return rows.view(_U).reshape(-1, 2)


def _sort_bucket(bucket: np.ndarray) -> np.ndarray:
    """Sort a C-contiguous (m, 2) digest bucket lexicographically by (lane 0, lane 1)."""
    m = len(bucket)
    if m <= 1:
        return bucket
    lane0 = bucket[:, 0]
    packed = m <= 1 << 16
    if packed:
        # Value-sort keys that hold lane 0's top 48 bits and the row's index in the low 16 bits.
        # This is faster than argsort and yields the permutation too.
        key = lane0 & ~_LOW16
        key |= np.arange(m, dtype=_U)
        key.sort()
        order = (key & _LOW16).astype(np.intp)
    else:
        order = np.argsort(lane0)
    out = _as_pairs(_as_rows(bucket)[order])
    s0, s1 = out[:, 0], out[:, 1]
    # Rows that tie on the sort key stay in input order. That only matters when they differ:
    # rare (about m**2 / 2**49), but then a full (lane 0, lane 1) sort of the bucket fixes the order.
    same = ((s0[1:] ^ s0[:-1]) <= _LOW16) if packed else (s0[1:] == s0[:-1])
    if same.any():
        differ = same & ((s0[1:] != s0[:-1]) | (s1[1:] != s1[:-1]))
        if differ.any():
            out = _as_pairs(_as_rows(out)[np.lexsort((s1, s0))])
    return out


def _partition(digests: np.ndarray, top: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Group the digests by their bucket digit `top` (a one-digit radix partition).

    Returns the partitioned (n, 2) array and the bucket boundaries. Block by block, rows are
    ordered by digit in cache and then scattered into their buckets. Each bucket gets short
    sequential runs, so memory traffic stays mostly sequential. A global gather
    `digests[argsort(digit)]` would miss the cache on nearly every row.
    """
    n = len(digests)
    nb = 1 << bits
    bounds = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(np.bincount(top, minlength=nb), out=bounds[1:])
    cursor = bounds[:-1].copy()
    src, parted = _as_rows(digests), np.empty_like(digests)
    dst = _as_rows(parted)
    local_start = np.zeros(nb, dtype=np.int64)
    step = _PARTITION_ROWS
    ramp = np.arange(min(step, n), dtype=np.int64)
    for start in range(0, n, step):
        digit = top[start : start + step]
        m = len(digit)
        order = np.argsort(digit, kind="stable")  # radix sort for 8/16-bit keys
        sorted_digit = digit[order]
        counts = np.bincount(digit, minlength=nb)
        np.cumsum(counts[:-1], out=local_start[1:])
        dest = cursor[sorted_digit]
        dest += ramp[:m]
        dest -= local_start[sorted_digit]
        dst[dest] = src[start : start + m][order]
        cursor += counts
    return parted, bounds


def _sorted_digest_hash(header: bytes, digests: np.ndarray, top: np.ndarray | None = None) -> str:
    """SHA-256 of the header and of the digests sorted as 128-bit pairs (lane 0, lane 1), each
    written as two little-endian uint64. `top` holds the precomputed bucket digits (see
    `_sort_bits`); they are derived here when absent."""
    h = hashlib.sha256(header)
    n = len(digests)
    bits = _sort_bits(n)
    if bits == 0:
        if n:
            h.update(_sort_bucket(digests).astype("<u8", copy=False).data)
        return h.hexdigest()
    if top is None:
        top = (digests[:, 0] >> _U(64 - bits)).astype(np.uint8 if bits <= 8 else np.uint16)
    parted, bounds = _partition(digests, top, bits)
    for b in range(1 << bits):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if hi > lo:
            h.update(_sort_bucket(parted[lo:hi]).astype("<u8", copy=False).data)
    return h.hexdigest()


def fingerprint(
    table: Any, *, include_names: bool = True, index: bool = False, policy: CanonPolicy | None = None
) -> str:
    """SHA-256 hex fingerprint of a result table's row multiset (Eq. 23).

    `table`: a pandas DataFrame or Series, a pyarrow Table, RecordBatch or RecordBatchReader, a
    DuckDB relation or executed connection, or any object with `__arrow_c_stream__`.
    `include_names`: hash the column names (column order always counts).
    `index`: treat the pandas index levels as leading columns, as `reset_index()` would.
    `policy`: the normalization rules, `CanonPolicy()` by default.
    """
    policy = policy or _DEFAULT_POLICY
    arrow = _as_arrow(table, policy, index)
    digests, top = _table_digests(arrow, policy, _sort_bits(arrow.num_rows))
    names = [str(name) for name in arrow.column_names] if include_names else None
    return _sorted_digest_hash(_header(names, arrow.num_columns, arrow.num_rows, policy), digests, top)


def fingerprint_scalar(value: Any, *, policy: CanonPolicy | None = None) -> str:
    """Fingerprint of a scalar result. It is defined as the fingerprint of a one-row, one-column
    table without a name, so `fingerprint_scalar(n)` equals
    `fingerprint(con.sql("SELECT count(*) ..."), include_names=False)`."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    arr = _scalar_array(value)
    return fingerprint(pa.table({"value": arr}), include_names=False, policy=policy)


def _scalar_array(value: Any) -> pa.Array:
    if value is None:
        return pa.nulls(1)
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return pa.nulls(1)
    except ImportError:  # pandas is a project dependency; stay usable without it anyway
        pass
    if isinstance(value, np.datetime64) and np.isnat(value):
        return pa.nulls(1)
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        # Beyond int64: a scale-0 decimal, which follows the same rule as DuckDB's HUGEINT results.
        return pa.array([_decimal.Decimal(value)])
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time, _dt.timedelta, str, bytes, bool, int, float)):
        return pa.array([value])
    try:
        return pa.array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise TypeError(f"fingerprint_scalar: cannot canonicalize {type(value).__name__}: {exc}") from exc
