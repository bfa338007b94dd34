"""Branch intents: what a git hook saw, for the memory layer to act on.

Git hooks must stay fast (no pygit2 on their path), so post-checkout and
post-merge only write down what happened, one small file each under
``<common dir>/edda/intents/``::

    {"v": 1, "kind": "fork",  "branch": "feat", "from": "main", "code": "<sha>", "time": µs}
    {"v": 1, "kind": "merge", "branch": "main", "head": "<sha>", "orig": "<sha>",
     "subject": "merge feat: Merge made by the 'ort' strategy.", "time": µs}

Any process with the full library applies pending intents (under the writer
lock, before flushing the capture spool) and deletes them; the hooks also
start one in the background. Standard library only.
"""

from __future__ import annotations

import json
import os
import time

from gitmem.storage import files

INTENTS_DIR = "intents"
INTENT_VERSION = 1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def intents_dir(state_path: str) -> str:
    return os.path.join(state_path, INTENTS_DIR)


def write_intent(state_path: str, intent: dict[str, Any], *, fsync: bool = True) -> str:
    """Durably record one intent; returns its file."""
    directory = intents_dir(state_path)
    os.makedirs(directory, exist_ok=True)
    now = time.time_ns() // 1000
    record = {"v": INTENT_VERSION, "time": now, **intent}
    name = f"{now:020d}-{os.getpid()}-{os.urandom(4).hex()}.json"
    path = os.path.join(directory, name)
    data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")
    files.write_atomic(path, data, fsync=fsync)
    return path


def pending_intents(state_path: str) -> list[tuple[str, dict[str, Any] | None]]:
    """(file, intent) oldest first; intent is None when the file is unreadable."""
    directory = intents_dir(state_path)
    try:
        names = sorted(
            n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith(".")
        )
    except FileNotFoundError:
        return []
    out: list[tuple[str, dict[str, Any] | None]] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            data = None
        ok = isinstance(data, dict) and data.get("v") == INTENT_VERSION
        out.append((path, data if ok else None))
    return out


def has_pending(state_path: str) -> bool:
    try:
        return any(n.endswith(".json") for n in os.listdir(intents_dir(state_path)))
    except FileNotFoundError:
        return False
