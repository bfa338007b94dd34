"""What gitmem needs from git: reading objects and moving refs.

New objects are not written through a backend: a transaction serialises them
itself and writes one packfile (:mod:`gitmem.storage.objects`).

Two implementations: :mod:`.libgit2` (pygit2, in-process, fast) and
:mod:`.gitcli` (the git command, for repositories pygit2 cannot open, such as
reftable ones). Everything above this layer is backend-agnostic.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from gitmem.errors import ConflictError
from gitmem.records.layout import MODE_BLOB, MODE_TREE
from gitmem.storage.locate import RepoLocation


class TreeEntry(NamedTuple):
    name: str
    mode: int
    oid: str


class CommitInfo(NamedTuple):
    tree: str
    parents: tuple[str, ...]
    message: str
    time: int  # committer time, seconds


class TreeChange(NamedTuple):
    path: str
    old: str | None  # blob id, None when absent
    new: str | None
    mode: int  # the new side's file mode (the old side's when deleted)


class RefBusy(Exception):
    """A ref lock is held by someone else, or the ref moved under us: retry."""


# build(current targets) -> new targets (None deletes the ref)
Builder = Callable[[Mapping[str, str | None]], Mapping[str, str | None]]


class Backend(Protocol):
    """Object and ref access for one repository."""

    location: RepoLocation
    name: str

    def read_ref(self, name: str) -> str | None: ...
    def list_refs(self, prefix: str) -> dict[str, str]: ...
    def read_blob(self, oid: str) -> bytes: ...
    def read_tree(self, oid: str) -> list[TreeEntry]: ...
    def read_tree_bytes(self, oid: str) -> bytes:
        """A tree object's content as git stores it (its entries, binary),
        read and hash-checked like any object: for comparing large trees
        without making an entry of each."""
        ...

    def read_commit(self, oid: str) -> CommitInfo: ...
    def read_path(self, tree: str, path: str) -> str | None: ...
    def has_object(self, oid: str) -> bool: ...
    def is_ancestor(self, ancestor: str, descendant: str) -> bool: ...
    def commits_between(self, include: Sequence[str], exclude: Sequence[str]) -> list[str]:
        """Commits reachable from ``include`` but not from ``exclude`` (any order)."""
        ...

    def diff_trees(self, old: str | None, new: str | None) -> list[TreeChange]:
        """Every file that differs between two trees (None: the empty tree),
        recursively: (path, blob in ``old`` or None, blob in ``new`` or None, mode).

        Done by git's own tree comparison, which skips identical subtrees: the
        payload store compares two snapshots in time proportional to what
        changed between them, not to their size. A path that is a file on one
        side and a directory on the other shows as the file removed (or
        added) and the directory's files added (or removed)."""
        ...

    def try_update(self, refs: Sequence[str], build: Builder) -> dict[str, str | None]: ...
    def streaming(self) -> AbstractContextManager[None]:
        """Within it, objects are read for a pass that reads each once: the
        backend keeps none of them cached for later."""
        ...

    def close(self) -> None: ...


def transact(
    backend: Backend, refs: Sequence[str], build: Builder, *, attempts: int = 200
) -> dict[str, str | None]:
    """Atomically move ``refs`` to what ``build`` derives from their current targets.

    ``build`` may be called several times (it must only write objects, which is
    idempotent). Contention is retried with jittered exponential backoff; only
    errors of ``build`` itself propagate at once. Never forces an update: a ref
    is only moved from the value ``build`` saw.
    """
    delay = 0.0005
    for _ in range(attempts):
        try:
            return backend.try_update(sorted(set(refs)), build)
        except RefBusy:
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.02)
    raise ConflictError(
        f"could not update {', '.join(refs)}: the refs stayed locked or kept moving",
        "another process may be stuck holding a lock; retry, or check for stale *.lock files",
    )


class TreeWriter(Protocol):
    def tree(self, entries: Iterable[tuple[str, int, str]]) -> str: ...


def edit_tree(
    backend: Backend, writer: TreeWriter, root: str | None, changes: Mapping[str, str | None]
) -> str:
    """Apply ``path -> blob oid`` (None deletes) to the tree ``root`` and return the new tree.

    Reads existing trees from ``backend``, writes new ones through ``writer``.
    Only the subtrees on changed paths are rewritten. Empty subtrees vanish.
    """
    entries: dict[str, TreeEntry] = {}
    if root is not None:
        entries = {e.name: e for e in backend.read_tree(root)}
    direct: dict[str, str | None] = {}
    nested: dict[str, dict[str, str | None]] = {}
    for path, oid in changes.items():
        head, sep, rest = path.partition("/")
        if sep:
            nested.setdefault(head, {})[rest] = oid
        else:
            direct[head] = oid
    for name, oid in direct.items():
        if oid is None:
            entries.pop(name, None)
        else:
            entries[name] = TreeEntry(name, MODE_BLOB, oid)
    for name, sub_changes in nested.items():
        old = entries.get(name)
        old_tree = old.oid if old is not None and old.mode == MODE_TREE else None
        new_tree = edit_tree(backend, writer, old_tree, sub_changes)
        if new_tree == EMPTY_TREE_MARK:
            entries.pop(name, None)
        else:
            entries[name] = TreeEntry(name, MODE_TREE, new_tree)
    if not entries:
        return EMPTY_TREE_MARK
    return writer.tree(entries.values())


# edit_tree's private answer for "no entries left"; callers writing a root
# tree turn it into a real empty tree with writer.tree([]).
EMPTY_TREE_MARK = ""
