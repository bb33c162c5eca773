"""The teacher's targeted probe: recompute a stage as the task states it and compare with what is stored.

    code = stated_probe("adelie_heavy", "SELECT * FROM adelie_birds WHERE body_mass_g >= 3550")
    verdict = read_probe(tool_result_stdout)      # StatedVerdict(same_rows=False, ...) or None

The probe runs in the forked workspace (`run_probe`): it reads the stored table and the query as
stated through the task's DuckDB connection and prints one JSON line with the two row counts and
whether their row multisets are equal (a small order-insensitive fingerprint in the spirit of
Eq. 23: values canonicalized, rows sorted, SHA-256). It prints no values, so nothing it shows can
leak into a repair hint. The query is the one the task text describes; a manager without the
teacher's knowledge writes it from the question and the code it inspected.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

__all__ = ["PROBE_TAG", "StatedVerdict", "read_probe", "stated_probe"]

PROBE_TAG = "stated_recompute"
_LINE = re.compile(r"^\{.*\}$")

_TEMPLATE = '''import hashlib
import json


def _rows_key(rows):
    def canon(v):
        if isinstance(v, float):
            return "nan" if v != v else repr(round(v, 9) + 0.0)
        return repr(v)
    lines = sorted("|".join(canon(v) for v in row) for row in rows)
    return hashlib.sha256("\\n".join(lines).encode()).hexdigest()


_stored = {conn}.execute("SELECT * FROM {table}").fetchall()
_stated = {conn}.execute("""
{sql}
""").fetchall()
print(json.dumps({{"check": "{tag}", "table": "{table}", "stored_rows": len(_stored),
                  "stated_rows": len(_stated), "same_rows": _rows_key(_stored) == _rows_key(_stated)}}))
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
