"""Choose a backend for a repository."""

from __future__ import annotations

import os

from gitmem.errors import UsageError
from gitmem.storage.backends.base import Backend
from gitmem.storage.locate import RepoLocation

BACKENDS = ("auto", "libgit2", "git-cli")


def open_backend(location: RepoLocation, name: str | None = None, *, fsync: bool = True) -> Backend:
    """Open ``location`` with backend ``name`` (default: ``$GITMEM_BACKEND`` or auto).

    ``auto`` uses libgit2 unless the repository stores refs as reftable,
    which libgit2 cannot read; then the git CLI.
    """
    choice = name or os.environ.get("GITMEM_BACKEND") or "auto"
    if choice not in BACKENDS:
        raise UsageError(f"unknown backend {choice!r}", f"use one of: {', '.join(BACKENDS)}")
    if choice == "git-cli" or (choice == "auto" and location.uses_reftable):
        from gitmem.storage.backends.gitcli import GitCliBackend

        return GitCliBackend(location, fsync=fsync)
    from gitmem.storage.backends.libgit2 import Libgit2Backend

    return Libgit2Backend(location, fsync=fsync)
