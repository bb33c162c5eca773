"""Framing and channels between a `SandboxWorkspace` and its kernel process.

A frame is a 9-byte header (8-byte big-endian payload length, 1-byte kind) and the payload.
Kind `J` carries one JSON object (a request or a reply); kind `B` carries raw bytes (a snapshot).

Requests go over a Unix socket (the kernel shuts down its sending side at start, so nothing in
the kernel can talk back on it). Each request brings its OWN reply pipe: the parent sends the
write end in the same message as the request (SCM_RIGHTS, `send_request`), the kernel writes
the reply frames to it and closes it. Each request also carries a fresh random nonce that the
reply must echo. The parent reads exactly the expected frames, checks the nonce, and, before
the next request, insists that the pipe ended right there (`FrameReader.expect_end`). A cell
runs in the kernel process and can write to whatever fds that process holds: a frame it writes
lacks the nonce and is refused at once; one it writes after the reply is found before the next
request. A cell that reads the nonce from the kernel's memory and replaces its own reply pipe
can forge the reply of the request it runs in; through fds it cannot reach any later reply,
because later replies travel on pipes that do not exist yet. (Rewriting the kernel's own objects
is what the kernel's tripwire looks for before every reply, `tripwire.py`; what it cannot see is
listed in docs/design_sandbox.md, and replies.py keeps the parent safe from what such replies
say.) Every violation makes the parent kill the kernel and recover.

JSON is the only structured format the parent decodes. Blobs are opaque to the parent: it copies
them between the pipe and a checkpoint file and never unpickles them (the child runs untrusted
code, and unpickling its bytes in the parent would hand that code the parent).

Both sides use these helpers; the parent passes a deadline (monotonic seconds) to every read so
a hung or dead child cannot block it, the child blocks.
"""

from __future__ import annotations

import array
import functools
import json
import json.encoder
import os
import re
import select
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from stateguard.encodable import escape_tree

HEADER = struct.Struct(">QB")
JSON_KIND = ord("J")
BLOB_KIND = ord("B")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a reply larger than this is a protocol violation, not data
CHUNK = 1024 * 1024
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_encoder() -> Callable[[Any], str]:
    """`json.dumps(message, allow_nan=True)`, byte for byte, through json's C encoder built here once.
    The kernel imports this before any cell runs, so a cell that patches json for its own use (a
    `default=` for numpy values, `JSONEncoder.default`, even `json.encoder`'s names) changes nothing
    in a reply; the tripwire (tripwire.py) watches this module's names, not json's."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the type stubs
    if make is None:  # a Python without json's accelerator: the same output, through json's module
        return functools.partial(json.dumps, allow_nan=True)
    encode = make(None, _refuse, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    join = "".join
    return lambda message: join(encode(message, 0))


encode_json = _json_encoder()


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame."""


class ChannelClosed(ProtocolError):
    """End of file: the other side closed its end or died."""


class DeadlineExceeded(ProtocolError):
    """No (complete) frame arrived before the deadline."""


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view[:CHUNK])
        view = view[written:]


def send_message(fd: int, message: dict[str, Any]) -> None:
    payload = encode_json(message).encode()
    write_all(fd, HEADER.pack(len(payload), JSON_KIND) + payload)


def send_blob(fd: int, data: bytes | memoryview) -> None:
    write_all(fd, HEADER.pack(memoryview(data).nbytes, BLOB_KIND))
    write_all(fd, data)


def send_blob_file(fd: int, path: Path, size: int | None = None) -> None:
    """Stream a file (its first `size` bytes) as one blob frame without holding it in memory."""
    size = path.stat().st_size if size is None else size
    write_all(fd, HEADER.pack(size, BLOB_KIND))
    with path.open("rb") as src:
        remaining = size
        while remaining:
            chunk = src.read(min(CHUNK, remaining))
            if not chunk:
                raise ProtocolError(f"{path} shrank while it was being sent")
            write_all(fd, chunk)
            remaining -= len(chunk)


_CHANNEL_MARK = b"R"


