"""Change detection for the dataflow: fingerprints (exact or structural) and content equality."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stateguard.dataflow.change import EXACT_CELLS, equal_content, fingerprint


def test_small_values_have_exact_fingerprints_that_see_any_change() -> None:
    frame = pd.DataFrame({"a": [1, 2, 3], "s": ["x", "y", "z"]})
    before = fingerprint(frame)
    assert before[1] and before[0]
    frame.loc[1, "s"] = "w"
    assert fingerprint(frame) != before
    items = [1, {"k": 2}]
    before = fingerprint(items)
    items[1]["k"] = 3  # type: ignore[index]
    assert before[1] and fingerprint(items) != before


def test_large_frames_get_a_structural_fingerprint() -> None:
    rows = EXACT_CELLS
    frame = pd.DataFrame({"a": np.arange(rows), "b": np.zeros(rows)})
    digest, exact = fingerprint(frame)
    assert not exact and digest == fingerprint(frame)[0]
    frame["c"] = 1  # a new column: a new block
    assert fingerprint(frame)[0] != digest
    again = fingerprint(frame)[0]
    del frame["c"]
    assert fingerprint(frame)[0] != again


def test_cell_defined_classes_are_fingerprinted_through_cloudpickle() -> None:
    namespace: dict[str, object] = {}
    exec("class Box:\n    def __init__(self):\n        self.v = 1\nb = Box()", namespace)
    box = namespace["b"]
    before = fingerprint(box)
    box.v = 2  # type: ignore[attr-defined]
    assert before[0] and before[1] and fingerprint(box) != before


def test_content_equality_on_rebinding() -> None:
    assert equal_content(7, 7) and equal_content("a" * 3, "aaa") and not equal_content(7, 7.0)
    assert equal_content(float("nan"), float("nan"))
    assert equal_content([1, [2]], [1, [2]]) and not equal_content([1], [2])
    frame = pd.DataFrame({"a": [1.0, None], "b": ["x", "y"]})
    assert equal_content(frame, frame.copy()) and not equal_content(frame, frame.assign(a=0.0))
    assert equal_content(np.arange(5), np.arange(5)) and not equal_content(np.arange(5), np.arange(1, 6))
    assert not equal_content(pd.DataFrame({"a": [1]}), pd.DataFrame({"b": [1]}))


def test_frame_fingerprints_ignore_pandas_internal_rearrangements() -> None:
    """Reading a frame can consolidate its memory blocks or rechunk an Arrow-backed string column;
    no value changes, so the fingerprint must not either (else every reader turns stale). Dates
    included: a datetime column offers no buffer to hash directly."""
    for rows in (50, 50_000):  # exact, then structural
        frame = pd.DataFrame(
            {
                "s": pd.Series(["AAPL", "GOOG"] * (rows // 2), dtype="str"),
                "d": pd.date_range("2000-01-01", periods=rows, freq="h"),
                "p": np.arange(rows) * 1.0,
            }
        )
        frame["r"] = frame["p"] * 2  # a second float block
        before = fingerprint(frame)
        assert before[0] and before[1] == (rows * 4 <= EXACT_CELLS)
        recent = frame[frame["d"] >= "2000-01-02"]
        sorted(frame["s"].unique())
        frame._consolidate_inplace()
        assert len(recent) and fingerprint(frame) == before
        frame.loc[0, "p"] = -1.0
        assert fingerprint(frame) != before  # row 0 is in the sample too


def _pair_cases() -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    base = pd.DataFrame(
        {
            "i": np.arange(6),
            "f": [0.5, np.nan, 2.0, 0.0, 1.5, np.nan],
            "s": pd.array(list("abcdef"), dtype="string"),
            "t": pd.to_datetime(["2024-01-01", None, "2024-01-03", "2024-01-04", None, "2024-01-06"]),
            "b": [True, False, True, True, False, False],
        }
    )
    cases = [("same content, fresh objects", base, base.copy())]
    neg_zero = base.copy()
    neg_zero.loc[3, "f"] = -0.0  # equal value, other bits: pandas calls the frames equal
    cases.append(("-0.0 against 0.0", base, neg_zero))
    for column, value in [("i", 9), ("f", 7.0), ("s", "z"), ("t", pd.Timestamp("2020-01-01")), ("b", False)]:
        changed = base.copy()
        changed.loc[0, column] = value
        cases.append((f"one cell of {column} changed", base, changed))
    nan_moved = base.copy()
    nan_moved.loc[0, "f"], nan_moved.loc[1, "f"] = np.nan, 0.5
    cases.append(("a NaN moved", base, nan_moved))
    cases.append(("another index", base, base.set_axis(range(1, 7))))
    split = base.copy()
    split["g"] = split["f"]  # a block of its own until the frame is consolidated (`copy` does it)
    cases.append(("another block layout, same content", split.copy(), split))
    objects = base.assign(o=[{"k": 1}, None, 2, "x", 3.5, [1]])
    cases.append(("an object column", objects, objects.copy()))
    return cases


def test_frame_content_equality_agrees_with_pandas_equals() -> None:
    from stateguard.dataflow.change import _frames_equal_by_blocks

    decided = 0
    for name, a, b in _pair_cases():
        expected = bool(a.equals(b))
        assert equal_content(a, b) is expected, name
        by_blocks = _frames_equal_by_blocks(a, b)
        assert by_blocks in (None, expected), name
        decided += by_blocks is not None
    assert decided >= 8  # aligned layouts are decided block by block, without `equals`


def test_arrow_text_columns_are_equal_when_their_buffers_are() -> None:
    import pyarrow as pa

    from stateguard.dataflow.change import _same_arrow_buffers

    def text(values: list[str | None], dtype: str = "string[pyarrow]") -> pd.Series:
        return pd.Series(values, dtype=dtype)

    words = ["north", None, "east", "west", "ü"]
    a, b = text(words).array, text(words).array
    assert a is not b and _same_arrow_buffers(a, b) and a.equals(b)  # nulls in the same places
    changed = text(["north", None, "east", "west", "u"]).array
    assert not _same_arrow_buffers(a, changed) and not changed.equals(a)
    assert not _same_arrow_buffers(a, text(["north", "x", "east", "west", "ü"]).array)  # a null filled
    # the same values at other offsets: not decided here, and equal_content still finds them equal
    long = text(["pad", *words]).iloc[1:].reset_index(drop=True)
    assert not _same_arrow_buffers(a, long.array) and a.equals(long.array)
    assert equal_content(pd.DataFrame({"s": text(words)}), pd.DataFrame({"s": long}))
    # a dictionary array's values are not among its buffers: never decided from them
    codes = pa.array([0, 1, 0], pa.int8())
    left = pa.DictionaryArray.from_arrays(codes, pa.array(["a", "b"]))
    right = pa.DictionaryArray.from_arrays(codes, pa.array(["a", "c"]))
    x = pd.Series(left, dtype=pd.ArrowDtype(left.type)).array
    y = pd.Series(right, dtype=pd.ArrowDtype(right.type)).array
    assert not _same_arrow_buffers(x, y) and not x.equals(y)
    # nor floats, whose equal bits may be a NaN that Arrow's equality does not call equal
    nan = pd.array([1.0, float("nan")], dtype="float64[pyarrow]")
    assert not _same_arrow_buffers(nan, nan.copy())
    # frames whose string columns are rewritten alike compare equal, and one changed cell is seen
    frame = pd.DataFrame({"k": np.arange(5), "s": text(words)})
    assert equal_content(frame, frame.copy())
    other = frame.copy()
    other.loc[4, "s"] = "z"
    assert not equal_content(frame, other)
