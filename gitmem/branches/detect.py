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

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.branches.gitinfo import code_tip
from gitmem.records import layout
from gitmem.storage import heads
from gitmem.storage.files import write_atomic

if TYPE_CHECKING:
    from gitmem.branches.store import ChainStore


FORKS_RECORD = "forks.json"


class _Forks:
    """Fork records by (tip, branch), cached for one detection run and, in
    ``<common dir>/edda/forks.json``, from one run to the next.

    Finding a branch's fork walks its chain down to the fork commit, and a
    chain that has none (the trunk's) all the way: at a million events, a
    second per pull. The record keeps each branch's last answer with the tip
    it was found from. The same tip gives the same answer; a chain that
    had no fork commit and only moved forward has one only if the commits
    added since bring one (a walk can only reach a fork commit below the old
    tip by passing through the old tip's history, which held none), so only
    those are walked. A record is a cache: deleting it costs one walk per
    branch.
    """

    def __init__(self, memory: ChainStore) -> None:
        self.memory = memory
        self.cache: dict[tuple[str, str], tuple[str | None, str | None] | None] = {}
        self.path = memory.location.state_dir / FORKS_RECORD
        self.record: dict[str, Any] = _read_json(self.path)
        self.learned = False
        # what the walks of this run read: the branches' walks share the
        # trunk's history (a first detection at a million events read
        # 201,358 commits for 100,555)
        self.walked: heads.ForkWalkMemo = {}

    def code(self, tip: str, branch: str) -> str | None:
        found = self.fork(tip, branch)
        return None if found is None else found[1]

    def fork(self, tip: str, branch: str) -> tuple[str | None, str | None] | None:
        key = (tip, branch)
        if key not in self.cache:
            self.cache[key] = self._find(tip, branch)
        return self.cache[key]

    def _find(self, tip: str, branch: str) -> tuple[str | None, str | None] | None:
        backend = self.memory.backend
        known = self.record.get(branch)
        if isinstance(known, dict) and isinstance(known.get("tip"), str):
            fork = known.get("fork")
            answer = (
                (fork[0], fork[1])
                if isinstance(fork, list)
                and len(fork) == 2
                and all(x is None or isinstance(x, str) for x in fork)
                else None
            )
            if known["tip"] == tip:
                return answer
            old = known["tip"]
            if (
                answer is None
                and "fork" in known
                and backend.has_object(old)
                and backend.is_ancestor(old, tip)
            ):
                added = set(backend.commits_between([tip], [old]))
                found = heads.find_fork(backend, tip, branch, within=added, memo=self.walked)
                self._remember(branch, tip, found)
                return found
        found = heads.find_fork(backend, tip, branch, memo=self.walked)
        self._remember(branch, tip, found)
        return found

    def _remember(self, branch: str, tip: str, found: tuple[str | None, str | None] | None) -> None:
        self.record[branch] = {"tip": tip, "fork": list(found) if found is not None else None}
        self.learned = True

    def save(self) -> None:
        """Write the record (a cache: a failed write costs walks next time)."""
        if not self.learned:
            return
        _write_json(self.path, self.record)
        self.learned = False


def fork_points(
    store: ChainStore, chains: Iterable[tuple[str, str]]
) -> dict[str, tuple[str | None, str | None] | None]:
    """Each (branch, tip)'s newest fork: (source, code), or None; through the
    fork record, so a chain is walked only where it grew since it was last
    asked about (``git edda branches`` walked every chain, 100,000 commits
    at a million events)."""
    forks = _Forks(store)
    found = {branch: forks.fork(tip, branch) for branch, tip in chains}
    forks.save()
    return found


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        write_atomic(str(path), json.dumps(data, sort_keys=True).encode(), fsync=False)
    except OSError:
        pass


def _ancestor(memory: ChainStore, a: str | None, b: str | None) -> bool:
    backend = memory.backend
    return bool(a and b and backend.has_object(a) and backend.has_object(b)) and (
        backend.is_ancestor(a, b)  # type: ignore[arg-type]
    )


def merged_into(
    memory: ChainStore,
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
        # Every test below must pass; they run cheapest first. Whether one
        # memory chain contains another is a walk of both histories since they
        # parted (libgit2 has no generation numbers), so it comes last, unless
        # the alternative is reading every event of the source for its code.
        contained = target_tip is not None and _Contained(backend, tip, target_tip)
        source_code = code_tip(backend, source)
        if source_code is None:
            if contained and contained():
                continue
            source_code = last_linked_commit(memory, source)
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
        if contained and contained():
            continue  # its memory is already part of the target's
        found.append(source)
    return found


class _Contained:
    """Whether chain tip ``tip`` is an ancestor of ``target``, asked at most once."""

    def __init__(self, backend: Any, tip: str, target: str) -> None:
        self.backend, self.tip, self.target = backend, tip, target
        self.answer: bool | None = None

    def __call__(self) -> bool:
        if self.answer is None:
            self.answer = bool(self.backend.is_ancestor(self.tip, self.target))
        return self.answer


def code_merges(memory: ChainStore, targets: list[str]) -> list[tuple[str, str]]:
    """(source, target) pairs for every target branch, for ``git edda pull``."""
    forks = _Forks(memory)
    pairs: list[tuple[str, str]] = []
    for target in targets:
        for source in merged_into(memory, target, forks=forks):
            pairs.append((source, target))
    forks.save()
    return pairs


def last_linked_commit(store: ChainStore, branch: str) -> str | None:
    """The newest code commit linked in ``branch``'s own memory."""
    newest: tuple[int, str] | None = None
    links = [e for e in store.events(branch=branch, trunk="none") if e.type == "commit_link"]
    rewrites = commit_rewrites(store) if links else {}
    for event in links:
        sha = event.field("sha")
        if isinstance(sha, str) and (newest is None or event.time > newest[0]):
            newest = (event.time, resolve_commit(store, sha, rewrites))
    return None if newest is None else newest[1]


def commit_rewrites(store: ChainStore) -> dict[str, str]:
    """old code sha -> newest sha it was rewritten to (amend, rebase)."""
    mapping: dict[str, str] = {}
    for event in store.events(all_branches=True):
        if event.type != "commit_rewrite":
            continue
        for pair in event.field("map", []) or []:
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair):
                mapping[pair[0]] = pair[1]
    return mapping


def resolve_commit(store: ChainStore, sha: str, rewrites: dict[str, str] | None = None) -> str:
    """Follow amend/rebase rewrites from ``sha`` to the commit that replaced it."""
    mapping = commit_rewrites(store) if rewrites is None else rewrites
    seen = {sha}
    while sha in mapping and mapping[sha] not in seen:
        sha = mapping[sha]
        seen.add(sha)
    return sha
