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

A pack built with a code search function (``code``) and a query has a ninth
tier, ``code``, between ``hits`` and ``history`` (:data:`CODE_TIERS`): the
best code chunks for the query (path, lines, symbol and their first lines),
each followed by its closest callers and callees in the code graph
(``graph``, one hop over ``calls`` edges). Every hit is offered before any
neighbour, and a neighbour only with its hit. Without ``code`` the pack is
exactly what it was before code search existed (:data:`TIERS`).

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

**Layout.** :mod:`~gitmem.retrieval.context.pack` holds the pack and its
rendering; the private modules hold what the branch is read for
(``_branch``), the tiers (``_tiers``, ``_history``), their compact lines
(``_lines``) and the budget fitting (``_budget``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.errors import UsageError
from gitmem.memory.describe import iso_minute
from gitmem.memory.source import EventSource, branch_kwargs, branch_name
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.retrieval.context._branch import BranchMemory
from gitmem.retrieval.context._budget import Candidate, fit
from gitmem.retrieval.context._history import history_items
from gitmem.retrieval.context._lines import decision_line
from gitmem.retrieval.context._tiers import (
    capsule_item,
    decision_items,
    focus_capsule,
    hit_items,
    learning_items,
    pin_items,
    work_items,
)
from gitmem.retrieval.context.pack import CODE_TIERS, TIERS, ContextPack, PackItem, PackTier
from gitmem.retrieval.source import SearchFn
from gitmem.retrieval.stale import StaleFn
from gitmem.retrieval.tokens import estimate_tokens

if TYPE_CHECKING:
    from gitmem.graph.view import GraphView
    from gitmem.retrieval.codesearch import CodeSearchFn

__all__ = [
    "CODE_TIERS",
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
    capsule_idle: int | None = None,
    stale: StaleFn | None = None,
    code: CodeSearchFn | None = None,
    graph: GraphView | None = None,
) -> ContextPack:
    """Build the context pack of ``branch`` (default: the current one) at ``now``.

    ``now`` is in microseconds since the epoch; it decides which pins have
    expired and stamps the title. ``paths`` are the files in play,
    ``active_capsule`` (an id or prefix) and ``session`` say what is being
    worked on (an unknown ``active_capsule`` is ignored); an open capsule
    with no event for ``capsule_idle`` µs was forgotten and is left out. With
    ``stale``, decisions about the files in play whose code changed since they
    were made are marked. With ``code`` (and a query), the pack has a code
    tier, its hits expanded through ``graph`` when there is one. Raises
    :class:`~gitmem.errors.UsageError` for a budget below 1.
    """
    if budget < 1:
        raise UsageError(f"the budget must be at least 1 token, not {budget}", "pass --budget N")
    memory = BranchMemory(source.window(branch_kwargs(branch)), paths)
    claimed: set[str] = set()
    with_code = code is not None and bool(query and query.strip())
    candidates: dict[str, list[Candidate]] = {
        name: [] for name in (CODE_TIERS if with_code else TIERS)
    }

    def add(
        tier: str,
        items: Sequence[PackItem],
        order: Sequence[int] | None = None,
        requires: Sequence[int | None] | None = None,
    ) -> None:
        for priority, item in enumerate(items):
            position = priority if order is None else order[priority]
            needs = None if requires is None else requires[priority]
            candidates[tier].append(Candidate(tier, priority, position, item, needs))

    add("pins", pin_items(source, memory, now, claimed))
    stale_before = None if capsule_idle is None else now - capsule_idle
    capsule = focus_capsule(source, memory, active_capsule, session, stale_before=stale_before)
    if capsule is not None and capsule.id not in claimed:
        claimed.add(capsule.id)
        add("capsule", [capsule_item(capsule, memory)])
    add("work", work_items(memory, claimed))
    binding, proposed = decision_items(memory, paths, claimed, stale)
    add("binding", binding)
    add("proposed", proposed)
    add("learnings", learning_items(memory, paths, claimed))
    if query and query.strip():
        add("hits", hit_items(memory, query.strip(), search, claimed))
    if with_code:
        from gitmem.retrieval.context._code import code_items

        assert code is not None and query is not None
        add("code", *code_items(query.strip(), code, graph))
    history, order, requires = history_items(memory, session)
    add("history", history, order, requires)

    name = branch_name(source, branch)
    header = f"# Memory context: {'branch ' + name if name else 'detached HEAD'}, {iso_minute(now)}"
    tiers, trailer, header = fit(header, candidates, budget)
    return ContextPack(name, now, budget, query, header, tiers, trailer)
