"""Declarative spec of the data-analysis interface: state types, record keys, operations (as data).

Each operation's template is the body of a function of `ROOT` (the project folder) run as one
sandboxed cell; `{slot}` placeholders receive Python literals (see `interfaces.data.render`).
"""

from __future__ import annotations

from statewise.interface import ActionSlot, InterfaceSpec, Invariant, Operation, StateType

_READ = """import os
import pandas as pd
DIV = dict(cents=100, dollars=1, thousands=0.001)
df = pd.read_csv(os.path.join(ROOT, {source}), sep={sep})
"""
_WRITE = """folder = os.path.join(ROOT, {dest})
os.makedirs(folder, exist_ok=True)
out.to_csv(os.path.join(folder, {name} + ".csv"))
"""


def _src() -> list[ActionSlot]:
    return [
        ActionSlot(
            name="source",
            role="input",
            key="table.location",
            default="data/{dataset}.csv",
            description="CSV file of the task's dataset, relative to the project root",
        ),
        ActionSlot(
            name="sep",
            role="input",
            key="table.delimiter",
            default=",",
            description="field delimiter of that file",
        ),
    ]


_UNIT = ActionSlot(
    name="unit",
    role="input",
    key="table.unit",
    default="dollars",
    description="unit the amounts are stored in (cents, dollars or thousands)",
)
_DEST = ActionSlot(
    name="dest",
    role="write",
    key="reports.destination",
    default="reports",
    description="folder the developer wants reports written to",
)
_NAME = ActionSlot(name="name", role="param", description="report file name without extension")
_DEST_INV = [
    Invariant(kind="within_roots", slot="dest", arg=["reports", "shared"]),
    Invariant(kind="no_marker", slot="dest", arg=[".frozen"]),
    Invariant(kind="exists", slot="source"),
]

OPERATIONS = [
    Operation(
        name="report_total",
        effect="write",
        irreversible=False,
        description="Sum a measure per group of the dataset, in dollars, and write it as a CSV report.",
        slots=[
            *_src(),
            ActionSlot(
                name="measure_col",
                role="input",
                key="column.{measure}",
                default="{measure}",
                description="column holding the measure",
            ),
            ActionSlot(
                name="group_col",
                role="input",
                key="column.{group}",
                default="{group}",
                description="column holding the grouping",
            ),
            _UNIT,
            _DEST,
            _NAME,
        ],
        invariants=_DEST_INV,
        template=_READ
        + "out = (df.groupby({group_col})[{measure_col}].sum() / DIV[{unit}]).round(2)\n"
        + _WRITE,
    ),
    Operation(
        name="fiscal_total",
        effect="write",
        irreversible=False,
        description="Total a measure per fiscal quarter of one fiscal year, in dollars, as a CSV report.",
        slots=[
            *_src(),
            ActionSlot(
                name="measure_col",
                role="input",
                key="column.{measure}",
                default="{measure}",
                description="column holding the measure",
            ),
            ActionSlot(
                name="date_col",
                role="input",
                key="column.date",
                default="date",
                description="order date column",
            ),
            ActionSlot(
                name="fy_start",
                role="input",
                key="finance.fiscal_year_start",
                default=1,
                description="month (1-12) the fiscal year starts in",
            ),
            _UNIT,
            _DEST,
            _NAME,
            ActionSlot(name="fiscal_year", role="param", description="fiscal year to report"),
        ],
        invariants=_DEST_INV,
        template=_READ
        + """d = pd.to_datetime(df[{date_col}])
fy = d.dt.year - (d.dt.month < {fy_start}).astype(int)
quarter = ((d.dt.month - {fy_start}) % 12) // 3 + 1
keep = fy == {fiscal_year}
out = (df[keep].groupby(quarter[keep].rename("quarter"))[{measure_col}].sum() / DIV[{unit}]).round(2)
"""
        + _WRITE,
    ),
    Operation(
        name="revenue_report",
        effect="write",
        irreversible=False,
        description="Revenue per group under the project's revenue definition, in dollars, as a CSV report.",
        slots=[
            *_src(),
            ActionSlot(
                name="amount_col",
                role="input",
                key="column.amount",
                default="amount",
                description="order amount column",
            ),
            ActionSlot(
                name="refund_col",
                role="input",
                key="column.refund",
                default="refund",
                description="refunded amount column",
            ),
            ActionSlot(
                name="group_col",
                role="input",
                key="column.{group}",
                default="{group}",
                description="column holding the grouping",
            ),
            ActionSlot(
                name="definition",
                role="input",
                key="metrics.revenue",
                default="gross",
                description="revenue definition: gross or net_of_refunds",
            ),
            _UNIT,
            _DEST,
            _NAME,
        ],
        invariants=_DEST_INV,
        template=_READ
        + """amount = df[{amount_col}] - (df[{refund_col}] if {definition} == "net_of_refunds" else 0)
out = (amount.groupby(df[{group_col}]).sum() / DIV[{unit}]).round(2).rename("revenue")
"""
        + _WRITE,
    ),
    Operation(
        name="refresh_clean",
        effect="write",
        irreversible=True,
        description="Rebuild the dataset's cleaned table (rows without the excluded status), overwriting it.",
        slots=[
            *_src(),
            ActionSlot(
                name="status_col",
                role="input",
                key="column.status",
                default="status",
                description="order status column",
            ),
            ActionSlot(
                name="clean_path",
                role="write",
                key="table.clean_path",
                default="warehouse/{dataset}_clean.csv",
                description="the cleaned table this dataset feeds",
            ),
            ActionSlot(name="exclude", role="param", description="status value whose rows are dropped"),
        ],
        invariants=[
            Invariant(kind="within_roots", slot="clean_path", arg=["warehouse"]),
            Invariant(kind="not_protected", slot="clean_path"),
            Invariant(kind="exists", slot="source"),
        ],
        template=_READ
        + """kept = df[df[{status_col}] != {exclude}]
path = os.path.join(ROOT, {clean_path})
os.makedirs(os.path.dirname(path), exist_ok=True)
kept.to_csv(path, index=False)
""",
    ),
    Operation(
        name="publish_report",
        effect="write",
        irreversible=True,
        description="Copy a finished report into a shared publish folder.",
        slots=[
            ActionSlot(name="report", role="param", description="report file to publish"),
            ActionSlot(name="target", role="param", description="publish folder"),
            ActionSlot(
                name="state",
                role="guard",
                key="publish.state",
                default="open",
                description="whether publishing is open or frozen",
            ),
        ],
        invariants=[
            Invariant(kind="within_roots", slot="target", arg=["shared"]),
            Invariant(kind="no_marker", slot="target", arg=[".frozen"]),
            Invariant(kind="exists", slot="report"),
        ],
        template="""import os
import shutil
folder = os.path.join(ROOT, {target})
os.makedirs(folder, exist_ok=True)
shutil.copyfile(os.path.join(ROOT, {report}), os.path.join(folder, os.path.basename({report})))
""",
    ),
    Operation(
        name="metric_value",
        effect="write",
        irreversible=False,
        description="Evaluate a stored metric definition on the dataset's table and write the value as JSON.",
        slots=[
            *_src(),
            ActionSlot(
                name="definition",
                role="input",
                key="definition.{metric}",
                description="the metric's definition: code over the table, its input names",
            ),
            _DEST,
            _NAME,
            ActionSlot(name="metric", role="param", description="metric name"),
        ],
        invariants=_DEST_INV,
        template=_READ
        + """import json
scope = dict(pd=pd)
for input_name in {definition}["inputs"]:
    scope[input_name] = df
exec({definition}["code"], scope)
folder = os.path.join(ROOT, {dest})
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, {name} + ".json"), "w") as out:
    json.dump(dict([({metric}, round(float(scope[{metric}]), 2))]), out)
""",
    ),
    Operation(
        name="prune_extracts",
        effect="delete",
        irreversible=True,
        description="Delete dated extracts older than the dataset's retention period.",
        slots=[
            ActionSlot(name="folder", role="param", description="extract folder"),
            ActionSlot(name="today", role="param", description="today's date (ISO)"),
            ActionSlot(
                name="days",
                role="input",
                key="extracts.retention_days",
                default=30,
                description="retention period in days, or undecided",
            ),
        ],
        invariants=[Invariant(kind="within_roots", slot="folder", arg=["extracts"])],
        template="""import datetime as dt
import os
folder = os.path.join(ROOT, {folder})
cutoff = dt.date.fromisoformat({today}) - dt.timedelta(days=int({days}))
for name in sorted(os.listdir(folder)):
    day = dt.date.fromisoformat(name.rsplit(".", 1)[0].rsplit("_", 1)[1])
    if day < cutoff:
        os.remove(os.path.join(folder, name))
""",
    ),
]