def send_request(sock: socket.socket, write_fd: int, message: dict[str, Any]) -> None:
    """Parent: one request frame, with the write end of its reply pipe, in one send (one wake-up)."""
    payload = json.dumps(message, allow_nan=True).encode()
    data = memoryview(_CHANNEL_MARK + HEADER.pack(len(payload), JSON_KIND) + payload)
    fds = array.array("i", [write_fd])
    sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    if sent < len(data):
        sock.sendall(data[sent:])


def receive_reply_channel(sock: socket.socket) -> int:
    """Kernel: the reply fd that comes with the next request (close-on-exec)."""
    fds = array.array("i")
    data, ancillary, _, _ = sock.recvmsg(1, socket.CMSG_LEN(fds.itemsize), socket.MSG_CMSG_CLOEXEC)
    if not data:
        raise ChannelClosed("the request socket was closed")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if data != _CHANNEL_MARK or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("a request must start with its reply channel")
    return fds[0]


class FrameReader:
    """Reads frames from one fd, optionally against a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def _wait(self, deadline: float | None) -> None:
        if deadline is None:
            return
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded("no answer before the deadline")
            if self._poll.poll(remaining * 1000):
                return

    def _read_some(self, n: int, deadline: float | None) -> bytes:
        self._wait(deadline)
        chunk = os.read(self.fd, min(n, CHUNK))
        if not chunk:
            raise ChannelClosed("the other end of the pipe was closed")
        return chunk

    def _read_exact(self, n: int, deadline: float | None) -> bytearray:
        # Read straight into one preallocated buffer: a multi-GB snapshot must not be held twice.
        buffer = bytearray(n)
        view = memoryview(buffer)
        filled = 0
        while filled < n:
            self._wait(deadline)
            got = os.readv(self.fd, [view[filled : filled + CHUNK]])
            if not got:
                raise ChannelClosed("the other end of the pipe was closed")
            filled += got
        return buffer

    def _header(self, kind: int, deadline: float | None) -> int:
        length, got = HEADER.unpack(self._read_exact(HEADER.size, deadline))
        if got != kind:
            raise ProtocolError(f"expected a {chr(kind)!r} frame, got kind {got!r}")
        return int(length)

    def read_message(self, deadline: float | None = None) -> dict[str, Any]:
        length = self._header(JSON_KIND, deadline)
        if length > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message of {length} bytes exceeds {MAX_MESSAGE_BYTES}")
        payload = self._read_exact(length, deadline)
        try:
            message = json.loads(payload)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser's stack
            raise ProtocolError(f"message is not JSON: {type(exc).__name__}: {exc}"[:300]) from exc
        if not isinstance(message, dict):
            raise ProtocolError("message is not a JSON object")
        # A JSON escape of a lone surrogate decodes to text nothing can encode again: escape it here,
        # once, for every reply (the fast path is one scan of the payload).
        return escape_tree(message) if _SURROGATE_ESCAPE.search(payload) else message

    def expect_end(self, deadline: float | None = None) -> None:
        """The reply is complete: the other end must now be closed, with nothing more written."""
        self._wait(deadline)
        extra = os.read(self.fd, 64)
        if extra:
            raise ProtocolError(
                f"extra data after the reply ({len(extra)}+ bytes): something in the kernel wrote to its reply channel"
            )

    def read_blob(self, deadline: float | None = None) -> bytearray:
        return self._read_exact(self._header(BLOB_KIND, deadline), deadline)

    def read_blob_into(self, out: BinaryIO, deadline: float | None = None, size: int | None = None) -> int:
        """Stream one blob frame into a binary file; returns its size. With `size`, a frame of any
        other length is refused before a byte is written."""
        length = remaining = self._header(BLOB_KIND, deadline)
        if size is not None and length != size:
            raise ProtocolError(f"a blob of {length} bytes where {size} were announced")
        while remaining:
            chunk = self._read_some(remaining, deadline)
            out.write(chunk)
            remaining -= len(chunk)
        return length
