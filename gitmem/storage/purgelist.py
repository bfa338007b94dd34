"""The purge list: ids of objects whose bytes a redaction removed from memory.

``<common dir>/edda/purge-list`` holds one object id a line. A redaction, a
payload merge that drops a redacted payload, and a sync that receives one
again all add to it; ``git edda gc`` destroys what nothing reaches any more
and keeps the rest listed (spec/storage.md §11). Callers hold the writer lock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

PURGE_LIST = "purge-list"
# A line that is not an object id (SHA-1 or SHA-256 hex) is ignored, never
# turned into a path.
_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def read_purge_list(state_dir: Path) -> set[str]:
    """The object ids waiting on the purge list (malformed lines ignored)."""
    try:
        text = (state_dir / PURGE_LIST).read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return set()
    return {word for word in text.split() if _OID.fullmatch(word)}


def add_to_purge_list(state_dir: Path, oids: Iterable[str]) -> int:
    """Append the ids not already listed; return how many."""
    listed = read_purge_list(state_dir)
    new = [oid for oid in dict.fromkeys(oids) if oid not in listed]
    if new:
        with open(state_dir / PURGE_LIST, "a", encoding="ascii") as handle:
            handle.write("".join(f"{oid}\n" for oid in new))
    return len(new)
