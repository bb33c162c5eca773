"""Append-only, schema-versioned event log of one run (JSON Lines).

Everything that happens is an event: worker steps, reviews, each proposed action with the
harness verdict, state transitions, tool evidence, hints as delivered. Metrics, the RL reward
and the viewer read this file. Events emitted inside a harness transaction are buffered and
written only if the transaction commits, so a rejected action adds exactly one `action` event
(its verdict) and nothing else.

Each line is one `stateguard.artifacts.events.TraceEvent` (a union keyed on `kind`): `emit`
validates the payload against its kind's model, so a renamed or unknown field fails where it is
written, and `read_trace` returns typed events. The harness's per-action events, built from
records validated when they were made, go through `emit_known`: validated once per shape (kind,
field names, value types), then written without validating again, in the same bytes.

    trace = Trace(RolloutFolder(run).trace); trace.emit("turn_start", turn_id=3, question="...")
    events = read_trace(RolloutFolder(run).trace)

Model calls are logged by the LLM client, which does not know which manager activation it
serves; the rollout loop opens `manager_activation(n)` around each activation and the client's
`llm_call` event records `current_activation()`, so `llm_calls.jsonl` joins the trace's
`action` and `tool` events on the activation id.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from stateguard.artifacts.events import EVENTS, TraceEvent
from stateguard.artifacts.files import describe_errors
from stateguard.encodable import escape_tree
from stateguard.records import SCHEMA_VERSION, json_dump

__all__ = ["Trace", "TraceEvent", "current_activation", "manager_activation", "read_trace"]

# The union's validator itself: `EVENTS.validate_python` is a Python wrapper that passes it the
# same (default) options on every event.
_VALIDATE = EVENTS.validator.validate_python
_SCHEMA_TEXT = json.dumps(SCHEMA_VERSION)

# A context variable, not a global: each thread (and each task of a parallel runner) has its own.
_ACTIVATION: ContextVar[int | None] = ContextVar("stateguard_manager_activation", default=None)


@contextmanager
def manager_activation(activation: int) -> Iterator[None]:
    """Everything run inside serves manager activation `activation` (the harness's id)."""
    token = _ACTIVATION.set(activation)
    try:
        yield
    finally:
        _ACTIVATION.reset(token)


def current_activation() -> int | None:
    """The manager activation being served, None outside one (the worker's own model calls)."""
    return _ACTIVATION.get()


def _event(raw: dict[str, Any] | str, where: str) -> TraceEvent:
    """A typed event from a parsed line, or from the line itself (parsed by pydantic-core in one
    pass, which is what `emit` pays on every event)."""
    try:
        if isinstance(raw, str):
            return EVENTS.validate_json(raw)
        return EVENTS.validate_python(raw)
    except ValidationError as exc:
        kind = (json.loads(raw) if isinstance(raw, str) else raw).get("kind")
        raise ValueError(
            f"{where}: not a valid {kind!r} trace event: {describe_errors(exc, drop=str(kind))}"
        ) from None


class _Encoder:
    """`default` of the event's `json.dumps`: writes a record as its JSON dump (the bytes its
    `model_dump(mode="json")` gives, as callers passed it before), anything else not JSON as text,
    and notes whether it met anything but records (`others`, cleared by the caller per line)."""

    __slots__ = ("others",)

    def __init__(self) -> None:
        self.others = False

    def __call__(self, value: Any) -> Any:
        if isinstance(value, BaseModel):
            return json_dump(value)
        self.others = True
        return str(value)


_ENCODE_TEXT = json.encoder.encode_basestring_ascii


class _LineWriter:
    """`json.dumps(raw, sort_keys=True, default=_Encoder())`, byte for byte, with the C encoder
    made once per trace instead of per event (`json.dumps` with any argument builds a new
    `JSONEncoder`, and its `encode` a new C encoder, every call: 7.3 µs against 5.1 µs for an
    `action` line in a loop). It is made as `JSONEncoder.iterencode` makes it for a one-shot encode with
    these arguments (ASCII only, NaN allowed), except that it keeps no marks of the containers it
    is inside (the circular-reference check: a quarter of its time on the harness's lines, and
    the same bytes whenever there is no cycle): a payload that holds a cycle recurses until
    RecursionError and is then encoded by `json.dumps` itself, which raises what it always raised
    ("Circular reference detected"). After an error it is made afresh. Only the thread that made
    the trace uses it (the trace is not locked, and `default` notes what it met; another thread's
    events take `json.dumps`), and without the C module (another interpreter) every event does."""

    __slots__ = ("_encoder", "_fast", "_owner")

    def __init__(self) -> None:
        self._encoder = _Encoder()
        self._owner = threading.get_ident()
        self._fast = self._make()

    def _make(self) -> Callable[[Any, int], Any] | None:
        make = getattr(json.encoder, "c_make_encoder", None)
        if make is None:
            return None
        fast: Callable[[Any, int], Any] = make(
            None,  # no marks of the containers being encoded (a cycle: see the class's docstring)
            self._encoder,  # default
            json.encoder.encode_basestring_ascii,  # ensure_ascii=True
            None,  # indent
            ": ",  # key separator (the default without indent)
            ", ",  # item separator
            True,  # sort_keys
            False,  # skipkeys
            True,  # allow_nan
        )
        return fast

    def known(self, kind: str, data: dict[str, Any], seq: int, ts: float | None) -> str | None:
        """The line `self({"schema_version": ..., "seq": seq, "kind": kind, "ts": ts, "data": data})`
        gives, with the envelope written from a template (its keys are fixed and sort as written)
        and only the payload through the C encoder; None where that call must decide: the encoder
        met anything but JSON values and records, the line may hold lone surrogates, a clock that
        is not a float or None, another thread, no C encoder, an error (a cycle)."""
        fast = self._fast
        if fast is None or threading.get_ident() != self._owner:
            return None
        if ts is None:
            stamp = "null"
        elif ts.__class__ is float and ts - ts == 0.0:  # finite (NaN and infinities: the full path)
            stamp = float.__repr__(ts)
        else:
            return None
        encoder = self._encoder
        encoder.others = False
        try:
            payload = "".join(fast(data, 0))
        except Exception:  # a cycle, a value the encoder refuses: the full path raises what it raised
            self._fast = self._make()
            return None
        except BaseException:
            self._fast = self._make()
            raise
        if encoder.others or "\\ud" in payload or "\\uD" in payload:
            return None
        return f'{{"data": {payload}, "kind": {_ENCODE_TEXT(kind)}, "schema_version": {_SCHEMA_TEXT}, "seq": {seq}, "ts": {stamp}}}'

    def __call__(self, raw: dict[str, Any]) -> tuple[str, bool]:
        """`raw`'s line, and whether the encoder met anything but JSON values and records."""
        fast = self._fast
        if fast is None or threading.get_ident() != self._owner:
            encoder = _Encoder()
            return json.dumps(raw, sort_keys=True, default=encoder), encoder.others
        encoder = self._encoder
        encoder.others = False
        try:
            line = "".join(fast(raw, 0))
        except RecursionError:  # a cycle, or nesting deeper than the interpreter allows
            self._fast = self._make()
            encoder.others = False
            return json.dumps(raw, sort_keys=True, default=encoder), encoder.others
        except BaseException:
            self._fast = self._make()
            raise
        return line, encoder.others


class Trace:
    """Writes events to `path` (or keeps them in memory when path is None)."""

    def __init__(self, path: str | Path | None = None, *, clock: Callable[[], float | None] = time.time):
        self.path = None if path is None else Path(path)
        self._clock = clock
        self._buffer: list[str] | None = None
        self._memory: list[str] = []
        self._fd: int | None = None
        self._seq = 0
        self._line = _LineWriter()
        self._known: set[tuple[Any, ...]] = set()  # the shapes `emit_known` has validated
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                self._seq = len(read_trace(self.path))
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def now(self) -> float | None:
        """The trace's clock (None with a deterministic clock): for times recorded inside events."""
        return self._clock()

    @property
    def next_seq(self) -> int:
        return self._seq + (len(self._buffer) if self._buffer is not None else 0)

    def emit(self, kind: str, **data: Any) -> TraceEvent:
        """Validate and write one event. A payload field may be given as a validated record (an
        `AnalyticalState`, a list of `Relation`s, a `Hint`): it is written as its JSON dump and,
        where the kind's model declares that record, not validated a second time."""
        return self._emit(kind, data, self._clock())

    def emit_known(self, kind: str, **data: Any) -> None:
        """Write one event of a shape this trace has validated before, without validating it again:
        for the harness's per-action events, whose payloads are records validated when they were
        made (a draft, an action's arguments, a state, relations), their dumps, and scalars. The
        first event of each shape (its kind, its field names, and each value's type) goes through
        `emit` and is validated in full, so a renamed, missing or unknown field, or a value of
        another type, still fails where it is written; what a container holds is checked then and
        when the line is read. The line is the one `emit` writes, byte for byte (it falls back to
        `emit` wherever its own encoding could differ)."""
        shape = (kind, *data, *map(type, data.values()))
        ts = self._clock()
        if shape not in self._known:
            self._emit(kind, data, ts)
            self._known.add(shape)
            return
        line = self._line.known(kind, data, self.next_seq, ts)
        if line is None:
            self._emit(kind, data, ts)
        elif self._buffer is not None:
            self._buffer.append(line)
        else:
            self._write([line])

    def _emit(self, kind: str, data: dict[str, Any], ts: Any) -> TraceEvent:
        raw = {
            "schema_version": SCHEMA_VERSION,
            "seq": self.next_seq,
            "kind": kind,
            "ts": ts,
            "data": data,
        }
        # The line is the emitted payload as given (no defaults added); validating it first makes
        # a field that its kind's model does not declare, or a missing one, fail here.
        line, others = self._line(raw)
        if "\\ud" in line or "\\uD" in line:  # maybe lone surrogates: escape them so readers can re-encode
            line = json.dumps(escape_tree(json.loads(line)), sort_keys=True)
            event = _event(line, "Trace.emit")
        elif others:
            event = _event(line, "Trace.emit")  # text the encoder made up is checked as it reads back
        else:
            # Only JSON values and records: the objects validate as their line would, without
            # parsing the line again or re-running the records' own validators. Where they do
            # not (a record where a plain object is declared), the line decides, as before.
            try:
                event = _VALIDATE(raw)
            except ValidationError:
                event = _event(line, "Trace.emit")
        if self._buffer is not None:
            self._buffer.append(line)
        else:
            self._write([line])
        return event

    def _write(self, lines: list[str]) -> None:
        if not lines:
            return
        self._seq += len(lines)
        if self._fd is None:
            self._memory.extend(lines)
            return
        # One write() per batch on an O_APPEND fd: a crash leaves at most one torn final line.
        os.write(self._fd, ("\n".join(lines) + "\n").encode())

    def transaction(self) -> AbstractContextManager[None]:
        """Buffer events; write them on success, drop them if the block raises (a block inside
        another one adds to the outer block's buffer)."""
        return _Transaction(self)

    def lines(self) -> list[str]:
        """Serialized events so far (from memory or from the file)."""
        if self.path is None:
            return list(self._memory)
        return self.path.read_text().splitlines()

    def events(self) -> list[TraceEvent]:
        return [
            _event(json.loads(line), f"{self.path or 'trace'}:{n}") for n, line in enumerate(self.lines(), 1)
        ]


class _Transaction:
    """`Trace.transaction()`'s block, as a class: a generator-based context manager costs a
    generator and two resumptions per block, and the harness opens one per action."""

    __slots__ = ("_trace", "_outer")

    def __init__(self, trace: Trace) -> None:
        self._trace = trace
        self._outer = False

    def __enter__(self) -> None:
        trace = self._trace
        self._outer = trace._buffer is None
        if self._outer:
            trace._buffer = []

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not self._outer:
            return
        trace = self._trace
        events, trace._buffer = trace._buffer, None
        if kind is None and events is not None:
            trace._write(events)


def read_trace(path: str | Path) -> list[TraceEvent]:
    """Read a trace file; a torn final line (crash mid-write) is dropped, any other bad line is an error."""
    lines = Path(path).read_text().splitlines()
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON trace event; the trace file is corrupt") from None
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(
                f"{path}:{number}: schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION!r}"
            )
        events.append(_event(data, f"{path}:{number}"))
    return events
