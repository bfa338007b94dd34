"""How command results read for people (``--json`` prints their data instead)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gitmem.app.record import Unchanged
from gitmem.cli.root import Output
from gitmem.cli.terminal import yellow
from gitmem.memory.describe import SHORT_ID, plural, short_id
from gitmem.memory.event import Event
from gitmem.memory.timespec import format_time


def sid(event_id: str) -> str:
    """An id as human output shows it: :data:`~gitmem.memory.describe.SHORT_ID`
    hex characters (yellow when colouring), which ``git edda show`` accepts."""
    return yellow(short_id(event_id))


def line(event: Event) -> str:
    """One event on one line: id, time, type, summary."""
    return f"{sid(event.id)}  {format_time(event.time)}  {event.type:<13} {event.summary(90)}"


def written(event: Event, what: str) -> Output:
    """An event just recorded."""
    return Output(
        event.to_json() | {"id": event.id},
        f"{what} {sid(event.id)} on {event.branch or 'detached HEAD'}",
    )


def unchanged(result: Unchanged) -> Output:
    """Nothing written: the state asked for is already there."""
    event = result.event
    return Output(
        {"id": event.id, "unchanged": result.why},
        f"{sid(event.id)}: {result.why}; nothing written",
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
            f"pulled {ref_name(move['ref'])}: {move['outcome']}, +{plural(move['events'], 'event')}"
        )
    if report["payloads_added"] or report["payloads_removed"]:
        lines.append(
            f"payloads: +{report['payloads_added']} received,"
            f" -{report['payloads_removed']} removed by redactions"
        )
    for merge in report["code_merges"]:
        lines.append(
            f"merged memory of {merge['source']} into {merge['into']} (its code was merged): "
            f"{merge['outcome']}, +{plural(merge['events'], 'event')}"
        )
    for move in report["pushed"]:
        lines.append(
            f"pushed {ref_name(move['ref'])}: {move['outcome']}, +{plural(move['events'], 'event')}"
        )
    if report["payloads_pushed"]:
        lines.append("pushed the payload store")
    if not lines:
        lines.append(
            "up to date" if report["remote_has_memory"] else "the remote has no memory yet"
        )
    return lines


# Body fields holding a whole event id (``target`` may be ``summary:<id>``).
_EVENT_ID = re.compile(r"^(summary:)?([0-9a-f]{32})$")
_TIME_FIELDS = ("expires",)  # microseconds since the epoch
_INLINE = 72  # a list of short items up to this width reads on one line


def show_lines(event: Event) -> list[str]:
    """An event in full: a heading with its id, the envelope, then the body,
    one field a line (lists, nested records and multi-line text indented)."""
    fields: list[tuple[str, list[str]]] = [
        ("type", [event.type]),
        ("time", [f"{format_time(event.time)} ({event.time})"]),
        ("branch", [event.branch or "detached HEAD"]),
        ("memory commit", [event.commit[:SHORT_ID] if event.commit else "none"]),
    ]
    fields += [(k, [str(v)]) for k, v in sorted(event.scope.items()) if k != "branch" and v]
    if event.capsule:
        fields.append(("capsule", [sid(event.capsule)]))
    if event.redacted:
        fields.append(("body", ["[redacted]"]))
    elif event.body is None:
        fields.append(("body", ["[payload missing: run 'git edda verify']"]))
    else:
        shown = {name: values[0] for name, values in fields}
        for key in _body_order(event.type, event.body):
            rendered = _value(key, event.body[key])
            if not rendered:
                continue
            label = key
            if key in shown:
                if rendered == [shown[key]]:
                    continue  # a commit link's branch: the branch above
                label = f"{key} (body)"
            fields.append((label.replace("_", " "), rendered))
    width = max(len(label) for label, _ in fields) + 2
    lines = [yellow(f"event {short_id(event.id)}")]
    for label, values in fields:
        lines.append(f"{label + ':':<{width}}{values[0]}")
        lines += [" " * width + value for value in values[1:]]
    return lines


def _body_order(event_type: str, body: dict[str, Any]) -> list[str]:
    """Body keys in the order the type declares its fields, unknown ones after, sorted."""
    from gitmem.records.types import BODY_TYPES

    struct = BODY_TYPES.get(event_type)
    declared = [k for k in getattr(struct, "__struct_fields__", ()) if k in body]
    return declared + sorted(k for k in body if k not in declared)


def _value(key: str, value: Any) -> list[str]:
    """A body value as lines of text (empty: nothing worth showing)."""
    if value is None or value == "" or value == [] or value == {}:
        return []
    if key in _TIME_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return [format_time(value)]
    if isinstance(value, list):
        items = [_item(v) for v in value]
        joined = ", ".join(items)
        # Short plain items (paths, tags) on one line; records and sentences one a line.
        inline = len(joined) <= _INLINE and not any(isinstance(v, dict) for v in value)
        if inline and not any("\n" in i or ", " in i for i in items):
            return [joined]
        lines = []
        for item in items:  # one a line; an item's own further lines indented
            first, *rest = item.split("\n")
            lines += [first, *("  " + part for part in rest)]
        return lines
    if isinstance(value, dict):
        return [f"{k}: {_item(v)}" for k, v in sorted(value.items())]
    return _item(value).split("\n")


def _item(value: Any) -> str:
    """One value (a list item, a nested field) as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        match = _EVENT_ID.match(value)
        return (match.group(1) or "") + sid(match.group(2)) if match else value.rstrip("\n")
    if isinstance(value, dict):
        if "idea" in value:  # a rejected idea
            reason = _item(value.get("reason", ""))
            return _item(value["idea"]) + (f" — {reason}" if reason else "")
        return ", ".join(f"{k}: {_item(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        return " -> ".join(_item(v) for v in value)  # a commit rewrite's [old, new]
    return str(value)


@contextmanager
def progress_bars(unit: Callable[[str], str]) -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback ``(stage, done, total)`` drawing one tqdm bar per
    stage on stderr, in the unit ``unit(stage)`` names, for builds that take
    a while (nothing appears for quick ones or when stderr is not a terminal)."""
    import sys

    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            # delay: no bar for a quick build; disable=None: none off a terminal.
            bar = bars[stage] = tqdm(
                total=total, desc=stage, unit=unit(stage), delay=0.5, file=sys.stderr, disable=None
            )
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars.values():
            bar.close()
