"""`dataset_scale`: a costly dataset drawn less often, its tasks a prefix of the full list."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from synthesis.pipeline import plan_from_config, plan_specs

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHAPES = {"dabstep": 5, "dacomp_de": 5}


def _plan(scale: dict[str, float] | None) -> list:
    return plan_specs(["penguins", "nyc"], 10, (12, 30), 0, SHAPES, scale)


def test_scaled_dataset_is_a_prefix_of_its_full_list():
    full, scaled = _plan(None), _plan({"nyc": 0.4})
    counts = Counter((s.dataset, s.shape) for s in scaled)
    assert counts == {
        ("penguins", "longds"): 10,
        ("penguins", "dabstep"): 5,
        ("penguins", "dacomp_de"): 5,
        ("nyc", "longds"): 4,
        ("nyc", "dabstep"): 2,
        ("nyc", "dacomp_de"): 2,
    }
    # the other dataset is untouched, and every scaled task is one of the full list's first ones
    assert [s for s in scaled if s.dataset == "penguins"] == [s for s in full if s.dataset == "penguins"]
    for shape, n in (("longds", 4), ("dabstep", 2), ("dacomp_de", 2)):
        want = [s.task_id for s in full if s.dataset == "nyc" and s.shape == shape][:n]
        assert [s.task_id for s in scaled if s.dataset == "nyc" and s.shape == shape] == want


def test_scale_zero_drops_a_dataset_and_one_changes_nothing():
    assert {s.dataset for s in _plan({"nyc": 0})} == {"penguins"}
    assert _plan({"nyc": 1.0, "penguins": 1}) == _plan(None)


@pytest.mark.parametrize(
    "scale, message",
    [
        ({"flights": 0.5}, r"dataset_scale\.flights: not one of datasets"),
        ({"nyc": -1}, r"dataset_scale\.nyc=-1"),
    ],
)
def test_bad_scale_names_the_field(scale, message):
    with pytest.raises(ValueError, match=message):
        _plan(scale)


def test_corpus_preset_plans_its_tasks():
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose("synth", overrides=["synth=corpus"])
    specs = plan_from_config(cfg)
    by_dataset = Counter(s.dataset for s in specs)
    assert by_dataset == {"penguins": 220, "gapminder": 220, "nyc": 88}
    assert cfg.export.max_trajectories == 3000


@pytest.mark.parametrize(
    "overrides, scale",
    [(["dataset_scale={nyc:0.5}"], {"nyc": 0.5}), (["synth=corpus", "dataset_scale=null"], None)],
)
def test_command_line_overrides_compose(overrides, scale):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose("synth", overrides=overrides)
    assert (dict(cfg.dataset_scale) if cfg.dataset_scale is not None else None) == scale
