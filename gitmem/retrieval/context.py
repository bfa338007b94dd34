"""Context packs: what an agent should know now, within a token budget.

:func:`build_context` gathers candidate items in eight tiers, highest
priority first:

1. ``pins``: pins in force at ``now`` (not unpinned, not expired, target not
   redacted); ``summary:<capsule>`` pins show that capsule's close summary;
2. ``capsule``: the open capsule (``active_capsule``, else the newest open
   capsule on the branch, preferring one of ``session``);
3. ``work``: the newest checkpoint (summary, next step, hypotheses, rejected
   ideas, open questions) and other open workflow capsules;
4. ``binding``: active decisions that bind (ratified, or recorded by a person);
5. ``proposed``: active decisions an agent recorded and nobody ratified,
   each labelled NOT BINDING ("recorded is not ratified");
6. ``learnings``: mistakes, then learnings and patterns, whose paths match the
   files in play (``paths``; none when no paths are given);
7. ``hits``: events matching ``query`` (the ``search`` function, asked for
   a few more than shown and more only when too many were already shown, or
   case-insensitive term matching) not already shown;
8. ``history``: recent activity, tiered: the last session in detail (its
   newest events' one-line summaries, newest last), the three sessions before
   it one line each, and every older session aggregated into one line.

**Budget.** Tokens are estimated as ``ceil(characters / 4)`` of the rendered
text (:func:`~gitmem.retrieval.tokens.estimate_tokens`). Items are included or
dropped whole: tier by tier, each tier in its own priority order (newest or
most relevant first), an item is included when the whole rendered pack,
headers and the trailer that reports drops included, still fits. A smaller
item may therefore follow a dropped larger one. The rendered markdown never
exceeds the budget: room for the trailer is reserved assuming that every
undecided item will be dropped. When the per-tier trailer would take more than
a quarter of the budget, a one-count trailer is used (the JSON form always has
per-tier counts); for a budget too small even for that, the trailer and then
the title are left out.

**Sources.** Any :class:`~gitmem.memory.source.EventSource` is read through
its window (:mod:`gitmem.memory.window`), by need: the pins, unpins and
capsule events, the decision ledger and the active decisions, the newest
checkpoint, the learnings about ``paths``, the targets of pins, and the tail
of the recent sessions, with exact per-session counts and spans and one
aggregate for the older sessions. The index selects these from its columns,
the store from the branch's events read whole; the pack is the same either
way.

**Disclosure and determinism.** Every line that stands for an event carries
its short id, ``[a1b2c3d4e5f6]``, which ``git edda show`` expands. Times are
UTC ISO dates. No wall clock is read (``now`` is explicit, in microseconds
since the epoch, the unit of event times) and every order is fixed by
``(time, id)``, so the same memory, query and ``now`` give byte-identical
output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.errors import GitmemError, UsageError
from gitmem.memory.decisions import DecisionState
from gitmem.memory.describe import (
    LINE_WIDTH,
    describe,
    iso_date,
    iso_minute,
    one_line,
    paths_of,
    ref,
    short_id,
    visible,
)
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter, paths_overlap
from gitmem.memory.source import EventSource, branch_kwargs, branch_name
from gitmem.memory.window import (
    BranchWindow,
    DecisionBook,
    DecisionOutline,
    OlderSessions,
    capsule_sessions,
    session_key,
)
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.retrieval.source import SearchFn, term_search
from gitmem.retrieval.tokens import chars_for, estimate_tokens

__all__ = [
    "CURRENT_BRANCH",
    "TIERS",
    "ContextPack",
    "EventSource",
    "PackItem",
    "PackTier",
    "SearchFn",
    "build_context",
    "decision_line",
    "estimate_tokens",
]

# name, section title, trailer noun (singular, plural)
_TIER_SPECS: tuple[tuple[str, str, str, str], ...] = (
    ("pins", "Pinned", "pin", "pins"),
    ("capsule", "Open capsule", "capsule line", "capsule lines"),
    ("work", "Current work", "work item", "work items"),
    ("binding", "Decisions (binding)", "binding decision", "binding decisions"),
    (
        "proposed",
        "Proposed decisions (NOT BINDING until ratified)",
        "proposed decision",
        "proposed decisions",
    ),
    ("learnings", "Learnings about the files in play", "learning", "learnings"),
    ("hits", "Related to the query", "query hit", "query hits"),
    ("history", "Recent activity", "history line", "history lines"),
)
TIERS: tuple[str, ...] = tuple(spec[0] for spec in _TIER_SPECS)
"""Tier names in priority order."""
_TITLES = {spec[0]: spec[1] for spec in _TIER_SPECS}
_NOUNS = {spec[0]: (spec[2], spec[3]) for spec in _TIER_SPECS}

TEXT_WIDTH = LINE_WIDTH  # characters of an event's text on a compact line
HISTORY_WIDTH = 120
MAX_HITS = 10
MAX_WORKFLOWS = 3
DETAIL_EVENTS = 20  # events of the last session shown in detail
PREVIOUS_SESSIONS = 3
HIDDEN_TYPES = frozenset({"redaction"})  # never shown as hits or history
LEARNING_TYPES = ("mistake", "learning", "pattern")
# what a pack reads whole through a window; the rest is the active decisions, the
# newest checkpoint, the learnings about the files in play, pin targets and the
# recent sessions
WINDOW_TYPES = ("pin", "unpin", "capsule_open", "capsule_close")


@dataclass(frozen=True)
class PackItem:
    """One line (or block) of a pack; ``id`` is the full event id it stands for."""

    id: str | None
    type: str
    time: int | None
    text: str

    @property
    def tokens(self) -> int:
        """Estimated tokens of the item's text."""
        return estimate_tokens(self.text)

    def to_json(self) -> dict[str, Any]:
        """``{id, short_id, type, time, text, tokens}``."""
        return {
            "id": self.id,
            "short_id": short_id(self.id) if self.id else None,
            "type": self.type,
            "time": self.time,
            "text": self.text,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class PackTier:
    """A tier's included items (display order) and how many were dropped."""

    name: str
    title: str
    items: tuple[PackItem, ...]
    dropped: int

    def to_json(self) -> dict[str, Any]:
        """``{name, title, items, dropped}``."""
        return {
            "name": self.name,
            "title": self.title,
            "items": [item.to_json() for item in self.items],
            "dropped": self.dropped,
        }


@dataclass(frozen=True)
class ContextPack:
    """A rendered-to-budget context pack (see the module docstring)."""

    branch: str | None
    now: int
    budget: int
    query: str | None
    header: str
    tiers: tuple[PackTier, ...]
    trailer: str

    @property
    def dropped(self) -> dict[str, int]:
        """Dropped items per tier (every tier named, in priority order)."""
        return {tier.name: tier.dropped for tier in self.tiers}

    @property
    def used(self) -> int:
        """Estimated tokens of :meth:`to_markdown`."""
        return estimate_tokens(self.to_markdown())

    def tier(self, name: str) -> PackTier:
        """The tier called ``name``."""
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)

    def to_markdown(self) -> str:
        """The pack as markdown; never more than ``budget`` estimated tokens."""
        return _render(
            self.header, [(t.title, [i.text for i in t.items]) for t in self.tiers], self.trailer
        )

    def to_json(self) -> dict[str, Any]:
        """The pack as JSON-ready data: tiers with items, drops, budget and use."""
        return {
            "branch": self.branch,
            "now": self.now,
            "query": self.query,
            "budget": self.budget,
            "used": self.used,
            "tiers": [tier.to_json() for tier in self.tiers],
            "dropped": self.dropped,
            "trailer": self.trailer,
        }


