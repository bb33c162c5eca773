"""The eleventh round: a named SQL window read as its definition, ..."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stateguard.verification.conftest import sandboxed

WHOLE_SERIES = "From now on an order is pricey when it costs more than the average price (taken over the whole series)."


@pytest.mark.parametrize(("window", "found"), [("()", False), ("(PARTITION BY category)", True)])
def test_a_named_sql_window_is_read_as_its_definition(tmp_path: Path, window: str, found: bool) -> None:
    session, ws = sandboxed(tmp_path)
    code = (
        "import json\n"
        'con.execute("CREATE OR REPLACE TABLE p AS SELECT *, price > AVG(price) OVER w AS pricey '
        f'FROM o WINDOW w AS {window}")\n'
        "n = con.execute('SELECT COUNT(*) FILTER (WHERE pricey) FROM p').fetchone()[0]\n"
        "print(json.dumps({'n_pricey': int(n)}))"
    )
    with ws:
        assert session.turn("How many orders?", "import json\nprint(json.dumps({'n': 1}))") == []
        findings = session.turn(
            "Flag `pricey` in a table `p` that way. How many orders are pricey?", code, own_context=WHOLE_SERIES
        )
    assert bool(findings) is found
    if found:
        assert "whole series" in findings[0].reason
