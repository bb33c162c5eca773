"""Coding-interface worlds: a repository of packages, its true state, and the files that show it.

Each package has a module under `src/`, a test suite in one of several folders (named by
`ci.cfg`), a build folder (`build.cfg`), a cache carrying CACHEDIR.TAG, a config file (named by
`src/<module>/settings.py`), logs of several ages, a migration tool with its migrations, a
VERSION file and optionally a FREEZE marker. Remnants of old values are added by the case builder.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

LOG_AGES = (
    1,
    4,
    10,
    20,
    35,
    50,
    75,
    100,
    200,
)  # days (+1 h), never at a `find -mtime` boundary of RETENTIONS
RETENTIONS = (7, 14, 30, 60)
TEST_DIRS = ("unit", "fast", "suite", "checks")
CHANNELS = ("stable", "beta", "nightly")
CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file marks a cache directory.\n"

POOLS: dict[str, dict[str, Any]] = {
    "dev": {
        "repos": ["platform", "monorepo", "toolkit", "services"],
        "packages": ["billing", "auth", "search", "ingest", "notify", "exports"],
        "out": ["dist", "out", "artifacts"],
        "cache": [".cache", "build/cache", ".tmp/cache"],
        "config": ["conf/app.ini", "config/settings.ini", "etc/app.ini"],
    },
    "heldout": {
        "repos": ["atlas", "beacon"],
        "packages": ["ledger", "gateway", "scheduler", "profiles"],
        "out": ["bundle", "release_out"],
        "cache": [".cache/tool", "var/cache"],
        "config": ["cfg/service.ini", "settings/main.ini"],
    },
}

MIGRATE = '''"""Apply this package's migrations up to --to VERSION."""
import pathlib
import sys

db = pathlib.Path(__file__).resolve().parent.parent / "db"
if len(sys.argv) != 3 or sys.argv[1] != "--to":
    sys.exit("usage: migrate.py --to NNNN")
target = sys.argv[2]
available = sorted(p.stem for p in (db / "migrations").glob("*.sql"))
if target not in available:
    sys.exit(f"unknown migration {target}")
current = (db / "schema_version").read_text().strip()
applied = [m for m in available if current < m <= target]
(db / "schema_version").write_text(target + "\\n")
with open(db / "applied.log", "a") as log:
    log.write("".join(m + "\\n" for m in applied))
'''


@dataclass
class Package:
    name: str
    module: str
    test_dir: str
    n_tests: int
    out_dir: str  # relative to the repository root
    cache: str
    config: str
    release_state: str
    channel: str
    retention: int | str
    migration_target: str
    current_schema: str
    migrations: int
    version: str

    @property
    def test_command(self) -> str:
        return f"python3 -m unittest discover -s tests/{self.test_dir} -t ."

    def files(self) -> dict[str, str]:
        p = self.name
        rel = lambda path: path[len(p) + 1 :]  # noqa: E731 - package-relative form for its config files
        tests = "\n".join(
            f"    def test_case_{i}(self):\n        self.assertEqual({i} + 1, {i + 1})\n"
            for i in range(self.n_tests)
        )
        out = {
            f"{p}/src/{self.module}/__init__.py": f'__version__ = "{self.version}"\n',
            f"{p}/src/{self.module}/core.py": "def run(x):\n    return 2 * x\n",
            f"{p}/src/{self.module}/settings.py": f'CONFIG_PATH = "{rel(self.config)}"\nLOG_LEVEL = "info"\n',
            f"{p}/tests/__init__.py": "",
            f"{p}/tests/{self.test_dir}/__init__.py": "",
            f"{p}/tests/{self.test_dir}/test_core.py": f"import unittest\n\n\nclass CoreTest(unittest.TestCase):\n{tests}",
            f"{p}/ci.cfg": f"[ci]\ntest_command = {self.test_command}\n",
            f"{p}/build.cfg": f"[build]\nout_dir = {rel(self.out_dir)}\n",
            f"{p}/VERSION": self.version + "\n",
            self.config: "[app]\nlog_level = info\nworkers = 4\ntimeout = 30\n",
            f"{self.cache}/CACHEDIR.TAG": CACHEDIR_TAG,
            f"{self.cache}/objects/{p}-a.bin": f"cached {p} a\n",
            f"{self.cache}/objects/{p}-b.bin": f"cached {p} b\n",
            f"{p}/tools/migrate.py": MIGRATE,
            f"{p}/db/schema_version": self.current_schema + "\n",
        }
        out.update(
            {
                f"{p}/db/migrations/{i:04d}.sql": f"-- migration {i:04d}\n"
                for i in range(1, self.migrations + 1)
            }
        )
        out.update({f"{p}/logs/app-{age:03d}.log": f"log written {age} days ago\n" for age in LOG_AGES})
        if self.release_state == "frozen":
            out[f"{p}/FREEZE"] = "release freeze until the audit ends\n"
        return out

    def truth(self, scope: str) -> dict[str, Any]:
        return {
            f"tests.command@{scope}": self.test_command,
            f"build.out_dir@{scope}": self.out_dir,
            f"cache.dir@{scope}": self.cache,
            f"app.config_path@{scope}": self.config,
            f"package.module@{scope}": self.module,
            f"release.state@{scope}": self.release_state,
            f"release.channel@{scope}": self.channel,
            f"logs.retention_days@{scope}": self.retention,
            f"db.migration_target@{scope}": self.migration_target,
        }


@dataclass
class Repo:
    name: str
    packages: dict[str, Package]
    extra: dict[str, str] = field(default_factory=dict)
    ages: dict[str, float] = field(default_factory=dict)
    frozen: list[str] = field(default_factory=list)

    @classmethod
    def draw(cls, rng: random.Random, pools: dict[str, Any], n_packages: int) -> Repo:
        names = rng.sample(pools["packages"], n_packages)
        return cls(name=rng.choice(pools["repos"]), packages={n: _package(rng, pools, n) for n in names})

    def scope(self, pkg: str | None = None) -> str:
        return self.name if pkg is None else f"{self.name}/{pkg}"

    def files(self) -> dict[str, str]:
        out = {"README.md": f"# {self.name}\n", "releases/stable/README.md": "Released versions.\n"}
        for pkg in self.packages.values():
            out.update(pkg.files())
        out.update(self.extra)
        return dict(sorted(out.items()))

    def file_ages(self) -> dict[str, float]:
        ages = {f"{p}/logs/app-{a:03d}.log": a + 1 / 24 for p in self.packages for a in LOG_AGES}
        return {**ages, **self.ages}

    def truth(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, pkg in self.packages.items():
            out.update(pkg.truth(self.scope(name)))
        return out


def _package(rng: random.Random, pools: dict[str, Any], name: str) -> Package:
    migrations = rng.randint(5, 9)
    current = rng.randint(2, migrations - 2)
    return Package(
        name=name,
        module=rng.choice([name, f"{name}_core", f"{name}lib"]),
        test_dir=rng.choice(TEST_DIRS),
        n_tests=rng.randint(2, 6),
        out_dir=f"{name}/{rng.choice(pools['out'])}",
        cache=f"{name}/{rng.choice(pools['cache'])}",
        config=f"{name}/{rng.choice(pools['config'])}",
        release_state="open",
        channel=rng.choice(CHANNELS),
        retention=rng.choice(RETENTIONS),
        migration_target=f"{rng.randint(current + 1, migrations):04d}",
        current_schema=f"{current:04d}",
        migrations=migrations,
        version=f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
    )