# --- building -------------------------------------------------------------------------


@dataclass
class _Candidate:
    tier: str
    priority: int  # selection order within the tier (0 first)
    order: int  # display order within the tier
    item: PackItem
    requires: int | None = None  # priority of an item this one only makes sense with


class _Memory:
    """What the tiers read of the branch, fetched once through its window
    (:mod:`gitmem.memory.window`): ``events`` holds the pins, unpins and
    capsule events, the newest checkpoint, the learnings about the files in
    play and the targets of pins; ``hidden`` (ids of the branch's invisible
    events), ``counts`` (events per capsule) and ``book`` (decision states,
    decoded only when asked for) cover the whole branch.
    """

    def __init__(self, window: BranchWindow, paths: Sequence[str]) -> None:
        self.window = window
        chosen = window.of_types(WINDOW_TYPES)
        chosen += window.newest("checkpoint", 1)
        chosen += window.touching(LEARNING_TYPES, paths)
        targets = {
            str(e.field("target", "")).removeprefix("summary:")
            for e in chosen
            if e.type == "pin" and visible(e)
        }
        chosen += window.by_ids(targets)
        unique = {event.id: event for event in chosen}
        self.events = sorted(unique.values(), key=lambda e: e.order_key)
        self.by_id = unique
        self.hidden = window.hidden()
        self.counts = window.capsule_counts()  # capsule id -> events
        self.book = DecisionBook(window.decisions(), window.by_ids)
        self.closes: dict[str, Event] = {}  # capsule id -> close
        for event in self.events:
            if event.type == "capsule_close":
                target = str(event.field("capsule", "") or event.capsule or "")
                self.closes.setdefault(target, event)

    def outlines(self) -> list[DecisionOutline]:
        """Every decision of the branch, outlined, in event order."""
        return self.book.outlines()

    def state(self, event: Event) -> DecisionState | None:
        """The decision state of ``event`` (None: not a decision of the branch)."""
        return self.book.state(event)

    def is_open(self, capsule_id: str) -> bool:
        return capsule_id not in self.closes

    def showable(self, event: Event) -> bool:
        """Visible, not a hidden type, and not pointing at a redacted event."""
        if not visible(event) or event.type in HIDDEN_TYPES:
            return False
        target = event.field("target")
        return not (isinstance(target, str) and target.removeprefix("summary:") in self.hidden)


