"""The teacher's targeted probe: recompute a stage as the task states it and compare with what is stored.

    code = stated_probe("adelie_heavy", "SELECT * FROM adelie_birds WHERE body_mass_g >= 3550")
    verdict = read_probe(tool_result_stdout)      # StatedVerdict(same_rows=False, ...) or None

The probe runs in the forked workspace (`run_probe`): through the task's DuckDB connection it
fingerprints the stored table and the query as stated, and prints one JSON line with the two row
counts and whether their row multisets are equal. The fingerprint is order-insensitive in the
spirit of Eq. 23 and computed inside DuckDB: floats rounded to 9 places, each row hashed (DuckDB
hashes an integer alike whatever its width), the hashes summed. (It used to pull both tables into
Python and sort their rows as strings: about 8 s for nyc's 336k flights against 0.05 s now, and
most of the CPU of an nyc corpus build.) It prints no values, so nothing it shows can leak into a
repair hint. The query is the one the task text describes; a manager without the teacher's
knowledge writes it from the question and the code it inspected.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

__all__ = ["PROBE_TAG", "StatedVerdict", "read_probe", "stated_probe"]

PROBE_TAG = "stated_recompute"
_LINE = re.compile(r"^\{.*\}$")

_TEMPLATE = '''import json


def _fingerprint(query):
    # (rows, order-insensitive sum of row hashes); floats rounded to 9 places first (+ 0.0 folds
    # -0.0), so neither row order nor summation order matters
    columns = {conn}.execute(f"SELECT * FROM ({{query}}) LIMIT 0").description
    values = ", ".join(
        f"round(CAST(#{{i}} AS DOUBLE), 9) + 0.0"
        if str(kind) in ("FLOAT", "DOUBLE") or str(kind).startswith("DECIMAL")
        else f"#{{i}}"
        for i, (_, kind, *_rest) in enumerate(columns, 1)
    )
    return {conn}.execute(f"SELECT count(*), sum(hash({{values}})::HUGEINT) FROM ({{query}})").fetchone()


_stored = _fingerprint("SELECT * FROM {table}")
_stated = _fingerprint("""
{sql}
""")
print(json.dumps({{"check": "{tag}", "table": "{table}", "stored_rows": _stored[0],
                  "stated_rows": _stated[0], "same_rows": _stored == _stated}}))
'''


def stated_probe(table: str, stated_sql: str, connection: str = "con") -> str:
    """Probe code comparing table `table` with the result of `stated_sql` (a SELECT)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table):
        raise ValueError(f"not a table name: {table!r}")
    sql = stated_sql.strip().rstrip(";").replace('"""', "'''")
    return _TEMPLATE.format(conn=connection, table=table, sql=sql, tag=PROBE_TAG)


class StatedVerdict(BaseModel):
    table: str
    stored_rows: int
    stated_rows: int
    same_rows: bool


def read_probe(stdout: str) -> StatedVerdict | None:
    """The probe's verdict from its output; None when it did not print one (it failed)."""
    for line in reversed(stdout.strip().splitlines()):
        if _LINE.match(line.strip()):
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and data.get("check") == PROBE_TAG:
                return StatedVerdict.model_validate(
                    {k: data[k] for k in StatedVerdict.model_fields if k in data}
                )
    return None
