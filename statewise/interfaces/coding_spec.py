"""Declarative spec of the coding/filesystem interface: state types, record keys, shell operations.

A repository holds packages (`<pkg>/`) with sources under `<pkg>/src/<module>/`, a CI config
(`<pkg>/ci.cfg`: test_command), a build config (`<pkg>/build.cfg`: out_dir), caches marked with
CACHEDIR.TAG, logs, a migration tool, and release folders. Scopes are `<repo>/<package>`. Paths
in records are relative to the repository root; commands run from the root. Templates receive
slot values verbatim after `interfaces.coding.render` has checked them against a safe character set.
"""

from __future__ import annotations

from statewise.interface import ActionSlot, InterfaceSpec, Invariant, Operation, StateType

_PKG = ActionSlot(name="pkg", role="param", description="package folder")

OPERATIONS = [
    Operation(
        name="run_tests",
        effect="write",
        irreversible=False,
        description="Run the package's test suite and write the summary to reports/<name>.txt.",
        slots=[
            ActionSlot(
                name="command",
                role="input",
                key="tests.command",
                default="python3 -m unittest discover -s tests -t .",
                description="command that runs the package's tests, from the package folder",
            ),
            _PKG,
            ActionSlot(name="name", role="param", description="report name"),
        ],
        template="mkdir -p reports && (cd {pkg} && {command}) 2>&1 | grep -E '^(Ran|OK|FAILED)' "
        "| sed -E 's/ in [0-9.]+s$//' > reports/{name}.txt",
    ),
    Operation(
        name="build",
        effect="write",
        irreversible=False,
        description="Pack the package's module into <out_dir>/<module>-<version>.tar.",
        slots=[
            ActionSlot(
                name="module",
                role="input",
                key="package.module",
                default="{pkg}",
                description="importable module under <pkg>/src",
            ),
            ActionSlot(
                name="out_dir",
                role="write",
                key="build.out_dir",
                default="{pkg}/dist",
                description="folder build artifacts go to",
            ),
            _PKG,
            ActionSlot(name="version", role="param", description="version string"),
        ],
        invariants=[
            Invariant(kind="within_roots", slot="out_dir", arg=["{pkg}"]),
            Invariant(kind="no_marker", slot="out_dir", arg=["PROTECTED"]),
        ],
        template="mkdir -p {out_dir} && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner "
        "-cf {out_dir}/{module}-{version}.tar -C {pkg}/src {module}",
    ),
    Operation(
        name="clean_cache",
        effect="delete",
        irreversible=True,
        description="Empty the package's build cache (keeping its CACHEDIR.TAG).",
        slots=[
            ActionSlot(
                name="cache",
                role="delete",
                key="cache.dir",
                default="{pkg}/.cache",
                description="the package's cache folder",
            ),
            _PKG,
        ],
        invariants=[
            Invariant(kind="within_roots", slot="cache", arg=["{pkg}"]),
            Invariant(kind="requires_marker", slot="cache", arg=["CACHEDIR.TAG"]),
        ],
        template="find {cache} -mindepth 1 ! -name CACHEDIR.TAG -delete",
    ),
    Operation(
        name="set_option",
        effect="write",
        irreversible=False,
        description="Set one option in the configuration file the application reads.",
        slots=[
            ActionSlot(
                name="config",
                role="write",
                key="app.config_path",
                default="{pkg}/config.ini",
                description="configuration file the application loads",
            ),
            _PKG,
            ActionSlot(name="option", role="param", description="option name"),
            ActionSlot(name="value", role="param", description="new value"),
        ],
        invariants=[
            Invariant(kind="within_roots", slot="config", arg=["{pkg}"]),
            Invariant(kind="exists", slot="config"),
        ],
        template="sed -i -E 's/^{option} *=.*$/{option} = {value}/' {config}",
    ),
    Operation(
        name="release",
        effect="write",
        irreversible=True,
        description="Publish the package's VERSION file to releases/<channel>/.",
        slots=[
            ActionSlot(
                name="state",
                role="guard",
                key="release.state",
                default="open",
                description="whether releases are open or frozen",
            ),
            ActionSlot(
                name="channel",
                role="input",
                key="release.channel",
                default="stable",
                description="release channel: stable, beta or nightly",
            ),
            _PKG,
            ActionSlot(name="version", role="param", description="version string"),
        ],
        template="mkdir -p releases/{channel} && cp {pkg}/VERSION releases/{channel}/{pkg}-{version}.txt",
    ),
    Operation(
        name="prune_logs",
        effect="delete",
        irreversible=True,
        description="Delete log files older than the package's retention period.",
        slots=[
            ActionSlot(name="logs", role="param", description="log folder"),
            ActionSlot(
                name="days",
                role="input",
                key="logs.retention_days",
                default=30,
                description="retention period in days, or undecided",
            ),
            _PKG,
        ],
        invariants=[Invariant(kind="within_roots", slot="logs", arg=["{pkg}"])],
        template="find {logs} -name '*.log' -mtime +{days} -delete",
    ),
    Operation(
        name="migrate",
        effect="write",
        irreversible=True,
        description="Apply database migrations up to the target version with the package's migration tool.",
        slots=[
            ActionSlot(
                name="target",
                role="input",
                key="db.migration_target",
                description="schema version to migrate to, or undecided",
            ),
            _PKG,
        ],
        template="python3 {pkg}/tools/migrate.py --to {target}",
    ),
]

CODING_SPEC = InterfaceSpec(
    name="coding",
    description="shell commands in a sandboxed scratch repository of packages",
    scope_levels=["repo", "package"],
    state_types={
        "test_command": StateType(
            name="test_command", owner="machine", verifier="test_command", ttl_days=120
        ),
        "build_dir": StateType(name="build_dir", owner="machine", verifier="build_dir", ttl_days=180),
        "cache_dir": StateType(name="cache_dir", owner="machine", verifier="cache_dir", ttl_days=60),
        "config_path": StateType(name="config_path", owner="machine", verifier="config_path", ttl_days=180),
        "module": StateType(name="module", owner="machine", verifier="module", ttl_days=365),
        "release_state": StateType(
            name="release_state",
            owner="machine",
            verifier="release_state",
            ttl_days=7,
            domain=["open", "frozen"],
        ),
        "channel": StateType(
            name="channel", owner="developer", ttl_days=90, domain=["stable", "beta", "nightly"]
        ),
        "retention": StateType(name="retention", owner="developer", ttl_days=90),
        "migration_target": StateType(name="migration_target", owner="developer", ttl_days=30),
    },
    keys={
        "tests.command": "test_command",
        "build.out_dir": "build_dir",
        "cache.dir": "cache_dir",
        "app.config_path": "config_path",
        "package.module": "module",
        "release.state": "release_state",
        "release.channel": "channel",
        "logs.retention_days": "retention",
        "db.migration_target": "migration_target",
    },
    operations={op.name: op for op in OPERATIONS},
    stop_values=["frozen", "undecided", "retired"],
)