def build_context(
    source: EventSource,
    *,
    query: str | None = None,
    budget: int = 2000,
    now: int,
    branch: BranchArg = CURRENT_BRANCH,
    search: SearchFn | None = None,
    paths: Sequence[str] = (),
    active_capsule: str | None = None,
    session: str | None = None,
) -> ContextPack:
    """Build the context pack of ``branch`` (default: the current one) at ``now``.

    ``now`` is in microseconds since the epoch; it decides which pins have
    expired and stamps the title. ``paths`` are the files in play,
    ``active_capsule`` (an id or prefix) and ``session`` say what is being
    worked on (an unknown ``active_capsule`` is ignored). Raises
    :class:`~gitmem.errors.UsageError` for a budget below 1.
    """
    if budget < 1:
        raise UsageError(f"the budget must be at least 1 token, not {budget}", "pass --budget N")
    memory = _Memory(source.window(branch_kwargs(branch)), paths)
    claimed: set[str] = set()
    candidates: dict[str, list[_Candidate]] = {name: [] for name in TIERS}

    def add(
        tier: str,
        items: Sequence[PackItem],
        order: Sequence[int] | None = None,
        requires: Sequence[int | None] | None = None,
    ) -> None:
        for priority, item in enumerate(items):
            position = priority if order is None else order[priority]
            needs = None if requires is None else requires[priority]
            candidates[tier].append(_Candidate(tier, priority, position, item, needs))

    add("pins", _pins(source, memory, now, claimed))
    capsule = _focus_capsule(source, memory, active_capsule, session)
    if capsule is not None and capsule.id not in claimed:
        claimed.add(capsule.id)
        add("capsule", [_capsule_item(capsule, memory)])
    add("work", _work(memory, claimed))
    binding, proposed = _decisions(memory, paths, claimed)
    add("binding", binding)
    add("proposed", proposed)
    add("learnings", _learnings(memory, paths, claimed))
    if query and query.strip():
        add("hits", _hits(memory, query.strip(), search, claimed))
    history, order, requires = _history(memory, session)
    add("history", history, order, requires)

    name = branch_name(source, branch)
    header = f"# Memory context: {'branch ' + name if name else 'detached HEAD'}, {iso_minute(now)}"
    tiers, trailer, header = _fit(header, candidates, budget)
    return ContextPack(name, now, budget, query, header, tiers, trailer)


def decision_line(state: DecisionState, width: int = TEXT_WIDTH) -> str:
    """A decision with its status, id-less: proposed ones start ``NOT BINDING``."""
    outline = DecisionOutline.of(state, width)
    return _with_status(outline, outline.text)


def _with_status(decision: DecisionOutline, text: str) -> str:
    """``text`` (the decision described) with the decision's status around it."""
    date = iso_date(decision.time)
    if not decision.active:
        return f"{text} (superseded by {ref(decision.superseded_by or '')}; {date})"
    if not decision.binding:
        agent = one_line(decision.agent or "an agent", 60)
        return f"NOT BINDING, proposed by {agent} and not ratified: {text} ({date})"
    how = (
        "ratified " + " ".join(ref(r) for r in decision.ratified_by)
        if decision.ratified_by
        else "recorded by a person"
    )
    return f"{text} (binding, {how}; {date})"


