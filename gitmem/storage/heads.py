"""How chains start and join: fork commits and canonical merge commits.

Neither kind carries events. Both are pure functions of their inputs, so two
clones that fork or merge the same commits produce the same commit ids
(spec/sync.md, "Merge rule"):

* a **fork commit** has the source chain's tip as its only parent (none when
  the source has no memory), the empty tree, gitmem's identity, the parent's
  time, and trailers naming the branch, its source and the code commit at the
  fork;
* a **merge commit** joins the *heads* of the chains being merged: every
  non-merge commit at the frontier of their union, with any head that is an
  ancestor of another dropped. Its parents are the heads in sorted order, its
  time is the newest head's, its message depends only on the parent count.
  Merging merge commits therefore flattens: ``merge(merge(a, b), c)`` and
  ``merge(a, merge(b, c))`` are the same commit, so the result depends
  neither on the order of merges nor on who did them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitmem.storage import layout
from gitmem.storage.backends.base import Backend
from gitmem.storage.objects import ObjectBatch


def is_merge(backend: Backend, commit: str) -> bool:
    return len(backend.read_commit(commit).parents) > 1


def heads(backend: Backend, tips: Iterable[str]) -> list[str]:
    """The sorted, reduced frontier of ``tips``: merge commits are replaced by
    their parents (recursively) and any commit that is an ancestor of another
    is dropped."""
    frontier: set[str] = set()
    stack = list(dict.fromkeys(tips))
    expanded: set[str] = set()
    while stack:
        oid = stack.pop()
        if oid in expanded:
            continue
        expanded.add(oid)
        parents = backend.read_commit(oid).parents
        if len(parents) > 1:
            stack.extend(parents)
        else:
            frontier.add(oid)
    ordered = sorted(frontier)
    return [
        oid
        for oid in ordered
        if not any(other != oid and backend.is_ancestor(oid, other) for other in ordered)
    ]


def merge_tips(backend: Backend, batch: ObjectBatch, tips: Sequence[str | None]) -> str | None:
    """The canonical tip joining ``tips`` (None entries are absent chains).

    Returns one of the tips when it already contains the others (fast-forward
    or up to date), else a new merge commit written into ``batch``.
    """
    present = [t for t in dict.fromkeys(tips) if t is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    for tip in present:  # fast path: one tip already holds every other
        if all(backend.is_ancestor(other, tip) for other in present if other != tip):
            return tip
    joined = heads(backend, present)
    if len(joined) == 1:
        return joined[0]
    when = max(backend.read_commit(oid).time for oid in joined)
    return batch.commit(batch.tree([]), joined, layout.merge_message(len(joined)), when)


def fork_commit(
    backend: Backend,
    batch: ObjectBatch,
    branch: str,
    *,
    source: str | None,
    source_tip: str | None,
    code: str | None,
) -> str:
    """A commit recording that ``branch``'s memory starts from ``source_tip``."""
    if source_tip is not None:
        when = backend.read_commit(source_tip).time
    elif code is not None and backend.has_object(code):
        when = backend.read_commit(code).time
    else:
        when = 0
    message = layout.fork_message(branch, source if source_tip else None, code)
    return batch.commit(batch.tree([]), [source_tip] if source_tip else [], message, when)


def fork_record(backend: Backend, commit: str) -> tuple[str, str | None, str | None] | None:
    """(branch, source, code) when ``commit`` is a fork commit, else None."""
    info = backend.read_commit(commit)
    trailers = layout.parse_trailers(info.message)
    branch = trailers.get(layout.BRANCH_TRAILER)
    if branch is None or len(info.parents) > 1:
        return None
    return branch, trailers.get(layout.FORK_TRAILER), trailers.get(layout.FORK_CODE_TRAILER)


def find_fork(backend: Backend, tip: str, branch: str) -> tuple[str | None, str | None] | None:
    """(source, code) of the newest fork commit of ``branch`` reachable from ``tip``."""
    best: tuple[int, tuple[str | None, str | None]] | None = None
    seen = {tip}
    stack = [tip]
    while stack:
        oid = stack.pop()
        info = backend.read_commit(oid)
        if not info.parents or len(info.parents) == 1:
            record = fork_record(backend, oid)
            if record is not None and record[0] == branch:
                if best is None or info.time > best[0]:
                    best = (info.time, (record[1], record[2]))
                continue  # older history belongs to the source
        for parent in info.parents:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return None if best is None else best[1]
