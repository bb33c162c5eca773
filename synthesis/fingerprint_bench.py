"""Benchmark of `synthesis.fingerprint.fingerprint` against a naive per-row Python version.

    python -m synthesis.fingerprint_bench                      # 1M and 10M rows, naive on 200k
    python -m synthesis.fingerprint_bench --rows 100000 --naive-rows 20000 --repeat 1

The table has 6 mixed-type columns: int64, float64, string, bool, date32, and a nullable int64
(10% NULL). The process is pinned to one CPU, with Arrow and OpenMP limited to one thread.
The output reports wall-clock and CPU-time throughput. On a shared machine, wall-clock time
includes waits for other processes, while CPU time does not. Peak memory is the tracemalloc peak
of numpy allocations during one extra run (the input table itself excluded), plus the process's
max RSS.

`naive_fingerprint` is the same specification written one row at a time in plain Python:
the rounding in scalar IEEE arithmetic, 8-byte string words via int.from_bytes, and a sorted
list of (lane0, lane1) tuples. It returns the identical hash, so the benchmark also checks the
vectorized code against it, and the tests use it as a reference.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # must be set before numpy loads its BLAS

import argparse
import hashlib
import math
import resource
import struct
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from synthesis import fingerprint as fp

_M64 = (1 << 64) - 1


# --------------------------------------------------------------------------------------------
# Naive reference: one row, one cell at a time.
# --------------------------------------------------------------------------------------------
def _py_round(f: float, digits: int) -> float:
    if math.isinf(f) or f == 0.0:
        return f
    a = abs(f)
    _, e2 = math.frexp(a)
    e10 = min(max(math.floor((e2 - 1) * fp._LOG10_2), -fp._P10_OFF), fp._P10_OFF - 1)
    if a >= float(f"1e{e10 + 1}"):
        e10 += 1
    k = digits - 1 - e10

    def scale(k: int) -> tuple[float, float, float]:
        kpos, kneg = max(k, 0), min(max(-k, 0), 330)
        k1 = min(kpos, 300)
        return float(f"1e{k1}"), float(f"1e{min(kpos - k1, 330)}"), float(f"1e{kneg}")

    p1, p2, pneg = scale(k)
    r = float(round(a * p1 * p2 / pneg))  # round(): half to even, like np.rint
    if r >= 10.0**digits:
        r = 10.0 ** (digits - 1)
        p1, p2, pneg = scale(k - 1)
    return math.copysign(r * pneg / p1 / p2, f)


def _py_number_word(f: float, digits: int, lane: int, policy: fp.CanonPolicy) -> int:
    if math.isnan(f):
        if policy.nan_is_null:
            return fp._TAG[fp.NULL][lane]
        return fp._CANON_NAN_BITS ^ fp._TAG[fp.FLOAT][lane]
    v = _py_round(f, digits)
    if math.isfinite(v) and v == math.floor(v) and abs(v) < 2.0**63:
        return (int(v) & _M64) ^ fp._TAG[fp.INT][lane]
    (bits,) = struct.unpack("<Q", struct.pack("<d", v))
    return bits ^ fp._TAG[fp.FLOAT][lane]


def _py_bytes_word(raw: bytes, kind: int, lane: int) -> int:
    total = 0
    for w in range((len(raw) + 7) // 8):
        word = int.from_bytes(raw[8 * w : 8 * w + 8].ljust(8, b"\0"), "little")
        total += fp._fmix64_int((word + (w + 1) * fp._WORD_MUL[lane]) & _M64)
    return ((total + len(raw) * fp._LEN_MUL[lane]) & _M64) ^ fp._TAG[kind][lane]


def _py_temporal_word(days: int, ns: int, kind: int, lane: int) -> int:
    return ((days * fp._DAY_MUL[lane] + ns) & _M64) ^ fp._TAG[kind][lane]


def _py_column(col: pa.ChunkedArray) -> tuple[pa.DataType, list[Any]]:
    """Python values of a column. Temporal columns come back as their integer counts: Python's
    datetime would drop nanoseconds."""
    typ = col.type
    if pa.types.is_dictionary(typ):
        col = col.cast(typ.value_type)
        typ = col.type
    if pa.types.is_date32(typ):
        return typ, pc.cast(col, pa.int32()).to_pylist()
    if (
        pa.types.is_date64(typ)
        or pa.types.is_timestamp(typ)
        or pa.types.is_duration(typ)
        or pa.types.is_time(typ)
    ):
        return typ, pc.cast(col, pa.int64()).to_pylist()
    return typ, col.to_pylist()


def _py_word(value: Any, typ: pa.DataType, lane: int, policy: fp.CanonPolicy) -> int:
    tag = fp._TAG
    if value is None:
        return tag[fp.NULL][lane]
    if pa.types.is_boolean(typ):
        return int(value) ^ tag[fp.BOOL][lane]
    if pa.types.is_integer(typ):
        if -(2**63) <= value < 2**63:
            return (value & _M64) ^ tag[fp.INT][lane]
        return _py_number_word(float(value), policy.sig_digits, lane, policy)
    if pa.types.is_floating(typ):
        digits = policy.sig_digits
        if not pa.types.is_float64(typ):
            digits = min(digits, policy.float32_sig_digits)
        return _py_number_word(float(value), digits, lane, policy)
    if pa.types.is_decimal(typ):
        if typ.scale <= 0 and -(2**63) <= int(value) < 2**63:
            return (int(value) & _M64) ^ tag[fp.INT][lane]
        return _py_number_word(float(value), policy.sig_digits, lane, policy)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return _py_bytes_word(value.encode("utf-8"), fp.STRING, lane)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return _py_bytes_word(bytes(value), fp.BINARY, lane)
    if pa.types.is_date32(typ):
        return _py_temporal_word(value, 0, fp.TEMPORAL, lane)
    if pa.types.is_date64(typ) or pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
        unit = "ms" if pa.types.is_date64(typ) else typ.unit
        days, rem = divmod(value, fp._NS_PER_DAY // fp._UNIT_NS[unit])
        kind = fp.DURATION if pa.types.is_duration(typ) else fp.TEMPORAL
        return _py_temporal_word(days, rem * fp._UNIT_NS[unit], kind, lane)
    if pa.types.is_time(typ):
        return (value * fp._UNIT_NS[typ.unit]) ^ tag[fp.TIME][lane]
    if typ == pa.month_day_nano_interval():
        extra, ns = divmod(value.nanoseconds, fp._NS_PER_DAY)
        base = (value.days + extra) * fp._DAY_MUL[lane] + ns
        if value.months == 0:
            return (base & _M64) ^ tag[fp.DURATION][lane]
        return (base & _M64) ^ fp._fmix64_int((value.months & _M64) ^ tag[fp.INTERVAL][lane])
    raise TypeError(f"naive_fingerprint: unsupported type {typ}")


def naive_fingerprint(table: Any, *, include_names: bool = True, policy: fp.CanonPolicy | None = None) -> str:
    """Per-row pure-Python version of `fingerprint`. The hash is identical; it runs ~100x slower."""
    policy = policy or fp.CanonPolicy()
    arrow = fp._as_arrow(table, policy, False)
    columns = [_py_column(arrow.column(j)) for j in range(arrow.num_columns)]
    keys = [[fp._column_key(j, lane) for lane in (0, 1)] for j in range(arrow.num_columns)]
    digests = []
    for i in range(arrow.num_rows):
        d0 = d1 = 0
        for j, (typ, values) in enumerate(columns):
            value = values[i]
            d0 += fp._fmix64_int(_py_word(value, typ, 0, policy) ^ keys[j][0])
            d1 += fp._fmix64_int(_py_word(value, typ, 1, policy) ^ keys[j][1])
        digests.append((d0 & _M64, d1 & _M64))
    digests.sort()
    names = [str(n) for n in arrow.column_names] if include_names else None
    h = hashlib.sha256(fp._header(names, arrow.num_columns, arrow.num_rows, policy))
    for d0, d1 in digests:
        h.update(struct.pack("<QQ", d0, d1))
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# Benchmark.
# --------------------------------------------------------------------------------------------
def make_table(n: int, seed: int = 0) -> pa.Table:
    """6 mixed-type columns, shaped like an analytical result."""
    rng = np.random.default_rng(seed)
    customer = rng.integers(0, 10**7, n)
    nullable = rng.integers(0, 100, n)
    return pa.table(
        {
            "order_id": pa.array(rng.integers(0, 10**12, n)),
            "amount": pa.array(np.round(rng.gamma(2.0, 50.0, n), 2)),
            "customer": pa.array(np.char.add("cust_", customer.astype(str)).astype(object), pa.string()),
            "returned": pa.array(rng.random(n) < 0.1),
            "order_date": pa.array(rng.integers(10_000, 20_000, n).astype(np.int32)).cast(pa.date32()),
            "quantity": pa.array(nullable, mask=rng.random(n) < 0.1),
        }
    )


def _pin_one_core() -> str:
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"cpu {cpu}"
    return "unpinned"


def _time(fn: Any, repeat: int) -> tuple[float, float, str]:
    """Best wall and best CPU seconds over `repeat` runs, and the result."""
    best_wall = best_cpu = math.inf
    result = ""
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, result


def _peak_numpy_mb(fn: Any) -> float:
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m synthesis.fingerprint_bench",
        description="rows/s of synthesis.fingerprint.fingerprint on a 6-column mixed-type table, "
        "one core, against a naive per-row Python version",
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table sizes")
    parser.add_argument(
        "--naive-rows", type=int, default=200_000, help="rows for the naive version (0: skip)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best one counts")
    args = parser.parse_args(argv)

    where = _pin_one_core()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"fingerprint benchmark: 6 columns (int64, float64, string, bool, date32, nullable int64), "
        f"one core ({where}), load average {load:.1f}"
    )
    header = f"{'implementation':<14} {'rows':>11} {'wall s':>8} {'cpu s':>8} {'rows/s wall':>12} {'rows/s cpu':>12} {'peak MB':>8}"
    print(header)
    print("-" * len(header))
    cpu_rate: dict[str, float] = {}
    for n in args.rows:
        table = make_table(n)
        wall, cpu, _ = _time(lambda table=table: fp.fingerprint(table), args.repeat)
        peak = _peak_numpy_mb(lambda table=table: fp.fingerprint(table))
        cpu_rate["fingerprint"] = n / cpu
        print(
            f"{'fingerprint':<14} {n:>11,} {wall:>8.3f} {cpu:>8.3f} {n / wall:>12,.0f} {n / cpu:>12,.0f} {peak:>8.0f}"
        )
        del table
    if args.naive_rows:
        sample = make_table(args.naive_rows)
        wall, cpu, naive_hash = _time(lambda: naive_fingerprint(sample), 1)
        cpu_rate["naive"] = args.naive_rows / cpu
        n = args.naive_rows
        print(
            f"{'naive per-row':<14} {n:>11,} {wall:>8.3f} {cpu:>8.3f} {n / wall:>12,.0f} {n / cpu:>12,.0f} {'':>8}"
        )
        same = naive_hash == fp.fingerprint(sample)
        print(f"naive hash == fingerprint hash on {n:,} rows: {same}")
        if not same:
            return 1
    if len(cpu_rate) == 2:
        print(
            f"speedup (cpu rows/s, largest table vs naive): {cpu_rate['fingerprint'] / cpu_rate['naive']:,.0f}x"
        )
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"process max RSS: {maxrss:,.0f} MB (includes the input tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
