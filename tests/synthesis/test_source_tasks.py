"""`make synth` drawing threads from the paper's B.1 raw-task sources (synthesis.sources.external).

The fixtures are written here, in each source's published layout, around one small sales table
(a categorical column, two numeric ones, an id and a free-text column, with awkward header names):
DSBench data_modeling (train.csv), IDA-Bench (datasets/*.csv) and BIRD-INTERACT (a task line plus
the database's tables exported as CSV). The pipeline builds, replays and exports tasks from each.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from stateguard.artifacts.corpus_records import load_records
from stateguard.artifacts.run_folder import CorpusFolder
from synthesis.pipeline import run
from synthesis.sources.external import prepare_sources

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _sales_csv(path: Path, seed: int, rows: int = 90) -> None:
    rng = random.Random(seed)
    lines = ["Order ID,Region,Units Sold,Unit Price (USD),Note"]
    for i in range(rows):
        region = rng.choice(["North", "South", "East", "West"])
        units = rng.randint(1, 40)
        price = round(rng.uniform(2, 90), 2)
        note = f'"order {i}, as entered"' if i % 7 == 0 else f"n{i}"
        lines.append(f"{1000 + i},{region},{units},{price},{note}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_fixtures(root: Path) -> dict[str, Path]:
    ds = root / "dsbench"
    (ds / "data_modeling").mkdir(parents=True)
    (ds / "data_modeling" / "data.json").write_text(
        json.dumps({"name": "shop-sales", "url": "", "size": "9 kB"}) + "\n"
    )
    _sales_csv(ds / "data_modeling" / "data" / "data_resplit" / "shop-sales" / "train.csv", seed=1)
    _sales_csv(ds / "data_modeling" / "data" / "data_resplit" / "shop-sales" / "test.csv", seed=2, rows=20)
    (ds / "data_modeling" / "data" / "task").mkdir(parents=True)
    (ds / "data_modeling" / "data" / "task" / "shop-sales.txt").write_text("Predict units sold.\n")

    ida = root / "ida"
    task = ida / "storage" / "sales-notebook"
    (task / "instructions").mkdir(parents=True)
    (task / "instructions" / "instructions.md").write_text(
        "**Objective**\nStudy sales.\n\n**Your Knowledge**\nNone.\n"
    )
    _sales_csv(task / "datasets" / "orders.csv", seed=3)

    bird = root / "bird"
    bird.mkdir()
    lines = [
        {"instance_id": f"retail_{i}", "selected_database": "retail", "query": "Total units per region?"}
        for i in range(2)
    ]
    (bird / "bird_interact_data.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (bird / "retail").mkdir()
    (bird / "retail" / "retail_schema.txt").write_text("CREATE TABLE orders (...);\n")
    (bird / "retail" / "notes.csv").write_text(
        "a,b\n1,x\n2,y\n"
    )  # no categorical + 2 numeric columns: skipped
    _sales_csv(bird / "retail" / "orders.csv", seed=4)
    return {"dsbench": ds, "ida_bench": ida, "bird_interact": bird}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_fixtures(tmp_path_factory.mktemp("sources"))


def test_prepare_sources_picks_roles_and_writes_clean_tables(
    fixtures: dict[str, Path], tmp_path: Path
) -> None:
    tables = prepare_sources({k: str(v) for k, v in fixtures.items()}, tmp_path)
    assert [(t.source, t.raw_task_id, t.file) for t in tables] == [
        ("dsbench", "shop-sales", "data/data_resplit/shop-sales/train.csv"),
        (
            "bird_interact",
            "retail_0",
            "retail/orders.csv",
        ),  # notes.csv has no categorical + two numeric columns
        ("ida_bench", "sales-notebook", "datasets/orders.csv"),
    ]
    first = tables[0]
    assert first.info.name == "ds_shop_sales" and first.table == "train"
    assert first.category == "region" and first.measures == ("units_sold", "unit_price_usd")
    columns = [(c.name, c.sql_type) for c in first.info.tables[0].columns]
    assert columns == [
        ("order_id", "BIGINT"),
        ("region", "VARCHAR"),
        ("units_sold", "BIGINT"),
        ("unit_price_usd", "DOUBLE"),
        ("note", "VARCHAR"),
    ]
    clean = (Path(first.info.local_dir or "") / "train.csv").read_text().splitlines()
    assert clean[0] == "order_id,region,units_sold,unit_price_usd,note" and len(clean) == 91
    with pytest.raises(FileNotFoundError, match="sources.ida_bench"):
        prepare_sources({"ida_bench": str(tmp_path / "absent")}, tmp_path)
    with pytest.raises(ValueError, match="sources.kaggle"):
        prepare_sources({"kaggle": "x"}, tmp_path)


def _cfg(out_dir: Path, fixtures: dict[str, Path]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(
            "synth",
            overrides=[
                "synth=debug",
                f"out_dir={out_dir}",
                "progress=false",
                "datasets=[]",
                # one repair and one benign variant per task: enough to see the teacher work on these tables
                "export.repairs=1",
                "export.benign=1",
                "export.heavy=0",
                "export.abandon=0",
                "export.autos=0",
                *(f"sources.{k}={v}" for k, v in fixtures.items()),
            ],
        )


def test_pipeline_builds_and_exports_tasks_from_each_source(
    fixtures: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "synth"
    result = run(_cfg(out, fixtures))
    assert result.dropped == []
    assert result.by_source == {"bird_interact": 1, "dsbench": 1, "ida_bench": 1}
    assert sorted(result.by_dataset) == ["bird_retail_0", "ds_shop_sales", "ida_sales_notebook"]
    for task_id in result.tasks:
        root = out / task_id
        graph = json.loads((root / "hidden" / "graph.json").read_text())
        assert {t["family"] for t in graph["threads"]} <= {"segment_level", "high_share", "category_profile"}
        roles = {s["role"] for s in graph["stages"]}
        assert {"thread", "combine", "update", "update_child", "rollback"} <= roles
        assert (root / "hidden" / "replay.json").is_file()
        agent_csvs = sorted(p.name for p in (root / "agent" / "data").glob("*.csv"))
        assert len(agent_csvs) == 1 and agent_csvs[0] in ("train.csv", "orders.csv")
        _, records = load_records(CorpusFolder(out / "corpus").record_file(task_id))
        kept = [r for r in records if r.keep]
        assert any(r.variant == "clean" for r in kept), task_id
        assert any(r.variant != "clean" for r in kept), task_id  # a counterfactual variant is kept too
    assert result.export is not None and result.export["kept"] >= 6
