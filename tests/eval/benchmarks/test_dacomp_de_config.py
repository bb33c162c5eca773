"""DAComp-DE: the evaluation-config loader, the task-folder reader and the flow settings."""

from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
import yaml

from eval.benchmarks.dacomp_de import FLOW
from eval.benchmarks.dacomp_de.config import ConfigError, load_eval_config, parse_eval_config
from eval.benchmarks.dacomp_de.task import TaskFolderError, find_tasks, gold_db_path, load_task
from stateguard.lifecycle import Regime
from tests.support.published import published

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dacomp_de" / "evaluation_config_small.yaml"
OFFICIAL = (
    "dacomp_de/evaluation_suite/evaluation_config_compare.yaml"  # read in place (tests/support/published.py)
)


def test_flow_matches_table_3() -> None:
    assert (FLOW.regime, FLOW.review_every, FLOW.budget_unit) == (Regime.SEGMENT_INDUCED, 5, "task")
    assert (FLOW.budget(with_manager=False), FLOW.budget(with_manager=True)) == (50, 60)


def test_fixture_config_loads() -> None:
    cfg = load_eval_config(FIXTURE)
    assert sorted(cfg.examples) == ["dacomp-de-evol-901", "dacomp-de-impl-901"]
    impl, evol = cfg.example("dacomp-de-impl-901"), cfg.example("dacomp-de-evol-901")
    assert (impl.kind, evol.kind) == ("impl", "evol")
    assert [impl.layers[x].weight for x in impl.layer_order()] == [15, 25, 60]
    assert [evol.layers[x].weight for x in evol.layer_order()] == [1, 59, 40]  # marts from the defaults
    assert (impl.schema_for("marts"), evol.schema_for("marts"), evol.schema_for("staging")) == (
        "marts",
        "mart",
        "staging",
    )
    assert evol.table_weight("stg_shop__customers") == 0
    assert evol.layers["staging"].tables["stg_shop__customers"].compare_cols == []
    assert list(impl.tables()) == [
        "stg_shop__orders",
        "stg_shop__customers",
        "int_shop__customer_orders",
        "shop__top_customers",
    ]
    # a prediction folder may carry a suffix, as in the official evaluator
    assert cfg.example("dacomp-de-impl-901-run2").example_id == "dacomp-de-impl-901"


def _base() -> dict:
    return yaml.safe_load(FIXTURE.read_text())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["examples"]["dacomp-de-impl-901"].pop("layers"), "examples.dacomp-de-impl-901.layers"),
        (
            lambda d: (
                d["examples"]["dacomp-de-impl-901"]["layers"]["marts"].pop("weight") and d.pop("scoring")
            ),
            "layers.marts has no `weight`",
        ),
        (lambda d: d["examples"]["dacomp-de-impl-901"].pop("database_file"), "database_file"),
        (
            lambda d: d["examples"]["dacomp-de-impl-901"]["layers"]["staging"]["tables"][
                "stg_shop__orders"
            ].update(weight=-1),
            "weight",
        ),
        (
            lambda d: d["examples"]["dacomp-de-impl-901"]["layers"]["staging"]["tables"][
                "stg_shop__orders"
            ].update(colour="red"),
            "colour",
        ),
    ],
)
def test_bad_config_names_file_and_field(mutate: Callable[[dict], object], message: str) -> None:
    data = _base()
    mutate(data)
    with pytest.raises(ConfigError, match="fixture.yaml") as err:
        parse_eval_config(data, source="fixture.yaml")
    assert message in str(err.value)


def test_bare_table_weight_and_errors() -> None:
    data = _base()
    data["examples"]["dacomp-de-impl-901"]["layers"]["marts"]["tables"] = {"shop__top_customers": 3}
    assert parse_eval_config(data).example("dacomp-de-impl-901").table_weight("shop__top_customers") == 3
    with pytest.raises(ConfigError, match="evaluation config not found"):
        load_eval_config(FIXTURE.with_name("absent.yaml"))
    with pytest.raises(ConfigError, match="no unique example 'dacomp-de-impl-999'"):
        parse_eval_config(data).example("dacomp-de-impl-999")


@pytest.mark.published_data
def test_official_config() -> None:
    cfg = load_eval_config(published(OFFICIAL))
    kinds = [ex.kind for ex in cfg.examples.values()]
    assert (kinds.count("impl"), kinds.count("evol")) == (30, 50)
    impl = cfg.example("dacomp-de-impl-001")
    assert {x: impl.layers[x].weight for x in impl.layer_order()} == {
        "staging": 15,
        "intermediate": 25,
        "marts": 60,
    }
    evol = cfg.example("dacomp-de-evol-001")
    assert evol.table_weight("int_lever__candidate_lifecycle") == 0
    assert evol.schema_for("marts") == "mart"


def _task_folder(root: Path, name: str = "dacomp-de-impl-007", spec: str = "docs/data_contract.yaml") -> Path:
    folder = root / "wrapper" / name
    for rel, text in {
        "run.py": "# builds shop.duckdb\n",
        "config/layer_dependencies.yaml": "layers: [staging, intermediate, marts]\n",
        spec: "contract or question\n",
        "sql/staging/stg_shop__orders.sql": "select * from raw.orders",
        "sql/marts/shop__top.sql": "select * from staging.stg_shop__orders",
    }.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    duckdb.connect(str(folder / "shop_start.duckdb")).close()
    return folder


def test_load_task_folder(tmp_path: Path) -> None:
    folder = _task_folder(tmp_path)
    task = load_task(folder)
    assert (task.example_id, task.kind, task.project) == ("dacomp-de-impl-007", "impl", "shop")
    assert task.spec_file.name == "data_contract.yaml"
    assert task.layer_dependencies == {"layers": ["staging", "intermediate", "marts"]}
    assert {k: sorted(v) for k, v in task.sql_files.items()} == {
        "marts": ["shop__top"],
        "staging": ["stg_shop__orders"],
    }
    evol = load_task(_task_folder(tmp_path, "dacomp-de-evol-003", spec="question.md"))
    assert (evol.kind, evol.spec_file.name) == ("evol", "question.md")
    assert [p.name for p in find_tasks(tmp_path)] == ["dacomp-de-evol-003", "dacomp-de-impl-007"]


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("run.py", "run.py is missing"),
        ("config/layer_dependencies.yaml", "layer_dependencies.yaml is missing"),
        ("docs/data_contract.yaml", "neither docs/data_contract.yaml"),
        ("shop_start.duckdb", "found no"),
    ],
)
def test_task_folder_errors(tmp_path: Path, remove: str, message: str) -> None:
    folder = _task_folder(tmp_path)
    (folder / remove).unlink()
    with pytest.raises(TaskFolderError, match=message):
        load_task(folder)


def test_gold_db_path(tmp_path: Path) -> None:
    gold = tmp_path / "gold" / "dacomp-de-gold" / "dacomp-de-impl-007" / "shop.duckdb"
    gold.parent.mkdir(parents=True)
    gold.write_bytes(b"")
    assert gold_db_path(tmp_path / "gold", "dacomp-de-impl-007", "shop.duckdb") == gold
    with pytest.raises(FileNotFoundError, match="make data BENCH=dacomp_de"):
        gold_db_path(tmp_path / "gold", "dacomp-de-impl-008", "shop.duckdb")
