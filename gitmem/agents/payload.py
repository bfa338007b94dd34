"""A hook's input: reading it, parsing it, and which repository it is about.

Standard library only: the daemon's thin client (:mod:`gitmem.cli.forward`)
reads the input and finds the repository before it knows whether the daemon
or this process will handle the call.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What a hook reads at most: gitmem.capture.main.DEFAULT_MAX_CAPTURE_BYTES
# (edda.maxCaptureBytes's default), repeated to keep that module off this path
# (a test checks they agree).
MAX_INPUT_BYTES = 8 * 1024 * 1024


def read_input(stream: Any, limit: int = MAX_INPUT_BYTES) -> bytes:
    """What the agent wrote on ``stream``: at most ``limit`` bytes and one more
    (which tells a payload that is too large)."""
    data = stream.read(limit + 1)
    return data if isinstance(data, bytes) else b""


def parse_payload(data: bytes, limit: int = MAX_INPUT_BYTES) -> dict[str, Any]:
    """The JSON object in ``data`` (ValueError for anything else: too large,
    not UTF-8, not JSON, nested too deeply, not an object)."""
    if len(data) > limit:
        raise ValueError(f"the payload is larger than {limit} bytes")
    try:
        payload = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("the payload is nested too deeply") from None
    if not isinstance(payload, dict):
        raise ValueError(f"the payload is a JSON {type(payload).__name__}, not an object")
    return payload


def where(repo: str | None, payload: dict[str, Any]) -> str | None:
    """``-C PATH``, else the payload's ``cwd``, else the current directory."""
    if repo:
        return repo
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd and "\0" not in cwd and os.path.isdir(cwd):
        return cwd
    return None


def emit(out: str) -> None:
    """Write a hook's answer to standard output (an agent that closed the pipe
    loses nothing it could use: the hook still exits 0)."""
    if not out:
        return
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
