"""Where a branch's memory starts: the branch it was created from.

A new git branch starts from the memory of the branch it was created from.
The source is found from what git recorded, most specific first:

1. a rename (``git branch -m old new``): the memory of ``old`` continues;
2. the branch's own reflog, ``branch: Created from <source>`` naming a branch
   (a remote-tracking ``origin/x`` means the memory of ``x``);
3. the branch checked out before, from the post-checkout hook or from this
   worktree's HEAD reflog (``checkout: moving from <source> to <branch>``);
4. code ancestry: of the branches with memory whose code tip is an ancestor of
   the new branch's, the nearest (the trunk wins ties).

Otherwise the branch starts empty. An unborn or orphan branch starts empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from gitmem.branches.gitinfo import HEADS, REMOTES, code_tip, local_branches, reflog
from gitmem.records import layout
from gitmem.storage.backends.base import Backend
from gitmem.storage.locate import RepoLocation

_RENAMED = re.compile(r"^branch: renamed refs/heads/(.+) to refs/heads/(.+)$", re.IGNORECASE)
_CREATED = re.compile(r"^branch: Created from (.+)$")
_MOVED = re.compile(r"^checkout: moving from (.+) to (.+)$")


class StartPlan(NamedTuple):
    """How a branch's memory starts.

    ``kind`` is ``rename`` (continue ``source``'s chain as is), ``fork``
    (a fork commit on top of ``source``'s memory, or recording the code
    commit when ``source`` has none) or ``root`` (a plain new chain).
    """

    kind: str
    source: str | None
    code: str | None
    why: str


def _named_source(start: str, branch: str, backend: Backend) -> str | None:
    """The branch a ``Created from <start>`` names, if it names one."""
    start = start.strip()
    if start.startswith(HEADS):
        start = start[len(HEADS) :]
    if start.startswith(REMOTES):
        return start[len(REMOTES) :].partition("/")[2] or None
    if start == "HEAD" or start.startswith("HEAD"):
        return None
    if start in local_branches(backend):
        return start if start != branch else None
    remote, slash, rest = start.partition("/")
    if slash and backend.read_ref(f"{REMOTES}{remote}/{rest}") is not None:
        return rest
    return None


def plan_start(
    location: RepoLocation,
    backend: Backend,
    branch: str,
    memory_refs: Mapping[str, str],
    *,
    trunk: str | None,
    hint: str | None = None,
    code: str | None = None,
) -> StartPlan:
    """Decide where ``branch``'s memory starts (``memory_refs``: ref -> tip)."""
    entries = reflog(location, HEADS + branch)
    for entry in reversed(entries):
        renamed = _RENAMED.match(entry.subject)
        if renamed and renamed.group(2) == branch:
            old = renamed.group(1)
            if layout.branch_ref(old) in memory_refs:
                return StartPlan("rename", old, code, f"renamed from {old}")
            break
    if code is None:
        code = entries[0].new if entries else code_tip(backend, branch)
        if code is not None and set(code) == {"0"}:
            code = None
    if branch == trunk and layout.branch_ref(branch) not in memory_refs:
        return StartPlan("root", None, code, "the trunk starts its own memory")
    if code is None:
        return StartPlan("fork", None, None, "unborn branch: starts empty")
    for entry in entries:
        created = _CREATED.match(entry.subject)
        if created:
            source = _named_source(created.group(1), branch, backend)
            if source is not None:
                return StartPlan("fork", source, code, f"created from {source}")
            break
    if hint and hint != branch and layout.branch_ref(hint) in memory_refs:
        return StartPlan("fork", hint, code, f"checked out from {hint}")
    for entry in reversed(reflog(location, "HEAD")):
        moved = _MOVED.match(entry.subject)
        if moved and moved.group(2) == branch:
            previous = moved.group(1)
            if previous != branch and layout.branch_ref(previous) in memory_refs:
                return StartPlan("fork", previous, code, f"checked out from {previous}")
            break
    nearest = _nearest_ancestor(backend, branch, code, memory_refs, trunk)
    if nearest is not None:
        return StartPlan("fork", nearest, code, f"nearest branch in code history: {nearest}")
    return StartPlan("fork", None, code, "no branch with memory in its code history")


def _nearest_ancestor(
    backend: Backend, branch: str, code: str, memory_refs: Mapping[str, str], trunk: str | None
) -> str | None:
    candidates: list[tuple[str, str]] = []
    for ref in memory_refs:
        other = layout.branch_of_ref(ref)
        if other is None or other == branch:
            continue
        tip = code_tip(backend, other)
        if tip is not None and backend.has_object(tip) and backend.is_ancestor(tip, code):
            candidates.append((other, tip))
    if not candidates:
        return None
    candidates.sort(key=lambda c: (c[0] != trunk, c[0]))
    best_name, best_tip = candidates[0]
    for name, tip in candidates[1:]:
        if tip != best_tip and backend.is_ancestor(best_tip, tip):
            best_name, best_tip = name, tip
    return best_name
