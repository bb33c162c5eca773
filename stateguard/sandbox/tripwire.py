"""The kernel's tripwire: before every reply, check that no cell rewrote the code that answers.

A cell runs in the kernel's own interpreter, so it can reach the objects that build and write the
kernel's replies: the handler table, the functions' code, the modules' names. Rewriting one of them
(a module attribute, a frame walk to the handler table, a ctypes write of a code pointer; each is
a test in tests/stateguard/test_sandbox_faults.py) would make every later reply of that kernel lie.
`arm` records, before any cell runs, the identity of each object the answers depend on; `verify`
compares them, in the request loop's frame, after a request's work and before its reply is
written. A mismatch is reported as `kernel_tampered` (`report`) and the kernel exits: the parent
treats it as a death, recovers without the cell, and marks the workspace degraded.

What it watches (only the kernel's own objects, never builtins or third-party modules, which
libraries patch legitimately, because a false fault destroys work):
- the names of every `stateguard` module loaded at start and of the kernel's `__main__` that hold
  a function, a class or a module (values such as caches may change; none of those answers);
- the functions, static/class methods and properties in the dicts of the classes those modules
  define, and the `__code__` of every such function;
- the request loop's handler table and the kernel instance's attributes (except the per-request
  ones and the namespace, which a restore replaces);
- for the reply path's own functions (the handlers, the reply writer, this module): the identity
  of each name and constant their code uses, so a ctypes write into `co_consts`/`co_names` shows.

What it cannot see, and why (docs/design_sandbox.md, "Remaining limits"): a ctypes write into the
bytes the interpreter executes (`co_code_adaptive`; the interpreter rewrites those bytes itself as
it specialises, so they cannot be fingerprinted), into the request loop's own frame (its locals
hold the records), into this check's tuples, or into the state of objects it only identifies (the
dataflow recorder's fields, a stdlib module the reply path calls such as `json.encoder`).
Everything `verify` calls comes through the record, so patching `builtins.id` or `map` changes
nothing; the record is a tuple, which Python code cannot change in place.
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from stateguard.sandbox.protocol import encode_json

EXIT_TAMPERED = 70  # the kernel's exit status after a report (EX_SOFTWARE)
# Kernel attributes that change between requests by design (a restore replaces the namespace).
_CHANGING = frozenset({"namespace", "reply_fd", "nonce", "_listing", "_dumped", "notes", "_watch"})
_WATCHED_TYPES = (types.FunctionType, staticmethod, classmethod, property)

# Bound at import, before any cell: a cell that patches json or os must not change the report.
_write = os.write

# One group: (what it is, the names or objects it lists, how to read the current objects (C callables
# only, whose code a cell cannot swap), from what, whether to flatten one level, the ids recorded at
# start, the objects themselves (kept alive, so no new object can take a recorded id)).
Group = tuple[str, tuple[Any, ...], Callable[[Any], Any], Any, bool, tuple[int, ...], tuple[Any, ...]]
Watch = tuple[tuple[Group, ...], Callable[..., Any], Callable[..., Any], Callable[..., Any], Any]


def _group(label: str, keys: tuple[Any, ...], read: Callable[[Any], Any], source: Any, nested: bool) -> Group:
    found = read(source)
    objects = tuple(itertools.chain.from_iterable(found) if nested else found)
    return (label, keys, read, source, nested, tuple(map(id, objects)), objects)


def _entries(label: str, mapping: Mapping[str, Any], names: Iterable[str]) -> list[Group]:
    keys = tuple(sorted(names))
    if not keys:
        return []
    # itemgetter of one key returns the value, not a tuple: ask for it twice.
    return [_group(label, keys, operator.itemgetter(*(keys * 2 if len(keys) == 1 else keys)), mapping, False)]


def _keys(label: str, mapping: Mapping[str, Any]) -> Group:
    """The mapping's key set (in order): a name added to a class or an instance can shadow the rest."""
    return _group(f"{label} (a name was added or removed)", (), operator.methodcaller("keys"), mapping, False)


