"""The syntax check of probe programs with the `compile_python` tool, before they run.

    program, spans = syntax_program(items)     # one program, one function per probe item
    bad = culprit(spans, line)                 # the item whose lines hold a reported syntax error

The verifier compiles the probes it is about to run (requirement probes at verification, the
checks it attaches as executable constraints) in one `compile_python` call: each item's snippet
becomes the body of its own function, so the program only compiles when every snippet does, and
the line of a syntax error names the snippet that broke. That snippet is dropped (its requirement
is reported unverified, never a finding) and the rest is compiled again, until what is left
compiles. Only the syntax is checked here; nothing is run.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from stateguard.verification.probes import ProbeItem

Span = tuple[str, int, int]  # item id, first line, last line (1-based, inclusive)


def syntax_program(items: Sequence[ProbeItem]) -> tuple[str, list[Span]]:
    """One program that compiles exactly when every item's snippet compiles."""
    lines: list[str] = []
    spans: list[Span] = []
    for n, item in enumerate(items):
        # An indented body keeps the snippet's own syntax (a line added inside a multi-line string
        # literal only changes the string), and `pass` keeps an empty snippet a valid body.
        body = textwrap.indent(item.code, "    ", lambda _line: True) or "    pass"
        lines.append(f"def _probe_{n}():")
        first = len(lines) + 1
        lines.extend(body.splitlines() or ["    pass"])
        lines.append("    pass")
        spans.append((item.id, first - 1, len(lines)))
    return "\n".join(lines) + "\n", spans


def culprit(spans: Sequence[Span], line: int | None) -> str | None:
    """The id of the item whose function holds `line` (the header line included), if any."""
    if line is None:
        return None
    return next((item_id for item_id, first, last in spans if first <= line <= last), None)
