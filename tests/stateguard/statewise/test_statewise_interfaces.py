"""The two shipped interfaces against real sandboxes: bubblewrap for the coding interface, the
sandboxed kernel for the data interface. Probes are read-only; verifiers read the workspace."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stateguard.sandbox import SandboxWorkspace
from statewise.interface import TaskSpec
from statewise.interfaces import get_interface
from statewise.interfaces.bwrap import BwrapShell
from statewise.interfaces.coding import CodingEnvironment
from statewise.interfaces.data import DataEnvironment

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_bwrap_probes_are_read_only_and_see_nothing_of_the_host(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "hello\n"})
    shell = BwrapShell(tmp_path)
    probe = shell.run("echo x > b.txt", writable=False)
    assert probe.rc != 0 and not (tmp_path / "b.txt").exists()
    assert (
        shell.run("echo x > b.txt && cat a.txt", writable=True).stdout == "hello\n"
        and (tmp_path / "b.txt").is_file()
    )
    here = Path(__file__).resolve()
    assert shell.run(f"cat {here}", writable=False).rc != 0  # the checkout is not in the sandbox
    assert shell.run("ls /root /etc/passwd", writable=False).rc != 0
    net = shell.run(
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\"", writable=False
    )
    assert net.rc != 0 and "Network is unreachable" in net.stderr
    assert shell.run("echo $HOME $PWD", writable=False).stdout.split() == ["/tmp", "/repo"]
    slow = BwrapShell(tmp_path, timeout_s=1).run("sleep 5", writable=False)
    assert slow.timed_out and slow.rc == 124


REPO = {
    "pkg/ci.cfg": "[ci]\ntest_command = python3 -m unittest discover -s tests/fast -t .\n",
    "pkg/build.cfg": "[build]\nout_dir = out\n",
    "pkg/src/pkgcore/__init__.py": "",
    "pkg/src/pkgcore/settings.py": 'CONFIG_PATH = "conf/app.ini"\n',
    "pkg/conf/app.ini": "[app]\nworkers = 4\n",
    "pkg/build/cache/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n",
    "pkg/build/cache/x.bin": "1",
    "pkg/.cache/fixtures/f.json": "{}",
    "pkg/FREEZE": "frozen\n",
}


def test_coding_verifiers_read_the_package_configuration(tmp_path: Path) -> None:
    write(tmp_path, REPO)
    env = CodingEnvironment(tmp_path)
    interface = get_interface("coding")
    task = TaskSpec(
        task_id="t",
        interface="coding",
        scope="repo/pkg",
        operation="build",
        params={"pkg": "pkg"},
        instruction="build",
        now=NOW,
    )
    seen = {
        key: interface.verify(env, key, task)
        for key in (
            "tests.command",
            "build.out_dir",
            "cache.dir",
            "app.config_path",
            "package.module",
            "release.state",
        )
    }
    assert {k: v.value for k, v in seen.items()} == {
        "tests.command": "python3 -m unittest discover -s tests/fast -t .",
        "build.out_dir": "pkg/out",
        "cache.dir": "pkg/build/cache",
        "app.config_path": "pkg/conf/app.ini",
        "package.module": "pkgcore",
        "release.state": "frozen",
    }
    assert all(v.conclusive for v in seen.values()) and env.probes > 6
    assert not interface.verify(env, "release.channel", task).conclusive  # developer-owned: no verifier
    (tmp_path / "pkg" / "src" / "shim").mkdir()
    (tmp_path / "pkg" / "src" / "shim" / "__init__.py").write_text("")
    assert not interface.verify(env, "package.module", task).conclusive  # two packages: ask the owner


def test_coding_render_refuses_values_that_would_add_commands() -> None:
    interface = get_interface("coding")
    op = interface.spec.operations["clean_cache"]
    assert (
        interface.render(op, {"cache": "pkg/.cache", "pkg": "pkg"})
        == "find pkg/.cache -mindepth 1 ! -name CACHEDIR.TAG -delete"
    )
    with pytest.raises(ValueError, match="safe character set"):
        interface.render(op, {"cache": "pkg/.cache; rm -rf /", "pkg": "pkg"})


PROJECT = {
    "data/v2/orders.csv": "id;area;amount;status\n1;north;150;complete\n2;south;250;cancelled\n3;north;100;complete\n",
    "data/v1/orders.csv": "id;region;amount\n1;north;1\n",
    "meta/catalog.json": json.dumps(
        {"datasets": {"orders": {"path": "data/v2/orders.csv", "status": "active"}}}
    ),
    "meta/orders.schema.json": json.dumps(
        {"columns": {"area": {"concept": "region"}, "amount": {"concept": "amount", "unit": "cents"}}}
    ),
    "warehouse/clean/orders.csv": "id\n",
    "warehouse/clean/orders.csv.meta.json": json.dumps({"kind": "clean", "dataset": "orders"}),
    "shared/pub/.frozen": "",
}


def test_data_interface_verifies_read_only_and_executes_in_the_sandbox(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project, PROJECT)
    interface = get_interface("data")
    with SandboxWorkspace(None, project, tmp_path / "ckpt") as ws:
        env = DataEnvironment(ws, project)
        task = TaskSpec(
            task_id="t",
            interface="data",
            scope="shop/orders",
            operation="report_total",
            params={"dataset": "orders", "measure": "amount", "group": "region", "name": "r"},
            instruction="report",
            now=NOW,
        )
        values = {
            k: interface.verify(env, k, task).value
            for k in (
                "table.location",
                "table.delimiter",
                "column.region",
                "column.amount",
                "table.unit",
                "table.clean_path",
            )
        }
        assert values == {
            "table.location": "data/v2/orders.csv",
            "table.delimiter": ";",
            "column.region": "area",
            "column.amount": "amount",
            "table.unit": "cents",
            "table.clean_path": "warehouse/clean/orders.csv",
        }
        publish = task.model_copy(update={"params": {"target": "shared/pub"}})
        assert interface.verify(env, "publish.state", publish).value == "frozen"
        assert env._probe(f"open({str(project / 'x.txt')!r}, 'w').write('x')\nresult = 1") is None
        assert not (project / "x.txt").exists()  # probes are forks whose writes are refused
        op = interface.spec.operations["report_total"]
        done = env.execute(
            interface.render(
                op,
                {
                    "source": "data/v2/orders.csv",
                    "sep": ";",
                    "measure_col": "amount",
                    "group_col": "area",
                    "unit": "cents",
                    "dest": "reports",
                    "name": "r",
                },
            )
        )
        assert done.ok, done.error
        assert (project / "reports" / "r.csv").read_text() == "area,amount\nnorth,2.5\nsouth,2.5\n"
        bad = env.execute(
            interface.render(
                op,
                {
                    "source": "data/v2/orders.csv",
                    "sep": ",",
                    "measure_col": "amount",
                    "group_col": "area",
                    "unit": "cents",
                    "dest": "reports",
                    "name": "r2",
                },
            )
        )
        assert not bad.ok and "KeyError" in (bad.error or "")
