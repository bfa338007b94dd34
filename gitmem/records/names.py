"""Event type names and their required body fields, without msgspec.

The capture hot path validates events with this table so it can stay on the
standard library; ``tests/test_formats.py`` checks that it agrees with the
msgspec Structs in :mod:`gitmem.records.types`.
"""

from __future__ import annotations

# type name -> required body fields (all other fields are optional)
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "note": ("text",),
    "decision": ("key", "value"),
    "ratify": ("target",),
    "checkpoint": (),
    "observation": ("kind",),
    "prompt": ("text",),
    "capsule_open": ("kind",),
    "capsule_close": ("capsule",),
    "pin": ("target",),
    "unpin": ("target",),
    "learning": ("text",),
    "pattern": ("text",),
    "mistake": ("text",),
    "commit_link": ("sha",),
    "commit_rewrite": ("kind", "map"),
    "redaction": ("target", "reason"),
}

EVENT_TYPES: tuple[str, ...] = tuple(REQUIRED_FIELDS)
KNOWLEDGE_TYPES: tuple[str, ...] = ("learning", "pattern", "mistake")
OBSERVATION_KINDS: tuple[str, ...] = ("tool_call", "command", "file_diff", "error", "message")
CAPSULE_KINDS: tuple[str, ...] = ("session", "workflow", "node")
SCOPE_KEYS: tuple[str, ...] = ("repo", "branch", "session", "agent", "user")
