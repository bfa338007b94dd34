"""What branch operations need from a store of memory chains (the store,
:class:`gitmem.memory.api.Memory`, satisfies it without importing this layer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from gitmem.records.brancharg import BranchArg

if TYPE_CHECKING:
    from gitmem.branches.fork import StartPlan
    from gitmem.storage.backends.base import Backend
    from gitmem.storage.gitconfig import Config
    from gitmem.storage.ledger import Ledger
    from gitmem.storage.locate import RepoLocation


class ChainStore(Protocol):
    """What branch operations need from a store of memory chains."""

    location: RepoLocation
    config: Config
    backend: Backend
    ledger: Ledger

    @property
    def branch(self) -> str | None: ...

    @property
    def trunk(self) -> str | None: ...

    def flush(self) -> Any: ...

    def append(
        self,
        event_type: str,
        body: dict[str, Any],
        *,
        session: str | None = ...,
        agent: str | None = ...,
        capsule: str | None = ...,
        branch: BranchArg = ...,
    ) -> Any: ...

    def events(
        self,
        where: Any = ...,
        *,
        branch: BranchArg = ...,
        all_branches: bool = ...,
        limit: int | None = ...,
        trunk: str | None = ...,
    ) -> Sequence[Any]: ...

    def plan(
        self,
        branch: str,
        hint: str | None = None,
        code: str | None = None,
        tips: dict[str, str] | None = None,
    ) -> StartPlan: ...

    def chain_size(self, ref: str) -> int: ...
