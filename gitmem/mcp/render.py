"""Compact text for a model: one event a line, ids cut to 12 characters that
the ``show`` tool expands. Standard library and gitmem only (no SDK import)."""

from __future__ import annotations

import json
from typing import Any

from gitmem.memory.describe import iso_minute, ref
from gitmem.memory.event import Event

SUMMARY_WIDTH = 160  # wider than a terminal line: a model reads it, not a person


def line(event: Event) -> str:
    """``[id12] 2026-01-02T03:04Z decision  summary``."""
    return (
        f"{ref(event.id)} {iso_minute(event.time)} {event.type:<11} {event.summary(SUMMARY_WIDTH)}"
    )


def lines(events: list[Event], empty: str) -> str:
    """Events one a line, or ``empty`` when there are none."""
    return "\n".join(line(e) for e in events) or empty


def brief(event: Event) -> dict[str, Any]:
    """An event as structured results list it: id, type, time, summary."""
    return {
        "id": event.id,
        "type": event.type,
        "time": event.time,
        "branch": event.branch,
        "summary": event.summary(SUMMARY_WIDTH),
    }


def full(event: Event) -> dict[str, Any]:
    """An event as ``show`` returns it: the export form with id, branch and commit."""
    return event.to_json() | {"id": event.id, "branch": event.branch, "commit": event.commit}


def show_text(event: Event) -> str:
    """An event in full: the envelope's essentials, then the body one field a line."""
    out = [
        f"event {event.id}",
        f"type: {event.type}",
        f"time: {iso_minute(event.time)}",
        f"branch: {event.branch or 'detached HEAD'}",
    ]
    out += [f"{k}: {v}" for k, v in sorted(event.scope.items()) if k != "branch" and v]
    if event.capsule:
        out.append(f"capsule: {ref(event.capsule)}")
    if event.redacted:
        out.append("body: [redacted]")
    elif event.body is None:
        out.append(f"body: [{event.problem or 'payload missing'}]")
    else:
        for key, value in event.body.items():
            if value in (None, "", [], {}):
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out.append(f"{key}: {text}")
    return "\n".join(out)