def _line(event: Event, memory: _Memory, width: int = TEXT_WIDTH, dated: bool = True) -> str:
    state = memory.state(event)
    if state is not None:
        return f"- {ref(event.id)} {decision_line(state, width)}"
    suffix = f" ({iso_date(event.time)})" if dated else ""
    return f"- {ref(event.id)} {describe(event, width)}{suffix}"


def _item(event: Event, text: str) -> PackItem:
    return PackItem(event.id, event.type, event.time, text)


def _lookup(source: EventSource, memory: _Memory, event_id: str) -> Event | None:
    event = memory.by_id.get(event_id)
    if event is None:
        try:
            event = source.get(event_id)
        except GitmemError:
            return None
    return event if event is not None and visible(event) else None


def _pins(source: EventSource, memory: _Memory, now: int, claimed: set[str]) -> list[PackItem]:
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
            text = _line(shown, memory)
        reason = str(pin.field("reason", "") or "")
        notes = [one_line(reason, 120)] if reason else []
        if isinstance(expires, int):
            notes.append(f"until {iso_date(expires)}")
        text += " — pinned" + (f": {'; '.join(notes)}" if notes else "")
        claimed.add(shown.id)
        items.append(_item(shown, text))
    return items


def _summary_pin(source: EventSource, memory: _Memory, capsule: Event) -> str:
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


def _focus_capsule(
    source: EventSource, memory: _Memory, active: str | None, session: str | None
) -> Event | None:
    if active:
        event = _lookup(source, memory, active)
        if event is not None and event.type == "capsule_open":
            return event
    opens = [
        e for e in memory.events if e.type == "capsule_open" and visible(e) and memory.is_open(e.id)
    ]
    if session:
        opens = [e for e in opens if e.scope.get("session") == session] or opens
    opens = [e for e in opens if e.field("kind") == "session"] or opens
    return opens[-1] if opens else None


def _capsule_item(capsule: Event, memory: _Memory) -> PackItem:
    kind = str(capsule.field("kind", "") or "")
    intent = one_line(str(capsule.field("intent", "") or ""), TEXT_WIDTH * 2)
    count = memory.counts.get(capsule.id, 0)
    close = memory.closes.get(capsule.id)
    if close is None:
        state = f"open since {iso_minute(capsule.time)}"
    else:
        state = f"{iso_minute(capsule.time)} to {iso_minute(close.time)}, closed"
    text = f"- {ref(capsule.id)} {kind} capsule, {state}, {count} event{_s(count)}"
    text += f": {intent}" if intent else ""
    if close is not None and visible(close) and close.field("summary"):
        text += f"\n  - summary: {one_line(str(close.field('summary')), TEXT_WIDTH * 2)}"
    return _item(capsule, text)


def _work(memory: _Memory, claimed: set[str]) -> list[PackItem]:
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
        items.append(_capsule_item(capsule, memory))
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
    return _item(event, "\n".join(lines))


def _str_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _decisions(
    memory: _Memory, paths: Sequence[str], claimed: set[str]
) -> tuple[list[PackItem], list[PackItem]]:
    """The active decisions not already shown, those about ``paths`` first,
    then newest first. Their lines come from outlines: through the index, no
    decision's event is decoded (there may be thousands)."""
    active = [d for d in memory.outlines() if d.active and d.id not in claimed]
    active.sort(key=lambda d: (0 if paths and paths_overlap(d.paths, paths) else 1, -d.time, d.id))
    claimed.update(d.id for d in active)
    items = {
        d.id: PackItem(d.id, "decision", d.time, f"- {ref(d.id)} {_with_status(d, d.text)}")
        for d in active
    }
    return (
        [items[d.id] for d in active if d.binding],
        [items[d.id] for d in active if not d.binding],
    )


def _learnings(memory: _Memory, paths: Sequence[str], claimed: set[str]) -> list[PackItem]:
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
    return [_item(e, _line(e, memory)) for e in found]


