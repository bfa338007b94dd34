"""The capture spool: durable event files waiting to be committed into git.

A capture process (a hook on every tool call) cannot afford to import pygit2,
so it seals its events and writes them here: one file per call, written to a
temporary name, fsynced, renamed into place and the directory fsynced. Once
the rename is durable the event is acknowledged; it is never lost after that.

Any process that has the full library loaded flushes the spool into the
memory refs (:meth:`gitmem.storage.ledger.Ledger.flush_spool`) under the
writer lock, using a journal so a flush killed at any point is finished or
undone by the next one without duplicating events. See spec/storage.md,
"Capture spool". Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gitmem.errors import FormatError
from gitmem.storage import canonical

SPOOL_DIR = "spool"
TMP_DIR = "tmp"
BAD_DIR = "bad"
JOURNAL_FILE = "flush-journal.json"
SPOOL_VERSION = 1


def spool_dir(state_dir: Path) -> Path:
    return state_dir / SPOOL_DIR


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        _fsync_dir(path.parent)


def write_spool(state_dir: Path, items: list[dict[str, Any]], *, fsync: bool = True) -> Path:
    """Durably spool sealed events: ``items`` are ``{"envelope": …, "body": …}``.

    Returns the spool file's path. The file name sorts by the first event's time.
    """
    if not items:
        raise ValueError("nothing to spool")
    directory = spool_dir(state_dir)
    tmp_dir = directory / TMP_DIR
    tmp_dir.mkdir(parents=True, exist_ok=True)
    first = min(int(item["envelope"]["time"]) for item in items)
    name = f"{first:020d}-{os.getpid()}-{os.urandom(4).hex()}.json"
    data = canonical.encode({"v": SPOOL_VERSION, "events": items})
    tmp = tmp_dir / name
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    final = directory / name
    os.rename(tmp, final)
    if fsync:
        _fsync_dir(directory)
    return final


def pending(state_dir: Path) -> list[Path]:
    """Spool files waiting to be flushed, oldest first."""
    directory = spool_dir(state_dir)
    try:
        names = [e.name for e in os.scandir(directory) if e.is_file() and e.name.endswith(".json")]
    except FileNotFoundError:
        return []
    names = [n for n in names if not n.startswith(".") and n != JOURNAL_FILE]
    return [directory / n for n in sorted(names)]


def read_spool_file(path: Path) -> list[dict[str, Any]]:
    """The events of one spool file; FormatError when it is unreadable."""
    try:
        data = canonical.decode(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise FormatError(f"spool file {path.name} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise FormatError(f"spool file {path.name} has no event list")
    if int(data.get("v", 0)) > SPOOL_VERSION:
        raise FormatError(f"spool file {path.name} was written by a newer gitmem")
    events: list[dict[str, Any]] = data["events"]
    for item in events:
        if not (isinstance(item, dict) and isinstance(item.get("envelope"), dict)):
            raise FormatError(f"spool file {path.name} holds a malformed event")
    return events


def quarantine(path: Path) -> Path:
    """Move an unreadable spool file aside (kept, never deleted) and return its new path."""
    bad = path.parent / BAD_DIR
    bad.mkdir(exist_ok=True)
    target = bad / path.name
    os.replace(path, target)
    return target


def journal_path(state_dir: Path) -> Path:
    return spool_dir(state_dir) / JOURNAL_FILE


def write_journal(state_dir: Path, entries: dict[str, Any], *, fsync: bool = True) -> None:
    """Record, before refs move, which commits carry which spool files."""
    write_atomic(journal_path(state_dir), canonical.encode(entries), fsync=fsync)


def read_journal(state_dir: Path) -> dict[str, Any] | None:
    try:
        data = canonical.decode(journal_path(state_dir).read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:
        return {}  # a torn journal names nothing; the spool files are still there
    return data if isinstance(data, dict) else {}


def clear_journal(state_dir: Path) -> None:
    try:
        journal_path(state_dir).unlink()
    except FileNotFoundError:
        pass
