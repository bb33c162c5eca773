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

import copyreg
import ctypes
import dis
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
# Modules whose functions build every reply: their code pointers are compared on each request (the
# other `stateguard` functions' code can be swapped only by ctypes: the audit hook refuses `__code__`).
# (Of this module only `report` runs after arming; `verify`'s own pointer is compared by its caller.)
_REPLY_MODULES = frozenset({"__main__", "stateguard.sandbox.protocol", "stateguard.sandbox.guards"})

# Bound at import, before any cell: a cell that patches os must not change the report.
_write = os.write

# One group: (what it is, the names or objects it lists, how to read the current objects (C callables
# only, whose code a cell cannot swap), from what, the ids recorded at start, the objects themselves
# (kept alive, so that no new object can take a recorded id)).
# With `raw`, the objects read are addresses (ints), compared as they are.
Group = tuple[str, tuple[Any, ...], Callable[[Any], Any], Any, tuple[int, ...], tuple[Any, ...], bool]
# (groups checked every time, groups of dicts with a version tag, their tag readers, the tags at start,
# and the builtins `verify` uses, bound here so that patching them changes nothing).
Watch = tuple[tuple[Group, ...], tuple[Group, ...], tuple[Any, ...], tuple[int, ...], tuple[Any, ...]]


def _version_tags() -> Callable[[dict[str, Any]], Any] | None:
    """CPython gives every dict a version tag that changes on each write (PEP 509; still there in
    3.13). Read in place, it lets an unchanged dict skip the entry-by-entry comparison, so watching
    every `stateguard` module costs a few microseconds a request. Tried on a scratch dict first: with
    another layout there is no fast path, and every dict is compared in full every time."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return None
    word = ctypes.sizeof(ctypes.c_ssize_t)

    def reader(mapping: dict[str, Any]) -> Any:
        return ctypes.c_uint64.from_address(id(mapping) + 3 * word)  # after refcount, type, ma_used

    probe: dict[str, int] = {}
    used, tag = ctypes.c_ssize_t.from_address(id(probe) + 2 * word), reader(probe)
    before = tag.value
    probe["a"] = 1
    return reader if used.value == 1 and tag.value != before else None


def _code_offset() -> int | None:
    """Where a function object keeps its code pointer (found, not assumed; None if not found once)."""

    def sample() -> None:
        return None

    want = id(sample.__code__)
    found = [o for o in range(16, 256, 8) if ctypes.c_void_p.from_address(id(sample) + o).value == want]
    return found[0] if len(found) == 1 else None


class _CodeOf:
    """A fallback pointer reader: the code's address through `__code__` (an audited attribute, so
    each read passes through the audit hook: slower, same answer)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self._function = function

    @property
    def value(self) -> int:
        return id(self._function.__code__)


_CODE_OFFSET = _code_offset()


def code_pointer(function: Callable[..., Any]) -> Any:
    """An object whose `.value` is the address of the function's code, read in place: reading
    `__code__` raises an audit event, and the kernel's audit hook is Python, which made the check cost
    half a millisecond a request. Checked against `__code__` once, here."""
    if _CODE_OFFSET is not None:
        slot = ctypes.c_void_p.from_address(id(function) + _CODE_OFFSET)
        if slot.value == id(function.__code__):
            return slot
    return _CodeOf(function)


