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
``<digest>.lock``
    Held while the transcript cursor moves.

Nothing here is memory (that is in git); it is what lets a session go on
where it stopped. SessionEnd removes only the journal: a session can be
resumed after it ended, and its cursor keeps transcript ingest from recording
the assistant's messages twice. The rest goes in a sweep (:func:`sweep`, run
by SessionStart at most once a day, stamped by ``.swept``): every file of a
session none of whose files changed for ``edda.claude.sessionTTL`` (default
30 days, Claude Code's own default for keeping transcripts, after which the
session cannot be resumed anyway).
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from gitmem.storage import files
from gitmem.storage.locate import RepoLocation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SESSIONS_DIR = os.path.join("agents", "sessions")
SWEEP_STAMP = ".swept"  # in SESSIONS_DIR; its mtime is the last sweep
SWEEP_EVERY = 24 * 3600  # seconds between two sweeps
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


def sweep(
    location: RepoLocation, max_age: float, keep: str | None = None, now: float | None = None
) -> int | None:
    """Remove the files of sessions idle for more than ``max_age`` seconds (the
    newest of a session's files is its last activity), except ``keep``'s.

    Runs at most once per :data:`SWEEP_EVERY`: returns None when the last
    sweep was more recent, else how many sessions it removed. The stamp is
    set before the sweep, so hooks starting together do not all sweep."""
    directory = os.path.join(location.state_path, SESSIONS_DIR)
    now = time.time() if now is None else now
    stamp = os.path.join(directory, SWEEP_STAMP)
    try:
        if now - os.stat(stamp).st_mtime < SWEEP_EVERY:
            return None
    except FileNotFoundError:
        pass
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    with open(stamp, "w"):
        pass
    os.utime(stamp, (now, now))
    kept = os.path.basename(_base(location, keep)) if keep is not None else None
    sessions: dict[str, list[tuple[str, float]]] = {}
    for name in names:
        # <digest>.json, .cursor.json, .jsonl, .lock, and write_atomic's
        # leftovers (.<digest>.json.<pid>_<random>.tmp) of a killed writer
        digest = name.lstrip(".").split(".", 1)[0]
        if len(digest) != 32 or not all(c in "0123456789abcdef" for c in digest):
            continue
        try:
            mtime = os.stat(os.path.join(directory, name)).st_mtime
        except FileNotFoundError:
            continue
        sessions.setdefault(digest, []).append((name, mtime))
    removed = 0
    for digest, found in sessions.items():
        if digest == kept or now - max(m for _, m in found) <= max_age:
            continue
        for name, _ in found:
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass
        removed += 1
    return removed