DATA_SPEC = InterfaceSpec(
    name="data",
    description="pandas operations over a project's tables, reports, warehouse, publish folders and extracts",
    scope_levels=["project", "dataset"],
    state_types={
        "location": StateType(
            name="location",
            owner="machine",
            verifier="table_location",
            ttl_days=90,
            description="path of a dataset's current table (or 'retired')",
        ),
        "delimiter": StateType(
            name="delimiter",
            owner="machine",
            verifier="csv_delimiter",
            ttl_days=180,
            domain=[",", ";", "|", "\t"],
        ),
        "column": StateType(
            name="column",
            owner="machine",
            verifier="column",
            ttl_days=120,
            description="the column that holds a concept",
        ),
        "unit": StateType(
            name="unit",
            owner="machine",
            verifier="amount_unit",
            ttl_days=180,
            domain=["cents", "dollars", "thousands"],
        ),
        "clean_target": StateType(name="clean_target", owner="machine", verifier="clean_path", ttl_days=60),
        "publish_state": StateType(
            name="publish_state",
            owner="machine",
            verifier="publish_state",
            ttl_days=14,
            domain=["open", "frozen"],
        ),
        "destination": StateType(
            name="destination",
            owner="developer",
            ttl_days=90,
            description="where the developer wants outputs to go",
        ),
        "fiscal_start": StateType(
            name="fiscal_start", owner="developer", ttl_days=365, domain=list(range(1, 13))
        ),
        "metric_definition": StateType(
            name="metric_definition", owner="developer", ttl_days=180, domain=["gross", "net_of_refunds"]
        ),
        "retention": StateType(
            name="retention",
            owner="developer",
            ttl_days=90,
            description="days to keep extracts, or undecided",
        ),
        "definition": StateType(
            name="definition",
            owner="developer",
            ttl_days=180,
            description="how a metric is computed (promoted from a StateGuard task)",
        ),
    },
    keys={
        "table.location": "location",
        "table.delimiter": "delimiter",
        "column.": "column",
        "table.unit": "unit",
        "table.clean_path": "clean_target",
        "publish.state": "publish_state",
        "reports.destination": "destination",
        "finance.fiscal_year_start": "fiscal_start",
        "metrics.revenue": "metric_definition",
        "extracts.retention_days": "retention",
        "definition.": "definition",
    },
    operations={op.name: op for op in OPERATIONS},
    stop_values=["frozen", "undecided", "retired"],
)
