"""The "current branch" default shared by every API that takes a branch.

``branch=None`` means the detached HEAD's memory, so "whichever branch is
current" needs a value of its own: :data:`CURRENT_BRANCH`.
"""

from __future__ import annotations


class CurrentBranch:
    """The type of :data:`CURRENT_BRANCH` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CURRENT_BRANCH"


CURRENT_BRANCH = CurrentBranch()
"""Default of every ``branch`` argument: the branch checked out (or being
rebased or bisected) when the call runs."""

BranchArg = str | None | CurrentBranch
"""A ``branch`` argument: a branch name, None (detached HEAD) or CURRENT_BRANCH."""
