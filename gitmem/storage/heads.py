"""How chains start and join: fork commits and merge commits.

Neither kind carries events. Both are pure functions of their inputs, so two
clones that fork or merge the same commits produce the same commit ids
(spec/sync.md, "The merge rule"):

* a **fork commit** has the source chain's tip as its only parent (none when
  the source has no memory), the empty tree, gitmem's identity, the parent's
  time, and trailers naming the branch, its source and the code commit at the
  fork;
* a **merge commit** has as parents the tips being merged, minus any tip that
  is an ancestor of another, in sorted order; the empty tree; the newest
  parent's time; and a message that depends only on the parent count.

Every merge result descends from every input, so a memory ref only ever
moves forward and is pushed without force. The merged *memory* (the set of
events, ordered by time and id) is the same whatever the order of merges;
the commit ids of intermediate merges may differ, and sync converges them by
fast-forwarding every clone to the remote's tip.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitmem.records import layout
from gitmem.storage.backends.base import Backend, CommitInfo
from gitmem.storage.objects import ObjectBatch


def reduce_tips(backend: Backend, tips: Iterable[str]) -> list[str]:
    """``tips`` without duplicates and without any tip that is an ancestor of
    another, sorted by id."""
    ordered = sorted(set(tips))
    return [
        oid
        for oid in ordered
        if not any(other != oid and backend.is_ancestor(oid, other) for other in ordered)
    ]


def merge_tips(backend: Backend, batch: ObjectBatch, tips: Sequence[str | None]) -> str | None:
    """The tip joining ``tips`` (None entries are absent chains).

    Returns one of the tips when it already contains the others (fast-forward
    or up to date), else a new merge commit written into ``batch`` whose
    parents are the remaining tips.
    """
    present = [t for t in dict.fromkeys(tips) if t is not None]
    if not present:
        return None
    joined = reduce_tips(backend, present)
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
    renamed_from: str | None = None,
) -> str:
    """A commit recording that ``branch``'s memory starts from ``source_tip``
    (for a rename: continues ``renamed_from``'s chain, whose tip is ``source_tip``)."""
    if source_tip is not None:
        when = backend.read_commit(source_tip).time
    elif code is not None and backend.has_object(code):
        when = backend.read_commit(code).time
    else:
        when = 0
    message = layout.fork_message(
        branch, source if (source_tip or renamed_from) else None, code, renamed_from
    )
    return batch.commit(batch.tree([]), [source_tip] if source_tip else [], message, when)


def fork_record(backend: Backend, commit: str) -> tuple[str, str | None, str | None] | None:
    """(branch, source, code) when ``commit`` is a fork commit, else None."""
    return fork_record_of(backend.read_commit(commit))


def fork_record_of(info: CommitInfo) -> tuple[str, str | None, str | None] | None:
    """:func:`fork_record` of a commit already read."""
    if layout.BRANCH_TRAILER not in info.message:
        return None  # most commits: their trailers need no parsing
    trailers = layout.parse_trailers(info.message)
    branch = trailers.get(layout.BRANCH_TRAILER)
    if branch is None or len(info.parents) > 1:
        return None
    return branch, trailers.get(layout.FORK_TRAILER), trailers.get(layout.FORK_CODE_TRAILER)


ForkWalkMemo = dict[str, tuple[int, tuple[str, ...], tuple[str, str | None, str | None] | None]]
"""commit -> (time, parents, fork record): what :func:`find_fork` reads of a
commit, kept across the walks of one detection run (the branches' walks
share the trunk's history)."""


def find_fork(
    backend: Backend,
    tip: str,
    branch: str,
    *,
    within: set[str] | None = None,
    memo: ForkWalkMemo | None = None,
) -> tuple[str | None, str | None] | None:
    """(source, code) of the newest fork commit of ``branch`` reachable from ``tip``.

    ``within``: walk only these commits (those added since a tip whose
    history holds no fork commit of ``branch``). ``memo``: commits read by
    earlier walks, and where this one leaves what it reads."""
    best: tuple[int, tuple[str | None, str | None]] | None = None
    seen = {tip}
    stack = [tip] if within is None or tip in within else []
    memo = {} if memo is None else memo
    while stack:
        oid = stack.pop()
        if oid not in memo:
            info = backend.read_commit(oid)
            one = not info.parents or len(info.parents) == 1
            memo[oid] = (info.time, info.parents, fork_record_of(info) if one else None)
        when, parents, record = memo[oid]
        if record is not None and record[0] == branch:
            if best is None or when > best[0]:
                best = (when, (record[1], record[2]))
            continue  # older history belongs to the source
        for parent in parents:
            if parent not in seen and (within is None or parent in within):
                seen.add(parent)
                stack.append(parent)
    return None if best is None else best[1]
