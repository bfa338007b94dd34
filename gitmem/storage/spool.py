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

from gitmem.errors import FormatError
from gitmem.records import canonical
from gitmem.storage import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    PathLike = str | os.PathLike[str]

SPOOL_DIR = "spool"
TMP_DIR = "tmp"
BAD_DIR = "bad"
JOURNAL_FILE = "flush-journal.json"
SPOOL_VERSION = 1


def spool_dir(state_dir: PathLike) -> str:
    return os.path.join(state_dir, SPOOL_DIR)


def write_spool(state_dir: PathLike, items: list[dict[str, Any]], *, fsync: bool = True) -> str:
    """Durably spool sealed events: ``items`` are ``{"envelope": …, "body": …}``.

    Returns the spool file's path. The file name sorts by the first event's time.
    """
    if not items:
        raise ValueError("nothing to spool")
    directory = spool_dir(state_dir)
    tmp_dir = os.path.join(directory, TMP_DIR)
    os.makedirs(tmp_dir, exist_ok=True)
    first = min(int(item["envelope"]["time"]) for item in items)
    name = f"{first:020d}-{os.getpid()}-{os.urandom(4).hex()}.json"
    final = os.path.join(directory, name)
    data = canonical.encode({"v": SPOOL_VERSION, "events": items})
    files.write_atomic(final, data, fsync=fsync, tmp_dir=tmp_dir)
    return final


def pending(state_dir: PathLike) -> list[str]:
    """Spool files waiting to be flushed, oldest first."""
    directory = spool_dir(state_dir)
    try:
        names = [e.name for e in os.scandir(directory) if e.is_file() and e.name.endswith(".json")]
    except FileNotFoundError:
        return []
    names = [n for n in names if not n.startswith(".") and n != JOURNAL_FILE]
    return [os.path.join(directory, n) for n in sorted(names)]


def read_spool_file(path: str) -> list[dict[str, Any]]:
    """The events of one spool file; FormatError when it is unreadable."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as handle:
            data = canonical.decode(handle.read())
    except (OSError, ValueError) as exc:
        raise FormatError(f"spool file {name} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise FormatError(f"spool file {name} has no event list")
    if int(data.get("v", 0)) > SPOOL_VERSION:
        raise FormatError(f"spool file {name} was written by a newer gitmem")
    events: list[dict[str, Any]] = data["events"]
    for item in events:
        if not (isinstance(item, dict) and isinstance(item.get("envelope"), dict)):
            raise FormatError(f"spool file {name} holds a malformed event")
    return events


def quarantine(path: str) -> str:
    """Move an unreadable spool file aside (kept, never deleted) and return its new path."""
    head, name = os.path.split(path)
    bad = os.path.join(head, BAD_DIR)
    os.makedirs(bad, exist_ok=True)
    target = os.path.join(bad, name)
    os.replace(path, target)
    return target


def quarantined(state_dir: PathLike) -> list[str]:
    """Spool files kept aside as unreadable."""
    bad = os.path.join(spool_dir(state_dir), BAD_DIR)
    try:
        return sorted(os.path.join(bad, n) for n in os.listdir(bad) if n.endswith(".json"))
    except FileNotFoundError:
        return []


def journal_path(state_dir: PathLike) -> str:
    return os.path.join(spool_dir(state_dir), JOURNAL_FILE)


def write_journal(state_dir: PathLike, entries: dict[str, Any], *, fsync: bool = True) -> None:
    """Record, before refs move, which commits carry which spool files."""
    files.write_atomic(journal_path(state_dir), canonical.encode(entries), fsync=fsync)


def read_journal(state_dir: PathLike) -> dict[str, Any] | None:
    try:
        with open(journal_path(state_dir), "rb") as handle:
            data = canonical.decode(handle.read())
    except FileNotFoundError:
        return None
    except ValueError:
        return {}  # a torn journal names nothing; the spool files are still there
    return data if isinstance(data, dict) else {}


def clear_journal(state_dir: PathLike) -> None:
    try:
        os.unlink(journal_path(state_dir))
    except FileNotFoundError:
        pass
