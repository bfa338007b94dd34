"""What agent hooks remember between calls, per agent session. Standard library only.

Under ``<common dir>/edda/agents/sessions/``, for each session (file names are
a digest of the session id, which the agent chooses):

``<digest>.json``
    ``{"session", "capsule", "last_block", "warned"}``: the session's capsule,
    the digest of the last memory block injected on a prompt (not repeated),
    the warnings already given before edits (not repeated either).
``<digest>.cursor.json``
    Where transcript ingest stopped (:mod:`gitmem.agents.transcript`): its
    own file, written under ``<digest>.lock``, so that hooks saving the state
    above never undo a cursor move (nor the reverse).
``<digest>.jsonl``
    A journal of what the session did, one ``{"k", "v"}`` line per file
    touched, command run, prompt or error, appended by every capture hook:
    what a checkpoint before compaction and the summary at the end are
    made of, without reading memory back.
"""

from __future__ import annotations

import hashlib
import json
import os

from gitmem.storage import files
from gitmem.storage.locate import RepoLocation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SESSIONS_DIR = os.path.join("agents", "sessions")
JOURNAL_TAIL_BYTES = 64 * 1024  # what a checkpoint looks back at
JOURNAL_VALUE_CHARS = 300  # a journal line is a reminder, not a record


def _base(location: RepoLocation, session: str) -> str:
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(location.state_path, SESSIONS_DIR, digest)


def path(location: RepoLocation, session: str, suffix: str) -> str:
    """The session's state file ending in ``suffix`` (``.json``, ``.cursor.json`` …)."""
    return _base(location, session) + suffix


def load(location: RepoLocation, session: str) -> dict[str, Any]:
    """The session's state ({} when there is none or it is unreadable)."""
    try:
        with open(_base(location, session) + ".json", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(location: RepoLocation, session: str, data: dict[str, Any]) -> None:
    path = _base(location, session) + ".json"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = dict(data, session=session)
    files.write_atomic(path, json.dumps(record, sort_keys=True).encode("utf-8"), fsync=False)


def journal(location: RepoLocation, session: str, entries: list[tuple[str, str]]) -> None:
    """Append ``(kind, value)`` entries in one write (O_APPEND: hooks of
    parallel tool calls interleave whole lines, never halves)."""
    if not entries:
        return
    path = _base(location, session) + ".jsonl"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = "".join(
        json.dumps({"k": k, "v": v[:JOURNAL_VALUE_CHARS]}, ensure_ascii=False) + "\n"
        for k, v in entries
    ).encode("utf-8", "replace")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_journal(
    location: RepoLocation, session: str, tail: int | None = None
) -> list[tuple[str, str]]:
    """The journal's entries, oldest first (only the last ``tail`` bytes' worth when given)."""
    try:
        with open(_base(location, session) + ".jsonl", "rb") as handle:
            if tail is not None:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - tail))
            raw = handle.read()
    except OSError:
        return []
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # the first line of a tail, cut in half
        if (
            isinstance(item, dict)
            and isinstance(item.get("k"), str)
            and isinstance(item.get("v"), str)
        ):
            out.append((item["k"], item["v"]))
    return out


def forget(location: RepoLocation, session: str) -> None:
    """Remove the session's journal (its state file stays: a resumed session finds it)."""
    try:
        os.unlink(_base(location, session) + ".jsonl")
    except OSError:
        pass
