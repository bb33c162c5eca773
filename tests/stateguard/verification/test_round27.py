"""Round 27: re-run what the checks already find.

* A replaced SQL rule with string literals (`category = 'toys' AND region = 'North'`) is cut from
  the code with its quotes (`superseded._closed`): the turn, re-run reading the flag, runs and its
  answer is compared; before, the edit left a stray quote and the re-run failed.
"""

from __future__ import annotations

from pathlib import Path

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.superseded import KIND, FlagHistory
from tests.stateguard.verification.conftest import sandboxed

DEFINE = (
    "import json\ncon.execute(\"CREATE OR REPLACE TABLE oc AS SELECT *, category = 'toys' AND region = 'North' "
    'AS northern_toy FROM o")\n'
    "print(json.dumps({'n': con.execute('SELECT count_if(northern_toy) FROM oc').fetchone()[0]}))"
)
WIDEN = (
    "import json\ncon.execute(\"UPDATE oc SET northern_toy = category = 'toys' AND (region = 'North' OR price >= 200)\")\n"
    "print(json.dumps({'n': con.execute('SELECT count_if(northern_toy) FROM oc').fetchone()[0]}))"
)
OLD_RULE_READ = (
    "import json\nm = con.execute(\"\"\"\nSELECT avg(rating)\nFROM oc\nWHERE category = 'toys' AND region = 'North'\n"
    '""").fetchone()[0]\nprint(json.dumps({"mean_rating": round(m, 3)}))'
)
USE = "What is the mean rating of the northern-toy orders as currently defined?"


def test_a_replaced_sql_rule_with_string_literals_is_cut_with_its_quotes() -> None:
    history = FlagHistory()
    history.record(2, DEFINE, inspect_code(DEFINE))
    history.record(3, WIDEN, inspect_code(WIDEN))
    found = history.restated(USE, OLD_RULE_READ, inspect_code(OLD_RULE_READ))
    assert [(f.before, f.after) for f in found] == [("category = 'toys' AND region = 'North'", "northern_toy")]


def test_the_turn_that_writes_out_the_replaced_sql_rule_is_re_run_and_found(tmp_path: Path) -> None:
    session, ws = sandboxed(tmp_path)
    try:
        assert session.turn("Flag the northern-toy orders and count them.", DEFINE) == []
        widen = "The desk widens the northern-toy flag; recode it as they ask and count the orders again."
        assert session.turn(widen, WIDEN) == []
        findings = session.turn(USE, OLD_RULE_READ)
        assert len([f for f in findings if KIND in f.evidence]) == 1
        assert not any("could not be re-run" in n for n in session.verifier.last.notes)
        reading = "import json\nm = con.execute('SELECT avg(rating) FROM oc WHERE northern_toy').fetchone()[0]\n"
        assert session.turn(USE, reading + 'print(json.dumps({"mean_rating": round(m, 3)}))') == []
    finally:
        ws.close()
