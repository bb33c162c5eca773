"""Data-interface worlds: a project's true state and the files that show it.

`DataProject.draw(rng, pools)` draws a project: 2-3 datasets, each with its table location,
delimiter, column names per concept, amount unit, cleaned-table path and extract retention;
project-wide the report destination, fiscal-year start, revenue definition and the publish
folder's state. `files()` writes them out: CSV tables (rows drawn from the seed), an optional
catalog, per-table schemas (some missing), warehouse tables with sidecars, dated extracts,
existing reports and the publish folder. Remnants of old values (an old table version, a
legacy column, a frozen old report folder, an audited snapshot at the old clean path) are added
by the case builder through `extra` and `legacy_columns`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

CONCEPTS = ("region", "channel", "category", "amount", "refund", "date", "status")
STATUSES = ("complete", "cancelled", "returned")
UNITS = ("cents", "dollars", "thousands")
EXTRACT_AGES = (
    2,
    9,
    20,
    41,
    52,
    74,
    110,
    140,
    205,
    260,
    420,
)  # days; never within 3 days of a retention choice
RETENTIONS = (30, 60, 90, 180)

POOLS: dict[str, dict[str, Any]] = {
    "dev": {
        "projects": ["shop", "ledger", "market", "acme", "bazaar"],
        "datasets": ["orders", "sales", "invoices", "payments", "shipments", "subscriptions"],
        "columns": {
            "region": ["region", "area", "territory", "zone"],
            "channel": ["channel", "source", "medium"],
            "category": ["category", "segment", "product_line"],
            "amount": ["amount", "total", "value"],
            "refund": ["refund", "refunded", "refund_amt"],
            "date": ["date", "order_date", "created"],
            "status": ["status", "state", "order_status"],
        },
        "values": {
            "region": ["north", "south", "east", "west"],
            "channel": ["web", "store", "phone"],
            "category": ["tools", "garden", "toys", "books"],
        },
        "teams": ["finance", "ops", "growth"],
    },
    "heldout": {
        "projects": ["harbor", "orbit", "cedar"],
        "datasets": ["bookings", "claims", "rentals", "donations"],
        "columns": {
            "region": ["locale", "district", "market_area"],
            "channel": ["via", "touchpoint", "origin"],
            "category": ["kind", "line", "tier"],
            "amount": ["charge", "sum_paid", "gross_amt"],
            "refund": ["credited", "returned_amt", "rebate"],
            "date": ["booked_on", "event_date", "day"],
            "status": ["phase", "lifecycle", "outcome"],
        },
        "values": {
            "region": ["coast", "inland", "metro"],
            "channel": ["app", "agent", "partner"],
            "category": ["basic", "plus", "premium"],
        },
        "teams": ["treasury", "insights"],
    },
}


@dataclass
class DataTable:
    name: str
    location: str  # path, or "retired"
    sep: str
    columns: dict[str, str]  # concept -> column name
    unit: str
    clean_path: str
    retention: int | str
    schema: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    legacy_columns: dict[str, str] = field(default_factory=dict)  # old name -> concept it used to hold

    def csv(self, rows: list[dict[str, Any]] | None = None) -> str:
        names = [self.columns[c] for c in CONCEPTS] + list(self.legacy_columns)
        lines = [self.sep.join(["id", *names])]
        for i, row in enumerate(rows if rows is not None else self.rows):
            cells = [str(i + 1)] + [str(row[c]) for c in CONCEPTS]
            cells += [
                f"L{(i * 7 + len(old)) % 5}" for old in self.legacy_columns
            ]  # legacy codes, not the concept
            lines.append(self.sep.join(cells))
        return "\n".join(lines) + "\n"


@dataclass
class DataProject:
    name: str
    tables: dict[str, DataTable]
    catalog: bool
    destination: str
    fiscal_start: int
    revenue: str
    publish_target: str
    publish_state: str
    today: date
    extra: dict[str, str] = field(default_factory=dict)  # remnants added by the case builder
    frozen: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)

    @classmethod
    def draw(cls, rng: random.Random, pools: dict[str, Any], n_tables: int) -> DataProject:
        project = rng.choice(pools["projects"])
        team = rng.choice(pools["teams"])
        today = date(2025, 1, 1) + timedelta(days=rng.randrange(0, 300))
        names = rng.sample(pools["datasets"], n_tables)
        tables = {n: _table(rng, pools, n, today) for n in names}
        return cls(
            name=project,
            tables=tables,
            catalog=rng.random() < 0.6,
            destination=rng.choice(["reports", f"reports/{team}", f"shared/{team}/reports"]),
            fiscal_start=rng.choice([1, 4, 7, 10]),
            revenue=rng.choice(["gross", "net_of_refunds"]),
            publish_target=f"shared/{team}/published",
            publish_state="open",
            today=today,
        )

    def scope(self, table: str | None = None) -> str:
        return self.name if table is None else f"{self.name}/{table}"

    def files(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for t in self.tables.values():
            if t.location != "retired":
                out[t.location] = t.csv()
            if t.schema:
                cols = {
                    t.columns[c]: {"concept": c, **({"unit": t.unit} if c in ("amount", "refund") else {})}
                    for c in CONCEPTS
                }
                cols.update({old: {"concept": f"legacy_{c}"} for old, c in t.legacy_columns.items()})
                out[f"meta/{t.name}.schema.json"] = (
                    json.dumps({"columns": cols}, indent=1, sort_keys=True) + "\n"
                )
            clean_rows = [r for r in t.rows if r["status"] != "cancelled"]
            out[t.clean_path] = t.csv(clean_rows)
            out[t.clean_path + ".meta.json"] = json.dumps({"kind": "clean", "dataset": t.name}) + "\n"
            for age in EXTRACT_AGES:
                day = (self.today - timedelta(days=age)).isoformat()
                out[f"extracts/{t.name}/{t.name}_{day}.csv"] = t.csv(t.rows[: 3 + age % 4])
        if self.catalog:
            entries = {
                t.name: (
                    {"status": "retired"}
                    if t.location == "retired"
                    else {"path": t.location, "status": "active"}
                )
                for t in self.tables.values()
            }
            out["meta/catalog.json"] = json.dumps({"datasets": entries}, indent=1, sort_keys=True) + "\n"
        out[f"{self.destination}/README.md"] = "Reports land here.\n"
        out[f"{self.publish_target}/README.md"] = "Published reports.\n"
        if self.publish_state == "frozen":
            out[f"{self.publish_target}/.frozen"] = "frozen for the audit\n"
        out.update(self.extra)
        return dict(sorted(out.items()))

    def truth(self) -> dict[str, Any]:
        """'key@scope' -> the current true value, for every key of every scope."""
        out: dict[str, Any] = {
            f"reports.destination@{self.name}": self.destination,
            f"finance.fiscal_year_start@{self.name}": self.fiscal_start,
            f"metrics.revenue@{self.name}": self.revenue,
            f"publish.state@{self.name}": self.publish_state,
        }
        for t in self.tables.values():
            s = self.scope(t.name)
            out.update(
                {
                    f"table.location@{s}": t.location,
                    f"table.delimiter@{s}": t.sep,
                    f"table.unit@{s}": t.unit,
                    f"table.clean_path@{s}": t.clean_path,
                    f"extracts.retention_days@{s}": t.retention,
                }
            )
            out.update({f"column.{c}@{s}": t.columns[c] for c in CONCEPTS})
        return out

    def raw_paths(self) -> list[str]:
        """Source data, schemas and the catalog: no operation may change them."""
        paths = [t.location for t in self.tables.values() if t.location != "retired"]
        paths += [f"meta/{t.name}.schema.json" for t in self.tables.values() if t.schema]
        return paths + (["meta/catalog.json"] if self.catalog else [])


def _table(rng: random.Random, pools: dict[str, Any], name: str, today: date) -> DataTable:
    version = rng.choice([2, 3, None])
    location = f"data/{name}.csv" if version is None else f"data/v{version}/{name}.csv"
    columns = {c: rng.choice(pools["columns"][c]) for c in CONCEPTS}
    t = DataTable(
        name=name,
        location=location,
        sep=rng.choice([",", ";", "|"]),
        columns=columns,
        unit=rng.choice(UNITS),
        clean_path=rng.choice([f"warehouse/{name}_clean.csv", f"warehouse/clean/{name}.csv"]),
        retention=rng.choice(RETENTIONS),
        schema=rng.random() < 0.85,
    )
    for _ in range(rng.randint(14, 26)):
        dollars = round(rng.uniform(5, 400), 2)
        refund = round(dollars * rng.choice([0, 0, 0.1, 0.25]), 2)
        day = today - timedelta(days=rng.randrange(20, 760))
        t.rows.append(
            {
                "region": rng.choice(pools["values"]["region"]),
                "channel": rng.choice(pools["values"]["channel"]),
                "category": rng.choice(pools["values"]["category"]),
                "amount": stored(dollars, t.unit),
                "refund": stored(refund, t.unit),
                "date": day.isoformat(),
                "status": rng.choices(STATUSES, weights=[6, 2, 1])[0],
            }
        )
    return t


def stored(dollars: float, unit: str) -> int | float:
    """A dollar amount as the table stores it in `unit`."""
    if unit == "cents":
        return int(round(dollars * 100))
    if unit == "thousands":
        return round(dollars / 1000, 5)
    return dollars
