"""An event as a row of the events table (spec/index.md, "The events table").

Made from the envelope and its body as the builder reads them from memory;
a redacted row keeps its envelope columns and loses everything its body said.
"""

from __future__ import annotations

import json
from typing import Any

from gitmem.index import table as tables
from gitmem.memory.describe import event_text, paths_of


def event_row(
    envelope: dict[str, Any], body: dict[str, Any] | None, ref: str, commit: str
) -> tables.EventRow:
    """The row of an event found in memory commit ``commit`` on chain ``ref``
    (``body`` None: its payload is missing or does not match the envelope)."""
    from gitmem.index.vectors import key64

    event_type = str(envelope.get("type", ""))
    scope = envelope.get("scope")
    scope = scope if isinstance(scope, dict) else {}
    body_ok = isinstance(body, dict)
    b: dict[str, Any] | None = body if body_ok else None
    tags = b.get("tags") if b else None
    target = b.get("target") if b else None
    if event_type == "capsule_close" and b:
        target = b.get("capsule")
    key = b.get("key") if b and event_type == "decision" else None
    return {
        "id": envelope["id"],
        "key64": key64(envelope["id"]),
        "type": event_type,
        "time": int(envelope.get("time", 0)),
        "commit": commit,
        "ref": ref,
        # Validation keeps non-strings out (spec/storage.md "What a valid event
        # is"); memory written before it existed may still hold them, and one
        # such value must not make the whole table unbuildable.
        "session": _text_or_none(scope.get("session")),
        "agent": _text_or_none(scope.get("agent")),
        "user": _text_or_none(scope.get("user")),
        "capsule": _text_or_none(envelope.get("capsule")),
        "key": str(key) if key is not None else None,
        "target": str(target) if isinstance(target, str) else None,
        "paths": paths_of(b),
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
        "redacted": False,
        "missing": b is None,
        "was_missing": b is None,
        "text": event_text(event_type, b),
        "line": _decision_line(envelope, b, ref, commit) if event_type == "decision" else None,
        "envelope": json.dumps(envelope, sort_keys=True, ensure_ascii=False),
        "body": json.dumps(b, sort_keys=True, ensure_ascii=False) if b is not None else None,
    }


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _decision_line(
    envelope: dict[str, Any], body: dict[str, Any] | None, ref: str, commit: str
) -> str | None:
    """A decision described as context packs show it (the ``line`` column)."""
    from gitmem.memory.describe import LINE_WIDTH, describe
    from gitmem.memory.event import Event

    if body is None:
        return None
    return describe(Event(envelope, body, ref, commit, False), LINE_WIDTH)


def blank(row: tables.EventRow) -> None:
    """Strip everything a redacted event's body said; its envelope stays."""
    row.setdefault("_old_text", row["text"])
    row["redacted"], row["missing"], row["text"] = True, False, ""
    row["line"] = row["body"] = row["key"] = row["target"] = None
    row["paths"], row["tags"] = [], []
