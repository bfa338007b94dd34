"""Rules shared by every reader of memory (the ledger walk and the index):
what a branch follows from the trunk, and what an id prefix must look like.

Kept apart from :mod:`gitmem.memory.api` so that index readers do not import
the writing side (~30 ms) to learn three constants.
"""

from __future__ import annotations

from gitmem.errors import UsageError
from gitmem.storage.gitconfig import Config, get_last

# Event types a branch sees from the trunk after its fork (edda.followTrunk=decisions).
TRUNK_TYPES = frozenset({"decision", "ratify", "pin", "unpin"})
FOLLOW_TRUNK = ("decisions", "all", "none")
MIN_PREFIX = 4  # hex digits of an id a user must give


def follow_mode(config: Config, trunk: str | None) -> str:
    """``trunk`` if given, else ``edda.followTrunk`` (default ``decisions``)."""
    mode = (trunk or get_last(config, "edda.followTrunk", "decisions") or "").lower()
    mode = {"true": "decisions", "false": "none"}.get(mode, mode)
    if mode not in FOLLOW_TRUNK:
        raise UsageError(
            f"follow-trunk mode {mode!r} is not one of {', '.join(FOLLOW_TRUNK)}",
            "set edda.followTrunk to decisions, all or none",
        )
    return mode


def id_prefix(event_id: str) -> str:
    """The normalised id prefix, or a UsageError saying what an id looks like."""
    prefix = event_id.strip().lower()
    if len(prefix) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in prefix):
        raise UsageError(
            f"{event_id!r} is not an event id",
            f"give at least {MIN_PREFIX} hex characters of an id",
        )
    return prefix
