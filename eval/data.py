"""Fetch a benchmark's published data from the Hugging Face Hub into `data/<bench>/` (`make data`).

    python -m eval.data --bench dabstep --out data/           # or: make data BENCH=dabstep
    python -m eval.data --bench dacomp_de --out data/ --timeout 20
    python -m eval.data --bench longds --out data/ --verify-only   # check files copied by hand

Each benchmark lists its Hub dataset repos (all `repo_type="dataset"`) and the files that must
be present afterwards; a listed SHA-256 is checked too. DAComp-DE ships zip archives, which are
extracted next to themselves. Without a network the command fails within `--timeout` seconds
and says where to copy the files by hand; the same verification then checks that copy.
Gated repos need `hf auth login` (or HF_TOKEN) first. HF_ENDPOINT selects a mirror.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stateguard.artifacts.task_folder import TASK_FILE

DEFAULT_ENDPOINT = "https://huggingface.co"


@dataclass(frozen=True)
class HubSource:
    repo_id: str
    subdir: str = ""  # where under data/<bench>/ this repo's snapshot lands
    allow_patterns: tuple[str, ...] | None = None  # None = the whole repo


@dataclass(frozen=True)
class Expected:
    pattern: str  # matched anywhere under data/<bench>/ (Path.rglob), so a wrapper folder is fine
    min_count: int = 1
    sha256: str | None = None


@dataclass(frozen=True)
class BenchData:
    name: str
    sources: tuple[HubSource, ...]
    expected: tuple[Expected, ...]
    layout: str  # how the folder must look when the files are copied by hand
    extract_zips: bool = False


BENCHES: dict[str, BenchData] = {
    "longds": BenchData(
        name="longds",
        sources=(HubSource("zjunlp/LongDS"),),
        expected=(Expected("task/longds/task_list.json"), Expected(TASK_FILE, min_count=68)),
        layout="task/longds/<domain>/<dataset>/task<N>/task.json (68 tasks) and "
        "data/longds/<domain>/<dataset>/task<N>/data/*",
    ),
    "dabstep": BenchData(
        name="dabstep",
        sources=(HubSource("adyen/DABstep", allow_patterns=("data/context/*", "data/tasks/*")),),
        expected=(
            Expected(
                "context/payments.csv",
                sha256="5fbb26210a45427d7a6560cfab3a362a08e4067f27cd03695f211a51c47ffc25",
            ),
            Expected("context/fees.json"),
            Expected("context/manual.md"),
            Expected("context/merchant_data.json"),
            Expected("context/merchant_category_codes.csv"),
            Expected("context/acquirer_countries.csv"),
            Expected("context/payments-readme.md"),
            Expected("tasks/all.jsonl"),
        ),
        layout="data/context/{payments.csv, fees.json, manual.md, merchant_data.json, "
        "merchant_category_codes.csv, acquirer_countries.csv, payments-readme.md} and data/tasks/all.jsonl",
    ),
    "dacomp_de": BenchData(
        name="dacomp_de",
        sources=(
            HubSource("DAComp/dacomp-de", subdir="tasks"),
            HubSource("DAComp/dacomp-de-gold", subdir="gold"),
        ),
        expected=(
            Expected("tasks/**/run.py", min_count=80),
            Expected("tasks/**/*_start.duckdb"),
            Expected("gold/**/*.duckdb", min_count=80),
        ),
        layout="tasks/<example_id>/{run.py, config/, docs/ or question.md, sql/, <proj>_start.duckdb} and "
        "gold/<example_id>/<database_file> for the 80 examples dacomp-de-impl-001..030, dacomp-de-evol-001..050",
        extract_zips=True,
    ),
}


class DataError(RuntimeError):
    """The benchmark data could not be fetched or is incomplete."""


class HubUnreachableError(DataError):
    """The Hub (or the HF_ENDPOINT mirror) cannot be reached: offline, firewalled or down."""


class VerificationError(DataError):
    """Files are missing, too few, or fail their SHA-256 check."""


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify(bench: BenchData, root: Path) -> dict[str, list[Path]]:
    """Every expected pattern -> its matches under `root`; raises VerificationError listing all problems."""
    problems: list[str] = []
    found: dict[str, list[Path]] = {}
    for want in bench.expected:
        matches = sorted(p for p in root.rglob(want.pattern) if p.is_file()) if root.is_dir() else []
        found[want.pattern] = matches
        if len(matches) < want.min_count:
            need = "missing" if not matches else f"only {len(matches)} of at least {want.min_count} found"
            problems.append(f"{root / want.pattern}: {need}")
            continue
        if want.sha256 is not None:
            for path in matches:
                got = sha256_file(path)
                if got != want.sha256:
                    problems.append(
                        f"{path}: sha256 {got} != expected {want.sha256} (truncated or wrong file)"
                    )
    if problems:
        raise VerificationError(
            f"{bench.name} data in {root} is incomplete:\n  "
            + "\n  ".join(problems)
            + f"\nExpected layout under {root}/: {bench.layout}"
        )
    return found


def extract_archives(folder: Path) -> list[Path]:
    """Unzip every `*.zip` under `folder` into its own directory, once (a `.extracted` marker remembers)."""
    done: list[Path] = []
    for archive in sorted(folder.rglob("*.zip")):
        marker = archive.with_name(archive.name + ".extracted")
        if marker.exists():
            continue
        dest = archive.parent.resolve()
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if not (dest / member).resolve().is_relative_to(dest):
                    raise DataError(
                        f"{archive}: member {member!r} would land outside {dest}; refusing to extract"
                    )
            zf.extractall(dest)
        marker.touch()
        done.append(archive)
    return done


def _unreachable(bench: BenchData, root: Path, endpoint: str, err: BaseException) -> HubUnreachableError:
    repos = ", ".join(s.repo_id for s in bench.sources)
    return HubUnreachableError(
        f"cannot reach the Hugging Face Hub at {endpoint} ({type(err).__name__}: {str(err).splitlines()[0][:200]}).\n"
        f"Offline? Copy the {bench.name} files by hand from the dataset repo(s) {repos} into {root}/ "
        f"with this layout: {bench.layout}\n"
        f"then check them with: python -m eval.data --bench {bench.name} --out {root.parent} --verify-only"
    )


def _is_network_error(err: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx comes with huggingface_hub
        return isinstance(err, ConnectionError | TimeoutError | socket.gaierror)
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    if isinstance(err, HfHubHTTPError):
        status = err.response.status_code if err.response is not None else None
        return status is None or status >= 500 or status in (407, 408, 429)
    # LocalEntryNotFoundError: snapshot_download could not reach the Hub and has no local copy.
    network = (
        httpx.TransportError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        ConnectionError,
        TimeoutError,
        socket.gaierror,
    )
    return isinstance(err, network)


def download(
    bench: BenchData,
    out: Path,
    *,
    timeout_s: float = 10.0,
    endpoint: str | None = None,
    token: str | None = None,
) -> dict[str, list[Path]]:
    """Snapshot every source repo into `out/<bench>/`, extract archives, then verify."""
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError as err:
        raise DataError(
            "huggingface_hub is not installed; run `pip install huggingface_hub` (or make setup)"
        ) from err
    root = out / bench.name
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    api = HfApi(endpoint=endpoint, token=token)
    for source in bench.sources:
        kwargs: dict[str, Any] = {
            "repo_type": "dataset",
            "endpoint": endpoint,
            "token": token,
            "local_dir": root / source.subdir,
            "etag_timeout": timeout_s,
        }
        if source.allow_patterns is not None:
            kwargs["allow_patterns"] = list(source.allow_patterns)
        try:
            api.dataset_info(source.repo_id, timeout=timeout_s)  # cheap reachability check first
            snapshot_download(source.repo_id, **kwargs)
        except (GatedRepoError, RepositoryNotFoundError) as err:
            raise DataError(
                f"{source.repo_id}: the Hub refused access ({type(err).__name__}). If the dataset is gated, "
                "accept its terms on huggingface.co and log in with `hf auth login` (or set HF_TOKEN)"
            ) from err
        except Exception as err:
            if _is_network_error(err):
                raise _unreachable(bench, root, endpoint, err) from err
            raise
    if bench.extract_zips:
        extract_archives(root)
    return verify(bench, root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.data", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    parser.add_argument("--bench", required=True, choices=sorted(BENCHES), help="benchmark to fetch")
    parser.add_argument(
        "--out", type=Path, default=Path("data"), help="parent folder; files go to <out>/<bench>/"
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the Hub before giving up"
    )
    parser.add_argument(
        "--verify-only", action="store_true", help="only check files already in <out>/<bench>/"
    )
    args = parser.parse_args(argv)
    bench = BENCHES[args.bench]
    root = args.out / bench.name
    try:
        if args.verify_only:
            if bench.extract_zips and root.is_dir():
                extract_archives(root)
            found = verify(bench, root)
        else:
            found = download(bench, args.out, timeout_s=args.timeout, token=os.environ.get("HF_TOKEN"))
    except HubUnreachableError as err:
        print(f"make data: {err}", file=sys.stderr)
        return 2
    except DataError as err:
        print(f"make data: {err}", file=sys.stderr)
        return 3
    total = sum(len(v) for v in found.values())
    print(f"{bench.name}: {root} verified ({total} expected files present)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
