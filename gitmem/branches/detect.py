"""Which branches' code has been merged into a branch, so its memory should follow.

Memory branch X is merged into Y when X's code tip has become an ancestor of
Y's code tip, except when that says nothing about X's work:

* X's memory is already part of Y's (nothing to do);
* X's code tip is an ancestor of the code Y was forked at (Y was created
  from X, or from a descendant of it, and X has not moved since);
* X's code tip is an ancestor of the code X itself was forked at (X has no
  commits of its own yet);
* for the post-merge hook, X's code tip was already part of Y before the merge;
* for pull (no before/after view), X or Y has no fork record and is not the
  trunk: then ancestry cannot tell merged work from a branch created where
  the other already was.

X's code tip is its local branch, else a remote-tracking branch of that name,
else the newest ``commit_link`` in its memory (a branch deleted after its pull
request was merged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.branches.gitinfo import code_tip
from gitmem.records import layout
from gitmem.storage import heads

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


class _Forks:
    """Fork records by (tip, branch), cached for one detection run."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.cache: dict[tuple[str, str], tuple[str | None, str | None] | None] = {}

    def code(self, tip: str, branch: str) -> str | None:
        key = (tip, branch)
        if key not in self.cache:
            self.cache[key] = heads.find_fork(self.memory.backend, tip, branch)
        found = self.cache[key]
        return None if found is None else found[1]


def _ancestor(memory: Memory, a: str | None, b: str | None) -> bool:
    backend = memory.backend
    return bool(a and b and backend.has_object(a) and backend.has_object(b)) and (
        backend.is_ancestor(a, b)  # type: ignore[arg-type]
    )


def merged_into(
    memory: Memory,
    target: str,
    *,
    target_code: str | None = None,
    before: str | None = None,
    forks: _Forks | None = None,
) -> list[str]:
    """Memory branches whose code has become part of ``target``'s code."""
    backend = memory.backend
    target_code = target_code or code_tip(backend, target)
    if target_code is None:
        return []
    forks = forks or _Forks(memory)
    trunk = memory.trunk
    refs = memory.ledger.memory_refs()
    target_tip = refs.get(layout.branch_ref(target))
    target_fork = forks.code(target_tip, target) if target_tip else None
    if before is None and target_tip is not None and target_fork is None and target != trunk:
        return []  # no fork record for the target either: see the module docstring
    found: list[str] = []
    for ref, tip in refs.items():
        source = layout.branch_of_ref(ref)
        if source is None or source == target:
            continue
        if target_tip is not None and backend.is_ancestor(tip, target_tip):
            continue
        source_code = code_tip(backend, source) or memory.last_linked_commit(source)
        if not _ancestor(memory, source_code, target_code):
            continue
        if before is not None and _ancestor(memory, source_code, before):
            continue
        if _ancestor(memory, source_code, target_fork):
            continue
        source_fork = forks.code(tip, source)
        if _ancestor(memory, source_code, source_fork):
            continue
        if before is None and source_fork is None and source != trunk:
            # Without a fork record or a before/after view of the code, "its code
            # is an ancestor" cannot tell merged work from a branch created
            # where the target already was: leave it to post-merge or git edda merge.
            continue
        found.append(source)
    return found


def code_merges(memory: Memory, targets: list[str]) -> list[tuple[str, str]]:
    """(source, target) pairs for every target branch, for ``git edda pull``."""
    forks = _Forks(memory)
    pairs: list[tuple[str, str]] = []
    for target in targets:
        for source in merged_into(memory, target, forks=forks):
            pairs.append((source, target))
    return pairs
