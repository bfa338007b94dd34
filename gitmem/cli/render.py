"""How command results read for people (``--json`` prints their data instead)."""

from __future__ import annotations

from typing import Any

from gitmem.app.record import Unchanged
from gitmem.cli.root import Output
from gitmem.memory.event import Event
from gitmem.memory.timespec import format_time


def line(event: Event) -> str:
    """One event on one line: id, time, type, summary."""
    return f"{event.id[:12]}  {format_time(event.time)}  {event.type:<13} {event.summary(90)}"


def written(event: Event, what: str) -> Output:
    """An event just recorded."""
    return Output(
        event.to_json() | {"id": event.id},
        f"{what} {event.id[:12]} on {event.branch or 'detached HEAD'}",
    )


def unchanged(result: Unchanged) -> Output:
    """Nothing written: the state asked for is already there."""
    event = result.event
    return Output(
        {"id": event.id, "unchanged": result.why},
        f"{event.id[:12]}: {result.why}; nothing written",
    )


def recorded(result: Event | Unchanged, what: str) -> Output:
    """An event recorded, or nothing written and why."""
    return unchanged(result) if isinstance(result, Unchanged) else written(result, what)


def ref_name(ref: str) -> str:
    """A memory ref as people name it: its branch, or detached HEAD."""
    from gitmem.records import layout

    branch = layout.branch_of_ref(ref)
    return (
        branch if branch is not None else ("detached HEAD" if ref == layout.DETACHED_REF else ref)
    )


def sync_lines(report: dict[str, Any]) -> list[str]:
    """People's view of a SyncReport (as JSON)."""
    lines = []
    if report.get("shallow_repaired"):
        lines.append("memory history was truncated by a shallow fetch: fetched it whole")
    for move in report["pulled"]:
        lines.append(
            f"pulled {ref_name(move['ref'])}: {move['outcome']}, +{move['events']} event(s)"
        )
    if report["payloads_added"] or report["payloads_removed"]:
        lines.append(
            f"payloads: +{report['payloads_added']} received, -{report['payloads_removed']} removed by redactions"
        )
    for merge in report["code_merges"]:
        lines.append(
            f"merged memory of {merge['source']} into {merge['into']} (its code was merged): "
            f"{merge['outcome']}, +{merge['events']} event(s)"
        )
    for move in report["pushed"]:
        lines.append(
            f"pushed {ref_name(move['ref'])}: {move['outcome']}, +{move['events']} event(s)"
        )
    if report["payloads_pushed"]:
        lines.append("pushed the payload store")
    if not lines:
        lines.append(
            "up to date" if report["remote_has_memory"] else "the remote has no memory yet"
        )
    return lines


def show_lines(event: Event) -> list[str]:
    """An event in full, field by field."""
    lines = [
        f"id:      {event.id}",
        f"type:    {event.type}",
        f"time:    {format_time(event.time)} ({event.time})",
        f"branch:  {event.branch or 'detached HEAD'}",
        f"commit:  {event.commit}",
    ]
    lines += [f"{k + ':':<8} {v}" for k, v in sorted(event.scope.items()) if k != "branch"]
    if event.capsule:
        lines.append(f"capsule: {event.capsule}")
    if event.redacted:
        lines.append("body:    [redacted]")
    elif event.body is None:
        lines.append("body:    [payload missing: run 'git edda verify']")
    else:
        for key, value in sorted(event.body.items()):
            lines.append(f"{key}: {value}")
    return lines
