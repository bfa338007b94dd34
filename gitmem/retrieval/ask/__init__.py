"""``ask``: what was decided, and why.

:func:`ask` answers in one of three modes:

* ``overview`` (no query): the active decisions sorted by key, each with its
  status: *binding* (ratified, or recorded by a person) or *proposed* (an
  agent's, not ratified: NOT BINDING). ``include_superseded`` adds the
  superseded ones, marked with what superseded them.
* ``key`` (the query is a decision key: exact match first, then
  case-insensitive): the key's timeline, every decision on it and every
  ratification of one, in event order.
* ``search`` (anything else): decisions ranked by the ``search`` function, or
  by the number of query terms they contain (then newest first), each with a
  few related events: commit links, notes and checkpoints from the same
  capsule or session or about the same paths, nearest in time first.
  Superseded decisions are hidden unless ``include_superseded``.

Every source is read through its window (:mod:`gitmem.memory.window`):
the decision ledger (ids, keys, targets), the decisions shown, and only the
commit links, notes and checkpoints that may relate to them.

Results are deterministic (orders are fixed by key, ``(time, id)`` and id)
and show ids as short ids, ``[a1b2c3d4e5f6]``, which ``git edda show`` expands.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitmem.memory.decisions import DecisionState
from gitmem.memory.describe import describe, one_line, paths_of, ref, visible
from gitmem.memory.event import Event
from gitmem.memory.query import paths_overlap
from gitmem.memory.source import EventSource, branch_kwargs, branch_name
from gitmem.memory.window import DecisionBook
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.retrieval.ask.result import AskResult, DecisionView, RelatedEvent, TimelineEntry
from gitmem.retrieval.source import SearchFn, query_terms, term_score
from gitmem.retrieval.stale import StaleFn

__all__ = ["AskResult", "DecisionView", "RelatedEvent", "TimelineEntry", "ask"]

RELATED_TYPES = ("commit_link", "note", "checkpoint")
MAX_RELATED = 3


def ask(
    source: EventSource,
    query: str | None = None,
    *,
    include_superseded: bool = False,
    search: SearchFn | None = None,
    branch: BranchArg = CURRENT_BRANCH,
    limit: int = 10,
    stale: StaleFn | None = None,
) -> AskResult:
    """Answer a question about decisions on ``branch`` (default: the current one).

    ``limit`` caps the ranked decisions of a free-text query; the overview and
    a key's timeline are complete. With ``stale``, active decisions whose
    code changed since they were made are marked.
    """
    result = _ask(source, query, include_superseded, search, branch, limit)
    return result if stale is None else _mark_stale(result, stale)


def _mark_stale(result: AskResult, stale: StaleFn) -> AskResult:
    import dataclasses

    from gitmem.retrieval.stale import mark

    found = stale(
        {d.id: (d.time, d.paths) for d in result.decisions if d.paths and d.status != "superseded"}
    )
    views = tuple(
        dataclasses.replace(d, line=mark(d.line, found[d.id]), changed=found[d.id].changed)
        if d.id in found
        else d
        for d in result.decisions
    )
    return dataclasses.replace(result, decisions=views)


def _ask(
    source: EventSource,
    query: str | None,
    include_superseded: bool,
    search: SearchFn | None,
    branch: BranchArg,
    limit: int,
) -> AskResult:
    decisions = _Decisions(source, branch)
    name = branch_name(source, branch)
    text = (query or "").strip()
    if not text:
        shown = decisions.states(superseded=include_superseded)
        shown.sort(key=lambda s: (s.key, s.event.order_key))
        views = tuple(DecisionView.of(s) for s in shown)
        return AskResult("overview", None, name, include_superseded, views)
    keys = decisions.keys()
    matched = [k for k in keys if k == text] or [k for k in keys if k.lower() == text.lower()]
    if matched:
        states = decisions.states(keys=matched)
        events = decisions.timeline_events(states)
        return _timeline(text, name, include_superseded, states, events, matched)
    return _search(text, name, include_superseded, decisions, search, limit)


class _Decisions:
    """A branch's decision states through its window: the ledger, then only
    the decisions asked for are decoded and, for related events, only the
    candidates that may relate."""

    def __init__(self, source: EventSource, branch: BranchArg) -> None:
        self.window = source.window(branch_kwargs(branch))
        self.book = DecisionBook(self.window.decisions(), self.window.by_ids)

    def keys(self) -> list[str]:
        """Every decision key, sorted."""
        return sorted(self.book.keys())

    def states(
        self,
        *,
        superseded: bool = True,
        keys: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[DecisionState]:
        """Decision states in event order: active only unless ``superseded``,
        on ``keys``, with ``ids`` (None: no restriction)."""
        chosen = self.book.ids(superseded=superseded, keys=keys)
        if ids is not None:
            wanted = set(ids)
            chosen = [i for i in chosen if i in wanted]
        return self.book.states(chosen)

    def timeline_events(self, states: Sequence[DecisionState]) -> list[Event]:
        """Events a timeline of these decisions walks: them and the
        ratifications that target them."""
        ids = {s.event.id for s in states}
        ratifies = [r for r, target in self.book.ratifies if target in ids]
        return self.window.by_ids([*ids, *ratifies])

    def related_candidates(self, chosen: Sequence[DecisionState]) -> list[Event]:
        """Visible commit links, notes and checkpoints that may relate to ``chosen``."""
        events = self.window.related(
            RELATED_TYPES,
            capsules={s.event.capsule for s in chosen if s.event.capsule},
            sessions={s.event.scope.get("session") or "" for s in chosen} - {""},
            paths={p for s in chosen for p in paths_of(s.event.body)},
        )
        return [e for e in events if e.type in RELATED_TYPES and visible(e)]


def _timeline(
    query: str,
    branch: str | None,
    include_superseded: bool,
    states: list[DecisionState],
    events: list[Event],
    keys: list[str],
) -> AskResult:
    on_key = {s.event.id: s for s in states if s.key in keys}
    entries: list[TimelineEntry] = []
    for event in events:
        if not visible(event):
            continue
        if event.id in on_key:
            view = DecisionView.of(on_key[event.id])
            entries.append(TimelineEntry(event.id, "decision", event.time, view.line, view))
        elif event.type == "ratify" and str(event.field("target", "")) in on_key:
            who = event.actor or "someone"
            note = str(event.field("note", "") or "")
            line = f"{ref(event.id)} ratify: {who} ratified {ref(str(event.field('target')))}"
            entries.append(
                TimelineEntry(
                    event.id,
                    "ratify",
                    event.time,
                    line + (f": {one_line(note, 200)}" if note else ""),
                )
            )
    views = tuple(e.decision for e in entries if e.decision is not None)
    return AskResult("key", query, branch, include_superseded, views, tuple(entries), tuple(keys))


def _search(
    query: str,
    branch: str | None,
    include_superseded: bool,
    decisions: _Decisions,
    search: SearchFn | None,
    limit: int,
) -> AskResult:
    if search is not None:
        hits = search(query, max(limit, 1) * 4, ("decision",))
        by_id = {s.event.id: s for s in decisions.states(ids=[e.id for e in hits])}
        ranked: list[DecisionState] = []
        for event in hits:
            state = by_id.get(event.id)
            if state is not None and state not in ranked:
                ranked.append(state)
    else:
        terms = query_terms(query)
        scored = []
        for state in decisions.states():
            score = _decision_score(terms, state)
            if score:
                scored.append((-score, -state.event.time, state.event.id, state))
        scored.sort(key=lambda row: row[:3])
        ranked = [row[3] for row in scored]
    hidden = 0 if include_superseded else sum(1 for s in ranked if not s.active)
    chosen = [s for s in ranked if include_superseded or s.active][: max(limit, 0)]
    candidates = decisions.related_candidates(chosen)
    views = tuple(DecisionView.of(s, _related(s.event, candidates)) for s in chosen)
    return AskResult("search", query, branch, include_superseded, views, hidden=hidden)


def _decision_score(terms: Sequence[str], state: DecisionState) -> int:
    """Terms matched anywhere, plus terms matched in the key (counted twice)."""
    event = state.event
    fields = [
        state.key,
        str(event.field("value", "")),
        str(event.field("reason", "") or ""),
        str(event.field("scope", "") or ""),
        *paths_of(event.body),
        *(str(t) for t in event.field("tags", []) or []),
    ]
    everything = " ".join(fields).lower()
    return term_score(terms, everything) + term_score(terms, state.key.lower())


def _related(decision: Event, candidates: Sequence[Event]) -> tuple[RelatedEvent, ...]:
    session = decision.scope.get("session")
    paths = paths_of(decision.body)
    found: list[tuple[int, tuple[int, str], Event, str]] = []
    for event in candidates:
        if event.id == decision.id:
            continue
        if decision.capsule and event.capsule == decision.capsule:
            relation = "same capsule"
        elif session and (
            event.scope.get("session") == session
            or (event.type == "commit_link" and event.field("session") == session)
        ):
            relation = "same session"
        elif paths and paths_overlap(paths, paths_of(event.body)):
            relation = "same paths"
        else:
            continue
        found.append((abs(event.time - decision.time), event.order_key, event, relation))
    found.sort(key=lambda row: row[:2])
    nearest = sorted(found[:MAX_RELATED], key=lambda row: row[1])
    return tuple(
        RelatedEvent(e.id, e.type, e.time, describe(e, 160), relation)
        for _, _, e, relation in nearest
    )