def _own_modules() -> list[types.ModuleType]:
    return [
        module
        for name, module in list(sys.modules.items())
        if module is not None and (name in ("__main__", "stateguard") or name.startswith("stateguard."))
    ]


def arm(kernel: object, handlers: Mapping[str, Any], reply_path: Iterable[Any]) -> Watch:
    """Record what the kernel's answers depend on. Call it before the first cell runs."""
    groups: list[Group] = []
    functions: dict[int, types.FunctionType] = {}
    for module in _own_modules():
        scope = vars(module)
        # Names that hold code; other values (caches, counters) may change and answer nothing.
        groups += _entries(
            f"module {module.__name__}",
            scope,
            [
                k
                for k, v in scope.items()
                if not k.startswith("__") and (callable(v) or isinstance(v, types.ModuleType))
            ],
        )
        for value in list(scope.values()):
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                functions[id(value)] = value
            elif isinstance(value, type) and value.__module__ == module.__name__:
                members = {k: v for k, v in vars(value).items() if isinstance(v, _WATCHED_TYPES)}
                groups += _entries(f"class {module.__name__}.{value.__qualname__}", vars(value), members)
                for member in members.values():
                    inner = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
                    if isinstance(inner, types.FunctionType):
                        functions[id(inner)] = inner
    groups += _entries("the handler table", handlers, handlers)
    groups += _entries("the kernel's attributes", vars(kernel), set(vars(kernel)) - _CHANGING)
    groups.append(_keys("the kernel's attributes", vars(kernel)))
    groups.append(_keys(f"class {type(kernel).__qualname__}", vars(type(kernel))))
    code_of = partial(map, operator.attrgetter("__code__"))
    groups.append(
        _group("a function's __code__", tuple(functions.values()), code_of, tuple(functions.values()), False)
    )
    answering = [getattr(f, "__func__", f) for f in [*handlers.values(), *reply_path, arm, verify, report]]
    codes = tuple(f.__code__ for f in answering)
    for part in ("co_consts", "co_names"):
        groups.append(
            _group(
                f"the {part} of the reply path's code",
                codes,
                partial(map, operator.attrgetter(part)),
                codes,
                True,
            )
        )
    # A name the reply path finds in builtins must not appear in its module (`kernel.str = ...`).
    for scope in {id(f.__globals__): f.__globals__ for f in answering}.values():
        absent = tuple(sorted({n for c in codes for n in c.co_names} - set(scope)))
        groups.append(
            _group(
                "a builtin the reply path uses (shadowed in its module)",
                absent,
                partial(map, scope.get),
                absent,
                False,
            )
        )
    return (tuple(groups), id, map, tuple, itertools.chain.from_iterable)


def verify(watch: Watch) -> str | None:
    """None if every recorded object is still in place; else what changed (the first difference)."""
    groups, ident, each, as_tuple, flatten = watch
    for label, keys, read, source, nested, expected, _ in groups:
        try:
            found = read(source)
            ids = as_tuple(each(ident, flatten(found) if nested else found))
        except Exception as exc:  # a name deleted, a mapping replaced by something odd
            return f"{label}: {type(exc).__name__}: {exc}"[:300]
        if ids != expected:
            changed = [
                getattr(k, "__qualname__", k)
                for k, old, new in zip(keys, expected, ids, strict=False)
                if old != new
            ]
            named = ", ".join(map(str, changed[:5])) if keys and not nested else ""
            return f"{label}: {named} was replaced" if named else label
    return None


def report(fd: int, nonce: Any, what: str) -> None:
    """Write the `kernel_tampered` reply on the request's own pipe (the caller exits right after)."""
    payload = encode_json({"ok": False, "kernel_tampered": what, "nonce": nonce}).encode()
    frame = len(payload).to_bytes(8, "big") + b"J" + payload
    while frame:
        frame = frame[_write(fd, frame) :]
