"""Helpers for tests that watch other processes end."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Is the process running? A zombie (ended, its status not yet read by its parent) is not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"