def _hits(
    memory: _Memory, query: str, search: SearchFn | None, claimed: set[str]
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


def _pick_hits(results: Sequence[Event], memory: _Memory, claimed: set[str]) -> list[PackItem]:
    """The first MAX_HITS of ``results`` that are showable and not in ``claimed``
    (which is updated)."""
    items: list[PackItem] = []
    for event in results:
        if len(items) >= MAX_HITS:
            break
        if event.id in claimed or not memory.showable(event):
            continue
        claimed.add(event.id)
        items.append(_item(event, _line(event, memory)))
    return items


# --- history --------------------------------------------------------------------------


@dataclass
class _Session:
    """A session of the history tier: exact size and span, and its newest events."""

    key: str
    count: int
    first: int  # time of its first event
    tail: list[Event]  # its newest events (at least DETAIL_EVENTS, or all), oldest first
    capsule: Event | None  # its session capsule (see _session_capsule)

    @property
    def last(self) -> int:
        return self.tail[-1].time

    @property
    def label(self) -> str:
        kind, name = self.key[:2], one_line(self.key[2:], 60)
        return {
            "s:": f"session {name}",
            "c:": f"session capsule {ref(name)}",
            "d:": f"events without a session on {name}",
        }[kind]


def _window_sessions(
    memory: _Memory, window: BranchWindow, session: str | None
) -> tuple[list[_Session], OlderSessions | None]:
    """The recent sessions as the window counts them, and the older ones aggregated.

    A session's capsule is chosen among the showable capsule opens of the
    branch (all of which the window read) keyed to that session."""
    found = window.sessions(PREVIOUS_SESSIONS + 1, session, DETAIL_EVENTS)
    capsules = capsule_sessions(memory.events)
    opens: dict[str, list[Event]] = {}
    for event in memory.events:
        if event.type == "capsule_open" and memory.showable(event):
            opens.setdefault(session_key(event, capsules), []).append(event)
    sessions = [
        _Session(s.key, s.count, s.first, list(s.tail), _session_capsule(opens.get(s.key, [])))
        for s in found.recent
    ]
    return sessions, found.older


def _session_capsule(events: Sequence[Event]) -> Event | None:
    opens = [e for e in events if e.type == "capsule_open"]
    preferred = [e for e in opens if e.field("kind") == "session"]
    chosen = preferred or opens
    return chosen[-1] if chosen else None


def _span(session: _Session) -> str:
    start, end = iso_minute(session.first), iso_minute(session.last)
    if start == end:
        return start
    return f"{start} to {end[11:] if start[:10] == end[:10] else end}"


def _session_line(session: _Session, memory: _Memory, lead: str = "") -> PackItem:
    capsule = session.capsule
    anchor = capsule or session.tail[-1]
    count = session.count
    text = f"- {ref(anchor.id)} {lead}{session.label}, {_span(session)}, {count} event{_s(count)}"
    if capsule is not None:
        intent = one_line(str(capsule.field("intent", "") or ""), HISTORY_WIDTH)
        close = memory.closes.get(capsule.id)
        summary = (
            one_line(str(close.field("summary", "") or ""), HISTORY_WIDTH)
            if close is not None and visible(close)
            else ""
        )
        about = " — ".join(part for part in (intent, summary) if part)
        text += f": {about}" if about else ""
    return _item(anchor, text)


def _history(
    memory: _Memory, session: str | None
) -> tuple[list[PackItem], list[int], list[int | None]]:
    """History items in priority order, their display positions, and what
    each needs (the last session's events need its intro line)."""
    sessions, older = _window_sessions(memory, memory.window, session)
    if not sessions:
        return [], [], []
    current = next((s for s in sessions if session and s.key == "s:" + session), sessions[-1])
    others = [s for s in sessions if s is not current]
    previous = others[-PREVIOUS_SESSIONS:]
    for prior in others[: len(others) - len(previous)]:
        older = OlderSessions(1, prior.count, prior.first, prior.last).plus(older)
    detail = current.tail[-DETAIL_EVENTS:]

    items: list[PackItem] = []
    order: list[int] = []
    requires: list[int | None] = []
    base = 2 + len(previous)  # aggregate, previous sessions, intro, details
    items.append(_session_line(current, memory, lead="last: "))
    order.append(base)
    requires.append(None)
    for index, event in reversed(list(enumerate(detail))):
        text = "  " + _line(event, memory, HISTORY_WIDTH, dated=False)
        items.append(_item(event, text))
        order.append(base + 1 + index)
        requires.append(0)
    for index, prior in reversed(list(enumerate(previous))):
        items.append(_session_line(prior, memory))
        order.append(1 + index)
        requires.append(None)
    if older is not None:
        count, first, last = older.events, older.first, older.last
        text = (
            f"- {older.sessions} older session{_s(older.sessions)}, {count} event{_s(count)}, "
            + (
                iso_date(first)
                if iso_date(first) == iso_date(last)
                else f"{iso_date(first)} to {iso_date(last)}"
            )
        )
        items.append(PackItem(None, "sessions", None, text))
        order.append(0)
        requires.append(None)
    return items, order, requires


def _s(count: int) -> str:
    return "" if count == 1 else "s"


# --- fitting to the budget ------------------------------------------------------------


def _render(header: str, sections: Sequence[tuple[str, Sequence[str]]], trailer: str) -> str:
    blocks = [header] if header else []
    blocks.extend(f"## {title}\n" + "\n".join(items) for title, items in sections if items)
    if trailer:
        blocks.append(trailer)
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _trailer(counts: dict[str, int], total: int, style: str) -> str:
    if style == "none":
        return ""
    if total == 0:
        return "_Nothing recorded in memory for this branch yet._"
    dropped = sum(counts.values())
    if not dropped:
        return ""
    if style == "compact":
        return f"_Dropped {dropped} item{_s(dropped)} to fit the budget (raise --budget)._"
    parts = []
    for name in TIERS:
        if counts.get(name):
            singular, plural = _NOUNS[name]
            parts.append(f"{counts[name]} {singular if counts[name] == 1 else plural}")
    return f"_Dropped to fit the budget: {', '.join(parts)} (raise --budget)._"


def _fit(
    header: str, candidates: dict[str, list[_Candidate]], budget: int
) -> tuple[tuple[PackTier, ...], str, str]:
    """Choose items whole, in priority order, so the rendering fits ``budget``."""
    limit = chars_for(budget)
    sizes = {name: len(candidates[name]) for name in TIERS}
    total = sum(sizes.values())
    worst_full = len(_trailer(sizes, total, "full"))
    styles = ("full", "compact", "none") if worst_full <= limit // 4 else ("compact", "none")
    for title in (header, ""):
        for style in styles:
            chosen = _fill(title, candidates, limit, style, total)
            tiers, trailer = _assemble(candidates, chosen, total, style)
            while True:
                text = _render(
                    title, [(t.title, [i.text for i in t.items]) for t in tiers], trailer
                )
                if len(text) <= limit or not chosen:
                    break
                chosen.pop()  # safety net: the fill's arithmetic already ensures this fits
                tiers, trailer = _assemble(candidates, chosen, total, style)
            if len(text) <= limit:
                return tiers, trailer, title
    empty = tuple(PackTier(n, _TITLES[n], (), sizes[n]) for n in TIERS)
    return empty, "", ""


def _fill(
    header: str, candidates: dict[str, list[_Candidate]], limit: int, style: str, total: int
) -> list[_Candidate]:
    """Greedy choice: an item goes in when the pack, with a trailer that assumes
    every item not yet decided is dropped, still fits."""
    pending = {name: len(candidates[name]) for name in TIERS}
    dropped = dict.fromkeys(TIERS, 0)
    content = len(header)  # characters of every block but the trailer
    blocks = 1 if header else 0
    chosen: list[_Candidate] = []
    trailers: dict[tuple[int, ...], str] = {}

    def length(content: int, blocks: int, trailer: str) -> int:
        count = blocks + (1 if trailer else 0)
        return content + len(trailer) + 2 * (count - 1) + 1 if count else 0

    for name in TIERS:
        opened = False
        taken: set[int] = set()
        for candidate in candidates[name]:
            pending[name] -= 1
            if candidate.requires is not None and candidate.requires not in taken:
                dropped[name] += 1
                continue
            worst = tuple(dropped[n] + pending[n] for n in TIERS)
            trailer = trailers.get(worst)
            if trailer is None:  # the same while items are dropped: computed once
                trailer = trailers[worst] = _trailer(
                    dict(zip(TIERS, worst, strict=True)), total, style
                )
            text = len(candidate.item.text)
            if opened:
                grown, more = content + 1 + text, blocks
            else:
                grown, more = content + len(f"## {_TITLES[name]}\n") + text, blocks + 1
            if length(grown, more, trailer) <= limit:
                content, blocks, opened = grown, more, True
                chosen.append(candidate)
                taken.add(candidate.priority)
            else:
                dropped[name] += 1
    return chosen


def _assemble(
    candidates: dict[str, list[_Candidate]], chosen: list[_Candidate], total: int, style: str
) -> tuple[tuple[PackTier, ...], str]:
    picked = {id(c) for c in chosen}
    tiers = []
    counts: dict[str, int] = {}
    for name in TIERS:
        kept = [c for c in candidates[name] if id(c) in picked]
        kept.sort(key=lambda c: c.order)
        counts[name] = len(candidates[name]) - len(kept)
        tiers.append(PackTier(name, _TITLES[name], tuple(c.item for c in kept), counts[name]))
    return tuple(tiers), _trailer(counts, total, style)
