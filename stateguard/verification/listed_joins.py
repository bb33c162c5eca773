"""A typed-in list joined to the data, where the code counts the entries that have nothing.

    phases = ... VALUES ('korean war', 1950, 1953), ...      -- a list written out in the code
    SELECT p.phase, COUNT(c.yr) FROM phases p JOIN copper c ON ... GROUP BY p.phase
    n_without = sum(r[1] == 0 for r in _rows)                 -- entries with no match, counted

The turn's own code says it expects entries without a match: it tests the joined result for zero
(`== 0`), or fills its missing values with 0 (`fillna(...0...)`, `COALESCE(..., 0)`). A join that
cannot keep an unmatched entry of the list (an inner join, the list on the dropped side of an outer
join, or a WHERE on the other side's columns after a LEFT JOIN) makes those zeros impossible. No
words are read: the list is the code's (`CodeSemantics.listed`, or a list an earlier turn typed in),
and the evidence is the join re-run keeping the list's side (other rows) and the answer gate
re-running the turn that way (a changed answer).
"""

from __future__ import annotations

import re

from stateguard.inspection.code_model import CodeSemantics, Join, Selection
from stateguard.verification import sql_edit
from stateguard.verification.bind_shape import side_name
from stateguard.verification.requirements import Kind, Requirement

# a zero looked for, or put in for a missing value
_ZERO = re.compile(
    r"[=!]=\s*0(?![\w.])|\bfillna\([^)]*?(?<![\w.])0(?![\w.])|\b(?:COALESCE|IFNULL|ifnull|coalesce)\s*\([^()]*,\s*0\s*\)",
)


_NAMED = re.compile(r"""\[\s*["'](\w+)["']\s*\]|["'](\w+)["']\s*:\s*0""")


# a count of one column's values (not of rows): SQL `count(b.sample)`, pandas `("wife_id", "count")`
# or `["wife_id"].count()`
_COUNT_SQL = re.compile(r"\bcount\s*\(\s*(?!\*|distinct\b)(?:(\w+)\.)?(\w+)\s*\)", re.IGNORECASE)
_COUNT_PANDAS = re.compile(r"""["'](\w+)["']\s*,\s*["']count["']|\[\s*["'](\w+)["']\s*\]\s*\.count\(\)""")


def _list_alias(sql: str, name: str) -> str:
    m = re.search(
        rf"\b{re.escape(name)}\s+(?:AS\s+)?(?!ON\b|USING\b|JOIN\b|LEFT\b|RIGHT\b|INNER\b|FULL\b|WHERE\b|GROUP\b)(\w+)",
        sql,
        re.I,
    )
    return m.group(1).lower() if m else name.lower()


def _data_side(sql: str, name: str, list_columns: set[str], refs: list[tuple[str, str]]) -> bool:
    """Is one of the (qualifier, column) references of the statement on the data side of its join with
    the list `name`: qualified by another alias than the list's, or unqualified and not a list column?"""
    alias = _list_alias(sql, name)
    columns = {c.lower() for c in list_columns}
    return any(q.lower() not in (alias, name.lower()) if q else c.lower() not in columns for q, c in refs)


def counts_matches(sql: str, name: str, list_columns: set[str]) -> bool:
    """The statement counts a column of the data side of its join with the list `name` (`count(b.sample)`
    beside `FROM dx_list d`): a count that is 0 for an entry with no match, which only a join keeping
    the list's every entry can give."""
    return _data_side(sql, name, list_columns, _COUNT_SQL.findall(sql))


# a column of the joined result tested for a missing value in pandas
_MISSING_PANDAS = re.compile(r"""\[\s*["'](\w+)["']\s*\]\s*\.(?:isna|isnull)\(\)""")
# a column tested for a missing value: `WHERE h.k IS NULL`
_IS_NULL = re.compile(r"(?:\b(\w+)\.)?\b(\w+)\s+IS\s+NULL\b", re.IGNORECASE)


def tests_missing(sql: str, name: str, list_columns: set[str]) -> bool:
    """The statement tests a column of the data side of its join with the list `name` for a missing
    value (`LEFT JOIN (...) h ON ... WHERE h.k IS NULL`): the entries with no match, which only a join
    keeping the list's every entry can hold."""
    return _data_side(sql, name, list_columns, _IS_NULL.findall(sql))


def expects_unmatched(
    code: str, sel: Selection, list_columns: set[str] | None = None, name: str = ""
) -> bool:
    """The statement itself fills missing values with 0, counts a column of the data's side or tests
    one for a missing value, or a line that reads its result tests it for 0, counts such a column or
    tests one for a missing value (`levels_k["k"].isna()`). A line that only names the list's own
    columns (`trades["position"].fillna(0)` after a join of the daily rows to a table of positions)
    fills the data's rows that the list does not match: it expects unmatched data, not unmatched
    entries."""
    own = sel.sql or ""
    listed = set(list_columns or ())
    if _ZERO.search(own) or (
        own and name and (counts_matches(own, name, listed) or tests_missing(own, name, listed))
    ):
        return True
    target = sel.target or ""
    if not target.isidentifier():
        return False
    reads = re.compile(rf"(?<![\w.]){re.escape(target)}(?!\w)")
    for line in code.splitlines():
        if not reads.search(line):
            continue
        counted = {a or b for a, b in _COUNT_PANDAS.findall(line)}
        if counted and not counted <= listed:
            return True
        missing = set(_MISSING_PANDAS.findall(line))  # `levels_k["k"].isna().sum()`: entries with nothing
        if missing and not missing <= listed:
            return True
        if not _ZERO.search(line):
            continue
        named = {a or b for a, b in _NAMED.findall(line)}
        if named and named <= listed:
            continue
        return True
    return False


def listed_side(j: Join, listed: set[str]) -> str | None:
    """The side of the join that reads a typed-in list, when exactly one does."""
    sides = [side for side in ("left", "right") if side_name(getattr(j, side)).lower() in listed]
    return sides[0] if len(sides) == 1 else None


def with_copies(listed: set[str], sem: CodeSemantics) -> set[str]:
    """`listed`, the lists `sem`'s code types in, and the tables made from one of them row for row (`CREATE TABLE terms AS SELECT
    name, start_year * 4 + start_quarter AS first_q, LEAD(...) OVER (...) FROM chancellors`): no
    join, filter, grouping or aggregate but a window, so the same entries."""
    out = set(listed) | {n.lower() for n in sem.listed}
    for sel in sem.selections:
        target = (sel.target or "").lower()
        if (
            target.isidentifier()
            and len(sel.sources) == 1
            and sel.sources[0].lower() in out
            and not (sel.joins or sel.conditions or sel.group_keys or sel.limit is not None)
            and all(a.window for a in sel.aggregates)
        ):
            out.add(target)
    return out


def keeps(sel: Selection, j: Join, side: str) -> bool:
    """The join keeps every row of `side`, and no WHERE on the other side's columns drops them again."""
    if j.how not in (side, "outer"):
        return False
    return sel.language != "sql" or not sel.sql or sql_edit.unfilter_kept_side(sel.sql, side) is None


def requirement(name: str) -> Requirement:
    return Requirement(
        kind=Kind.JOIN,
        text=f"every entry of the typed-in list {name}, an entry without a match included (the code counts "
        "entries with nothing)",
        how="left",
        subject=[name],
    )