def _real_dict(mapping: Mapping[str, Any]) -> dict[str, Any] | None:
    """The dict itself (a class's `vars` is a read-only proxy of it), whose version tag is read."""
    if type(mapping) is dict:
        return mapping
    if type(mapping) is types.MappingProxyType:  # the proxy holds one pointer: the class's dict
        address = ctypes.c_void_p.from_address(id(mapping) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
        if not address:
            return None
        inner = ctypes.cast(address, ctypes.py_object).value
        return inner if type(inner) is dict and len(inner) == len(mapping) else None
    return None


class _Recorder:
    """Collects the groups while arming (nothing of it is used by `verify`)."""

    def __init__(self) -> None:
        self.tags = _version_tags()
        self.always: list[Group] = []
        self.tagged: list[tuple[Group, Any, dict[str, Any]]] = []

    def add(
        self,
        label: str,
        keys: tuple[Any, ...],
        read: Callable[[Any], Any],
        source: Any,
        dict_: Any = None,
        *,
        raw: bool = False,
    ) -> None:
        found = tuple(read(source))
        group = (label, keys, read, source, found if raw else tuple(map(id, found)), found, raw)
        real = _real_dict(dict_) if self.tags is not None and dict_ is not None else None
        if real is None:
            self.always.append(group)
        else:
            self.tagged.append((group, self.tags(real), real))  # type: ignore[misc]

    def entries(
        self, label: str, mapping: Mapping[str, Any], names: Iterable[str], *, tagged: bool = True
    ) -> None:
        keys = tuple(sorted(names))
        if keys:  # itemgetter of one key returns the value, not a tuple: ask for it twice
            getter = operator.itemgetter(*(keys * 2 if len(keys) == 1 else keys))
            self.add(label, keys, getter, mapping, mapping if tagged else None)

    def keys(self, label: str, mapping: Mapping[str, Any], *, tagged: bool = True) -> None:
        """The mapping's key set, in order: a name added to a class or an instance shadows others."""
        read = operator.methodcaller("keys")
        self.add(f"{label} (a name was added or removed)", (), read, mapping, mapping if tagged else None)

    def watch(self) -> Watch:
        readers = tuple(reader for _, reader, _ in self.tagged)
        # The dicts themselves stay referenced (by the groups' sources), so no address is reused.
        return (
            tuple(self.always),
            tuple(group for group, _, _ in self.tagged),
            readers,
            tuple(reader.value for reader in readers),
            (
                map,
                tuple,
                operator.attrgetter("value"),
                operator.ne,
                itertools.compress,
                operator.is_not,
                any,
                len,
            ),
        )


# The audit hook copies what it needs when it is installed, so patching its module changes nothing
# (tests/stateguard/sandbox/test_escapes.py shows it): not a reason to stop a kernel.
_NOT_ANSWERING = frozenset({"stateguard.sandbox.policy"})


def _own_modules() -> list[types.ModuleType]:
    return [
        module
        for name, module in list(sys.modules.items())
        if module is not None
        and (name in ("__main__", "stateguard") or name.startswith("stateguard."))
        and name not in _NOT_ANSWERING
    ]


def _globals_used(code: types.CodeType) -> set[str]:
    found = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # comprehensions and nested functions
            found |= _globals_used(const)
    return found


def _holds_code(name: str, value: Any) -> bool:
    # Names that hold code; other values (caches, counters) may change and answer nothing.
    return not name.startswith("__") and (callable(value) or isinstance(value, types.ModuleType))


def arm(kernel: object, handlers: Mapping[str, Any], reply_path: Iterable[Any]) -> Watch:
    """Record what the kernel's answers depend on. Call it before the first cell runs."""
    record = _Recorder()
    functions: dict[types.FunctionType, None] = {}  # ordered, and keyed without id() (audited)
    for module in _own_modules():
        scope = vars(module)
        record.entries(f"module {module.__name__}", scope, [k for k, v in scope.items() if _holds_code(k, v)])
        for value in list(scope.values()):
            if not (isinstance(value, type | types.FunctionType) and value.__module__ == module.__name__):
                continue
            members: dict[str, Any] = {value.__name__: value}
            if isinstance(value, type):
                members = {k: v for k, v in vars(value).items() if isinstance(v, _WATCHED_TYPES)}
                record.entries(f"class {module.__name__}.{value.__qualname__}", vars(value), members)
            if module.__name__ in _REPLY_MODULES:
                for member in members.values():
                    inner = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
                    if isinstance(inner, types.FunctionType):
                        functions[inner] = None
    record.entries("the handler table", handlers, handlers)
    # The kernel's own dict changes on every request (the reply pipe, the nonce): compared in full.
    record.entries("the kernel's attributes", vars(kernel), set(vars(kernel)) - _CHANGING, tagged=False)
    record.keys("the kernel's attributes", vars(kernel), tagged=False)
    # Pickling an instance caches `__slotnames__` in its class (copyreg): done now, so that a value
    # that reaches the kernel object and gets hashed does not read as a name added to the class.
    copyreg._slotnames(type(kernel))  # type: ignore[attr-defined]
    record.keys(f"class {type(kernel).__qualname__}", vars(type(kernel)))
    # The classes of the kernel's helpers (the dataflow recorder, the listing cache, the timers): their
    # methods run on every cell, so their code pointers are compared too.
    for value in vars(kernel).values():
        if type(value).__module__.startswith("stateguard."):
            for member in vars(type(value)).values():
                if isinstance(member, types.FunctionType):
                    functions[member] = None
    functions[report] = None  # type: ignore[index]  # a plain function
    unique = tuple(functions)
    pointers = tuple(code_pointer(f) for f in unique)
    record.add(
        "a function's __code__", unique, partial(map, operator.attrgetter("value")), pointers, raw=True
    )
    # A name the reply path finds in builtins must not appear in its module (`kernel.str = ...`).
    answering = [getattr(f, "__func__", f) for f in [*handlers.values(), *reply_path, verify, report]]
    used = set().union(*(_globals_used(f.__code__) for f in answering))
    for scope in {id(f.__globals__): f.__globals__ for f in answering}.values():
        absent = tuple(sorted(used - set(scope)))
        label = f"a builtin the reply path uses, shadowed in {scope.get('__name__')}"
        record.add(label, absent, partial(map, scope.get), absent, scope)
    return record.watch()


def verify(watch: Watch) -> str | None:
    """None if every recorded object is still in place; else what changed (the first difference).
    Identity is compared with `is not`, never `==` (which would run a cell's `__eq__`) nor `id()`
    (an audited call: the audit hook would run for every object)."""
    always, tagged, readers, tags, (each, as_tuple, value_of, differs, select, is_not, any_, len_) = watch
    now = as_tuple(each(value_of, readers))
    # Only the dicts written to since the record are compared entry by entry.
    changed = () if now == tags else select(tagged, each(differs, now, tags))
    for label, keys, read, source, expected, kept, raw in (*changed, *always):
        try:
            found = as_tuple(read(source))
        except Exception as exc:  # a name deleted, a mapping replaced by something odd
            return f"{label}: {type(exc).__name__}: {exc}"[:300]
        if raw and found == expected:  # addresses: plain ints
            continue
        if not raw and len_(found) == len_(kept) and not any_(each(is_not, found, kept)):
            continue
        pairs = zip(keys, expected if raw else kept, found, strict=False)
        which = [getattr(k, "__qualname__", k) for k, a, b in pairs if (a != b if raw else a is not b)]
        return f"{label}: {', '.join(map(str, which[:5]))} was replaced" if which else label
    return None


def report(fd: int, nonce: Any, what: str) -> None:
    """Write the `kernel_tampered` reply on the request's own pipe (the caller exits right after)."""
    payload = encode_json({"ok": False, "kernel_tampered": what, "nonce": nonce}).encode()
    frame = len(payload).to_bytes(8, "big") + b"J" + payload
    while frame:
        frame = frame[_write(fd, frame) :]
