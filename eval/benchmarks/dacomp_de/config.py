"""The DAComp-DE evaluation config: which tables are scored, on which columns, with which weights.

The benchmark ships one YAML file (`evaluation_suite/evaluation_config_compare.yaml`, 80 examples:
`dacomp-de-impl-001..030`, `dacomp-de-evol-001..050`). Each example names its `database_file`,
the `expected_schemas` of the gold database, and per layer a `weight` plus per table a `weight`
and the `compare_cols` that decide equality. A top-level `scoring.partial_evaluation.layer_weights`
block holds default layer weights (staging 15, intermediate 25, marts 60).

    cfg = load_eval_config("../shared/benchmarks/dacomp_de/evaluation_suite/evaluation_config_compare.yaml")
    ex = cfg.example("dacomp-de-impl-001")
    ex.kind, ex.schema_for("marts"), ex.table_weight("stg_lever__user")

Evolution examples give unchanged tables weight 0 (and usually no compare columns); they are
still compared, but weigh nothing in the partial score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Layers in the order a pipeline builds them; layers outside this list come after, in config order.
CANONICAL_LAYERS = ("staging", "intermediate", "marts")
# The gold databases name the marts layer's schema either `marts` or `mart`.
MART_ALIASES = ("marts", "mart")


class ConfigError(ValueError):
    """The evaluation config is missing, unreadable or does not follow the published schema."""


class TableSpec(BaseModel):
    """One scored table: its weight inside its layer and the columns compared against gold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: float = Field(ge=0, description="Share of the layer score; 0 = compared but not weighted.")
    compare_cols: list[str] = Field(
        default_factory=list, description="Columns hashed per row; empty = every column both sides have."
    )
    sql_name: str | None = Field(default=None, description="SQL file stem when it differs from the table.")


class LayerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: float = Field(ge=0, description="Weight of this layer in the example score.")
    description: str = ""
    tables: dict[str, TableSpec] = Field(default_factory=dict)

    @field_validator("tables", mode="before")
    @classmethod
    def _bare_weights(cls, tables: Any) -> Any:
        # A table may be given as a bare number, meaning its weight.
        if isinstance(tables, dict):
            return {name: {"weight": v} if isinstance(v, int | float) else v for name, v in tables.items()}
        return tables


class ExampleSpec(BaseModel):
    """One benchmark example (task) as the evaluation config describes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    example_id: str
    database_file: str = Field(description="DuckDB file the pipeline builds, e.g. `lever.duckdb`.")
    expected_schemas: list[str] = Field(default_factory=list)
    layers: dict[str, LayerSpec]

    @property
    def kind(self) -> Literal["impl", "evol"]:
        """Implementation (build from a contract) or evolution (change an existing pipeline)."""
        return "evol" if "-evol-" in self.example_id else "impl"

    def layer_order(self) -> list[str]:
        known = [name for name in CANONICAL_LAYERS if name in self.layers]
        return known + [name for name in self.layers if name not in known]

    def schema_for(self, layer: str) -> str:
        """Database schema that holds a layer's tables (`marts` may live in schema `mart`)."""
        if layer in MART_ALIASES:
            for alias in MART_ALIASES:
                if alias in self.expected_schemas:
                    return alias
            return "marts"
        return layer

    def tables(self) -> dict[str, tuple[str, TableSpec]]:
        """Every configured table -> (layer, spec), in layer order."""
        return {
            t: (layer, spec) for layer in self.layer_order() for t, spec in self.layers[layer].tables.items()
        }

    def table_weight(self, table: str) -> float:
        entry = self.tables().get(table)
        if entry is None:
            raise KeyError(f"{self.example_id}: table {table!r} is not in the evaluation config")
        return entry[1].weight


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="Path the config was read from (for error messages).")
    examples: dict[str, ExampleSpec]
    default_layer_weights: dict[str, float] = Field(default_factory=dict)

    def example(self, example_id: str) -> ExampleSpec:
        if example_id in self.examples:
            return self.examples[example_id]
        # The official evaluator lets a prediction folder carry a suffix (`...-impl-001-run2`).
        prefixed = [k for k in self.examples if example_id.startswith(k)]
        if len(prefixed) == 1:
            return self.examples[prefixed[0]]
        hint = (
            f"ids that prefix it: {prefixed}"
            if prefixed
            else f"known ids start with {sorted(self.examples)[:3]}"
        )
        raise ConfigError(f"{self.source}: no unique example {example_id!r} in `examples` ({hint})")


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(
            f"{path}: evaluation config not found. It is `dacomp-de/evaluation_suite/evaluation_config_compare.yaml` "
            "in github.com/ByteDance-Seed/DAComp (staged at ../shared/benchmarks/dacomp_de/evaluation_suite/)"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("examples"), dict):
        raise ConfigError(f"{path}: expected a mapping with an `examples:` mapping at the top level")
    return data


def parse_eval_config(data: dict[str, Any], source: str = "<memory>") -> EvalConfig:
    """Validate an already-loaded config mapping (see `load_eval_config`)."""
    scoring = data.get("scoring") or {}
    defaults = dict((scoring.get("partial_evaluation") or {}).get("layer_weights") or {})
    examples: dict[str, ExampleSpec] = {}
    for example_id, raw in data["examples"].items():
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: examples.{example_id} must be a mapping, got {type(raw).__name__}")
        layers = raw.get("layers")
        if not isinstance(layers, dict) or not layers:
            raise ConfigError(f"{source}: examples.{example_id}.layers is missing or empty")
        filled: dict[str, Any] = {}
        for layer, spec in layers.items():
            if isinstance(spec, dict) and "weight" not in spec:
                if layer not in defaults:
                    raise ConfigError(
                        f"{source}: examples.{example_id}.layers.{layer} has no `weight` and "
                        f"scoring.partial_evaluation.layer_weights has none for {layer!r}; add one of them"
                    )
                spec = {**spec, "weight": defaults[layer]}
            filled[layer] = spec
        try:
            examples[example_id] = ExampleSpec(example_id=example_id, **{**raw, "layers": filled})
        except ValidationError as err:
            raise ConfigError(
                f"{source}: examples.{example_id} does not follow the config schema:\n{err}"
            ) from err
    return EvalConfig(source=source, examples=examples, default_layer_weights=defaults)


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read and validate the official evaluation config (or a fixture in the same schema)."""
    path = Path(path)
    return parse_eval_config(_read_yaml(path), source=str(path))
