"""The tiers of a pack before the history: pins, the open capsule, current
work, decisions, learnings about the files in play, and query hits (see
:mod:`gitmem.retrieval.context`). Each returns its items in priority order
and adds what it shows to ``claimed``, so no event is shown twice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gitmem.errors import GitmemError
from gitmem.memory.describe import iso_date, iso_minute, one_line, paths_of, plural, ref, visible
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter, paths_overlap
from gitmem.memory.source import EventSource
from gitmem.records.names import EVENT_TYPES
from gitmem.retrieval.context._branch import LEARNING_TYPES, BranchMemory
from gitmem.retrieval.context._lines import TEXT_WIDTH, event_line, item_of, with_status
from gitmem.retrieval.context.pack import PackItem
from gitmem.retrieval.source import SearchFn, term_search
from gitmem.retrieval.stale import StaleFn

MAX_HITS = 10
MAX_WORKFLOWS = 3


def _lookup(source: EventSource, memory: BranchMemory, event_id: str) -> Event | None:
    """A visible event by id: read by the pack already, else from the source."""
    event = memory.by_id.get(event_id)
    if event is None:
        try:
            event = source.get(event_id)
        except GitmemError:
            return None
    return event if event is not None and visible(event) else None


def pin_items(
    source: EventSource, memory: BranchMemory, now: int, claimed: set[str]
) -> list[PackItem]:
    """Tier 1: the pins in force at ``now``, newest first (see the package docstring)."""
    active: dict[str, Event] = {}
    for event in memory.events:
        if event.type not in ("pin", "unpin") or not visible(event):
            continue
        target = str(event.field("target", ""))
        if event.type == "unpin":
            active.pop(target, None)
        else:
            active[target] = event
    items: list[PackItem] = []
    for pin in sorted(active.values(), key=lambda e: e.order_key, reverse=True):
        expires = pin.field("expires")
        if isinstance(expires, int) and expires <= now:
            continue
        target = str(pin.field("target", ""))
        target_id = target.removeprefix("summary:")
        shown = _lookup(source, memory, target_id)
        if shown is None or shown.id in claimed:
            continue
        if target.startswith("summary:"):
            text = _summary_pin(source, memory, shown)
        else:
            text = event_line(shown, memory)
        reason = str(pin.field("reason", "") or "")
        notes = [one_line(reason, 120)] if reason else []
        if isinstance(expires, int):
            notes.append(f"until {iso_date(expires)}")
        text += " — pinned" + (f": {'; '.join(notes)}" if notes else "")
        claimed.add(shown.id)
        items.append(item_of(shown, text))
    return items


def _summary_pin(source: EventSource, memory: BranchMemory, capsule: Event) -> str:
    kind = str(capsule.field("kind", "") or "")
    intent = one_line(str(capsule.field("intent", "") or ""), TEXT_WIDTH)
    head = f"- {ref(capsule.id)} summary of {kind} capsule" + (f" “{intent}”" if intent else "")
    close = memory.closes.get(capsule.id)
    if close is None:
        found = source.events(
            EventFilter(types=["capsule_close"], capsules=[capsule.id]), all_branches=True
        )
        close = found[0] if found else None
    if close is None:
        return f"{head}: still open, no summary yet"
    if not visible(close):
        return f"{head}: summary redacted"
    summary = one_line(str(close.field("summary", "") or ""), TEXT_WIDTH * 2)
    return f"{head} ({iso_date(close.time)}): {summary or 'closed without a summary'}"


def focus_capsule(
    source: EventSource,
    memory: BranchMemory,
    active: str | None,
    session: str | None,
    *,
    stale_before: int | None = None,
) -> Event | None:
    """Tier 2: the capsule being worked on: ``active``, else the newest open
    capsule, preferring one of ``session`` and a ``session`` capsule. A
    capsule in which nothing happened since ``stale_before`` (µs) was
    forgotten, not worked on: it is left out."""

    def busy(capsules: Sequence[Event]) -> set[str]:
        """Those of ``capsules`` worked on since ``stale_before`` (their events
        read in one go: a window's selection reads the whole branch)."""
        if stale_before is None:
            return {c.id for c in capsules}
        quiet = [c for c in capsules if c.time < stale_before]
        inside = memory.window.related(EVENT_TYPES, capsules=[c.id for c in quiet]) if quiet else []
        recent = {e.capsule for e in inside if e.time >= stale_before}
        return {c.id for c in capsules if c.time >= stale_before or c.id in recent}

    if active:
        event = _lookup(source, memory, active)
        if event is not None and event.type == "capsule_open" and busy([event]):
            return event
    candidates = [
        e for e in memory.events if e.type == "capsule_open" and visible(e) and memory.is_open(e.id)
    ]
    current = busy(candidates)
    opens = [e for e in candidates if e.id in current]
    if session:
        opens = [e for e in opens if e.scope.get("session") == session] or opens
    opens = [e for e in opens if e.field("kind") == "session"] or opens
    return opens[-1] if opens else None


def capsule_item(capsule: Event, memory: BranchMemory) -> PackItem:
    """A capsule on one line: kind, span, state, events, intent and summary."""
    kind = str(capsule.field("kind", "") or "")
    intent = one_line(str(capsule.field("intent", "") or ""), TEXT_WIDTH * 2)
    count = memory.counts.get(capsule.id, 0)
    close = memory.closes.get(capsule.id)
    if close is None:
        state = f"open since {iso_minute(capsule.time)}"
    else:
        state = f"{iso_minute(capsule.time)} to {iso_minute(close.time)}, closed"
    text = f"- {ref(capsule.id)} {kind} capsule, {state}, {plural(count, 'event')}"
    text += f": {intent}" if intent else ""
    if close is not None and visible(close) and close.field("summary"):
        text += f"\n  - summary: {one_line(str(close.field('summary')), TEXT_WIDTH * 2)}"
    return item_of(capsule, text)


def work_items(memory: BranchMemory, claimed: set[str]) -> list[PackItem]:
    """Tier 3: the newest checkpoint and the open workflow capsules."""
    items: list[PackItem] = []
    checkpoints = [e for e in memory.events if e.type == "checkpoint" and visible(e)]
    if checkpoints and checkpoints[-1].id not in claimed:
        items.append(_checkpoint_item(checkpoints[-1]))
        claimed.add(checkpoints[-1].id)
    workflows = [
        e
        for e in reversed(memory.events)
        if e.type == "capsule_open"
        and visible(e)
        and e.field("kind") == "workflow"
        and memory.is_open(e.id)
        and e.id not in claimed
    ]
    for capsule in workflows[:MAX_WORKFLOWS]:
        claimed.add(capsule.id)
        items.append(capsule_item(capsule, memory))
    return items


def _checkpoint_item(event: Event) -> PackItem:
    width = TEXT_WIDTH * 2
    summary = one_line(str(event.field("summary", "") or ""), width)
    lines = [
        f"- {ref(event.id)} checkpoint {iso_minute(event.time)}"
        + (f": {summary}" if summary else "")
    ]
    next_step = str(event.field("next", "") or "")
    if next_step:
        lines.append(f"  - next: {one_line(next_step, width)}")

    def listed(label: str, values: list[str]) -> None:
        values = [one_line(v, TEXT_WIDTH) for v in values if v.strip()]
        if values:
            lines.append(f"  - {label}: " + "; ".join(values))

    listed("hypotheses", _str_list(event.field("hypotheses", [])))
    rejected = event.field("rejected", [])
    ideas: list[str] = []
    if isinstance(rejected, list):
        for entry in rejected:
            if isinstance(entry, dict):
                idea, why = str(entry.get("idea", "")), str(entry.get("reason", "") or "")
                ideas.append(f"{idea} ({why})" if why else idea)
            else:
                ideas.append(str(entry))
    listed("rejected", ideas)
    listed("open questions", _str_list(event.field("open_questions", [])))
    return item_of(event, "\n".join(lines))


def _str_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def decision_items(
    memory: BranchMemory,
    paths: Sequence[str],
    claimed: set[str],
    stale: StaleFn | None = None,
) -> tuple[list[PackItem], list[PackItem]]:
    """The active decisions not already shown, those about ``paths`` first,
    then newest first. Their lines come from outlines: through the index, no
    decision's event is decoded (there may be thousands). With ``stale``,
    those about ``paths`` whose code changed since they were made say so."""
    from gitmem.retrieval.stale import mark

    active = [d for d in memory.outlines() if d.active and d.id not in claimed]
    about = {d.id for d in active if paths and paths_overlap(d.paths, paths)}
    active.sort(key=lambda d: (0 if d.id in about else 1, -d.time, d.id))
    claimed.update(d.id for d in active)
    found = (
        stale({d.id: (d.time, d.paths) for d in active if d.id in about})
        if stale is not None and about
        else {}
    )
    items = {
        d.id: PackItem(
            d.id,
            "decision",
            d.time,
            mark(f"- {ref(d.id)} {with_status(d, d.text)}", found.get(d.id)),
        )
        for d in active
    }
    return (
        [items[d.id] for d in active if d.binding],
        [items[d.id] for d in active if not d.binding],
    )


def learning_items(memory: BranchMemory, paths: Sequence[str], claimed: set[str]) -> list[PackItem]:
    """Tier 6: mistakes, then learnings and patterns, about ``paths``."""
    if not paths:
        return []
    found = [
        e
        for e in memory.events
        if e.type in LEARNING_TYPES
        and visible(e)
        and e.id not in claimed
        and paths_overlap(paths_of(e.body), paths)
    ]
    found.sort(key=lambda e: (e.type != "mistake", -e.time, e.id))
    claimed.update(e.id for e in found)
    return [item_of(e, event_line(e, memory)) for e in found]


def hit_items(
    memory: BranchMemory, query: str, search: SearchFn | None, claimed: set[str]
) -> list[PackItem]:
    """Up to MAX_HITS results for ``query`` that are showable and not already
    claimed, best first.

    A search function is asked for a few more than MAX_HITS first, then for
    four times as many while claimed or hidden results leave too few, up to
    MAX_HITS plus the number claimed (asking for thousands at once, when every
    active decision is claimed, would make the search itself slow)."""
    cap = MAX_HITS + len(claimed)
    if search is None:
        return _pick_hits(term_search(memory.window.everything(), query, cap), memory, claimed)
    wanted = min(cap, 2 * MAX_HITS)
    while True:
        results = search(query, wanted, ())
        items = _pick_hits(results, memory, set(claimed))
        if len(items) >= MAX_HITS or len(results) < wanted or wanted >= cap:
            break
        wanted = min(cap, wanted * 4)
    claimed.update(item.id for item in items if item.id)
    return items


def _pick_hits(results: Sequence[Event], memory: BranchMemory, claimed: set[str]) -> list[PackItem]:
    """The first MAX_HITS of ``results`` that are showable and not in ``claimed``
    (which is updated)."""
    items: list[PackItem] = []
    for event in results:
        if len(items) >= MAX_HITS:
            break
        if event.id in claimed or not memory.showable(event):
            continue
        claimed.add(event.id)
        items.append(item_of(event, event_line(event, memory)))
    return items
