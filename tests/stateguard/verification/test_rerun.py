"""Which part of a turn's cells the answer gate may run again on the namespace they left."""

from __future__ import annotations

from stateguard.verification.rerun import cells_to_rerun

PREFIX = (
    "pms = pd.DataFrame({'pm': ['A', 'B']})\n"
    "qs = pd.merge_asof(qs, pms, on='qn')\n"  # reads qs and rebinds it: not twice
)
TAIL = (
    "per_pm = pms.merge(stats, on='pm', how='left')\n"
    "result = {p: int(n) for p, n in zip(per_pm['pm'], per_pm['n'])}\n"
)


def test_cells_that_are_safe_to_run_again_run_whole() -> None:
    cells = ["x = df[df['a'] > 1]\nn = len(x)\n", "result = {'n': n}\n"]
    assert cells_to_rerun(cells, "df['a'] > 1") == cells


def test_a_cell_that_rebinds_its_input_runs_from_the_edited_statement_on() -> None:
    cells = [PREFIX, TAIL + "print(result)\n"]
    assert cells_to_rerun(cells, "how='left'") == [TAIL + "print(result)\n"]
    # within one cell: the tail starts at the statement holding the edit
    assert cells_to_rerun([PREFIX + TAIL], "how='left'") == [TAIL]
    # the edit written with the other quotes is found too
    assert cells_to_rerun([PREFIX + TAIL], 'how="left"') == [TAIL]


def test_a_tail_that_changes_what_it_reads_runs_whole_as_before() -> None:
    for unsafe in (
        "stats['n'] = stats['n'] * 2\n",
        "rows.append(1)\nk = len(rows)\n",
        "df.dropna(inplace=True)\n",
    ):
        cells = [PREFIX + TAIL + unsafe]
        assert cells_to_rerun(cells, "how='left'") == cells
    # the edit inside the prefix: nothing safer to run
    assert cells_to_rerun([PREFIX + TAIL], "on='qn'") == [PREFIX + TAIL]
    assert cells_to_rerun([PREFIX + TAIL], "not in the cells") == [PREFIX + TAIL]
