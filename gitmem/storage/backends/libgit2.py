"""The pygit2 (libgit2) backend: in-process and fast."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gitmem.errors import DependencyError, GitError
from gitmem.storage.backends.base import Builder, CommitInfo, RefBusy, TreeChange, TreeEntry
from gitmem.storage.locate import RepoLocation

# A ref lock older than this, found while we hold gitmem's writer lock, was
# left by a killed process (every gitmem writer holds that lock while it
# touches refs/edda, and git itself holds ref locks for milliseconds).
STALE_LOCK_SECONDS = 2.0

# libgit2's defaults, tuned for gitmem's reads at a million events:
# * it caches parsed commits and trees of at most 4 KB: a payload-store fan-out
#   directory (``p/<2 hex>/``, 234 KB at a million events) was parsed again
#   for every body read, 3.8 ms each (an hour to read every body); cached,
#   10 µs. Trees up to 8 MB are cached, within 128 MB in all;
# * it maps pack files in windows of 1 GB up to 8 GB, all counted in the
#   process's memory: an index build touched ~400 MB of a 600 MB pack. Windows
#   of 32 MB up to 128 MB are mapped again when needed (their pages stay in
#   the page cache).
MAPPED_LIMIT = 128 * 2**20
WINDOW_SIZE = 32 * 2**20
CACHE_SIZE = 128 * 2**20
TREE_CACHE_LIMIT = 8 * 2**20

# libgit2's object cache is process-wide: streaming passes (any thread, any
# repository) turn it off while at least one of them runs.
_streaming = 0
_streaming_lock = threading.Lock()


def _pygit2() -> Any:
    try:
        import pygit2
    except ImportError as exc:  # pragma: no cover - a required dependency
        raise DependencyError(
            "pygit2 is not installed", "reinstall gitmem: pip install --force-reinstall git-edda"
        ) from exc
    return pygit2


class Libgit2Backend:
    """Backend on a pygit2 Repository."""

    name = "libgit2"

    def __init__(self, location: RepoLocation, *, fsync: bool = True) -> None:
        pygit2 = _pygit2()
        self._pg = pygit2
        self.location = location
        pygit2.settings.enable_fsync_gitdir(fsync)
        if pygit2.settings.mwindow_mapped_limit > MAPPED_LIMIT:  # process-wide; never raise it
            pygit2.settings.mwindow_size = WINDOW_SIZE
            pygit2.settings.mwindow_mapped_limit = MAPPED_LIMIT
            pygit2.settings.cache_max_size(CACHE_SIZE)
            pygit2.settings.cache_object_limit(pygit2.GIT_OBJECT_TREE, TREE_CACHE_LIMIT)
        try:
            self.repo = pygit2.Repository(str(location.git_dir))
        except pygit2.GitError as exc:
            raise GitError(f"libgit2 cannot open {location.git_dir}: {exc}") from exc

    def close(self) -> None:
        self.repo.free()

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """A pass that reads each object once (an export walks every commit
        and reads every body once): libgit2's object cache, which would keep
        what it read up to its limit for nothing, is off until the pass ends
        (at a million events an export held ~250 MB of cached commits and
        trees). Lookups by path are then slower (a payload-store directory
        is parsed again for each), so a pass that makes many uses ids it
        listed instead."""
        global _streaming
        pygit2 = self._pg
        with _streaming_lock:
            _streaming += 1
            if _streaming == 1:
                pygit2.settings.enable_caching(False)
        try:
            yield
        finally:
            with _streaming_lock:
                _streaming -= 1
                if _streaming == 0:
                    pygit2.settings.enable_caching(True)

    # refs -------------------------------------------------------------------
    def read_ref(self, name: str) -> str | None:
        ref = self.repo.references.get(name)
        if ref is None:
            return None
        return str(ref.resolve().target)

    def list_refs(self, prefix: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in self.repo.listall_references():
            if name.startswith(prefix):
                target = self.read_ref(name)
                if target is not None:
                    out[name] = target
        return dict(sorted(out.items()))

    def try_update(self, refs: Sequence[str], build: Builder) -> dict[str, str | None]:
        pygit2 = self._pg
        # Build first, lock second: objects are written while no ref lock is
        # held, so a process killed while writing leaves no stale *.lock.
        # Under the lock the refs must still be what build() saw (CAS).
        current = {ref: self.read_ref(ref) for ref in refs}
        new = dict(build(current))
        for ref in new:
            if ref not in current:
                raise ValueError(f"build() returned unlocked ref {ref}")
        try:
            with self.repo.transaction() as txn:
                for ref in refs:
                    self._lock(txn, ref)
                for ref in refs:
                    if self.read_ref(ref) != current[ref]:
                        raise RefBusy(f"{ref} moved")
                for ref, target in new.items():
                    if target == current[ref]:
                        continue
                    if target is None:
                        txn.remove(ref)
                    else:
                        txn.set_target(ref, target, message="gitmem")
        except pygit2.GitError as exc:
            if "lock" in str(exc).lower():
                raise RefBusy(str(exc)) from exc
            raise GitError(f"updating {', '.join(refs)} failed: {exc}") from exc
        return {ref: new.get(ref, current[ref]) for ref in refs}

    def _lock(self, txn: Any, ref: str) -> None:
        try:
            txn.lock_ref(ref)
        except self._pg.GitError:
            lock = self.location.common_dir / (ref + ".lock")
            try:
                if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
                    os.unlink(lock)
            except OSError:
                pass
            raise

    # objects ----------------------------------------------------------------
    def _get(self, oid: str, kind: str) -> Any:
        try:
            obj = self.repo[oid]
        except (KeyError, ValueError) as exc:
            raise GitError(f"object {oid} is missing") from exc
        except self._pg.GitError as exc:
            raise GitError(f"object {oid} is unreadable: {exc}") from exc
        if obj.type_str != kind:
            raise GitError(f"object {oid} is a {obj.type_str}, expected a {kind}")
        return obj

    def read_blob(self, oid: str) -> bytes:
        data: bytes = self._get(oid, "blob").data
        return data

    def read_tree(self, oid: str) -> list[TreeEntry]:
        return [TreeEntry(e.name, e.filemode, str(e.id)) for e in self._get(oid, "tree")]

    def read_tree_bytes(self, oid: str) -> bytes:
        # The object database, not ``repo[oid]``: that parses every entry
        # first, which doubles the cost of a 3,900-entry fan-out directory.
        try:
            kind, data = self.repo.odb.read(oid)
        except (KeyError, ValueError) as exc:
            raise GitError(f"object {oid} is missing") from exc
        except self._pg.GitError as exc:
            raise GitError(f"object {oid} is unreadable: {exc}") from exc
        if kind != self._pg.enums.ObjectType.TREE:
            raise GitError(f"object {oid} is not a tree")
        return bytes(data)

    def read_commit(self, oid: str) -> CommitInfo:
        commit = self._get(oid, "commit")
        return CommitInfo(
            str(commit.tree_id),
            tuple(str(p) for p in commit.parent_ids),
            commit.message,
            commit.commit_time,
        )

    def read_path(self, tree: str, path: str) -> str | None:
        root = self._get(tree, "tree")  # a missing or damaged tree is an error, not an absent path
        # Not ``tree[path]``: pygit2 (1.21) keeps a reference to every key
        # given to Tree.__getitem__, and a million body lookups kept ~100 MB
        # of path strings alive. revparse holds none (it reads the object
        # found, which is cheap for a body).
        try:
            found = self.repo.revparse_single(f"{tree}:{path}")
        except (KeyError, self._pg.InvalidSpecError):  # NotFoundError is a KeyError
            return None
        except self._pg.GitError:
            # the object is there but unreadable: its id, for the caller's error
            try:
                return str(root[path].id)
            except KeyError:
                return None
            except self._pg.GitError as exc:  # a directory on the way is unreadable
                raise GitError(f"{path} in tree {tree} is unreadable: {exc}") from exc
        return str(found.id)

    def has_object(self, oid: str) -> bool:
        return oid in self.repo

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return bool(self.repo.descendant_of(descendant, ancestor))

    def commits_between(self, include: Sequence[str], exclude: Sequence[str]) -> list[str]:
        pygit2 = _pygit2()
        if not include:
            return []
        known = [oid for oid in exclude if oid in self.repo]
        if len(known) > 1:  # one hidden tip (a chain's last one) walks fast
            found = _rev_list(self.location, include, known)
            if found is not None:
                return found
        walker = self.repo.walk(include[0], pygit2.enums.SortMode.NONE)
        for oid in include[1:]:
            walker.push(oid)
        for oid in known:
            walker.hide(oid)
        return [str(commit.id) for commit in walker]

    def diff_trees(self, old: str | None, new: str | None) -> list[TreeChange]:
        if old == new:
            return []
        pygit2 = self._pg
        flags = pygit2.enums.DiffOption.SKIP_BINARY_CHECK
        if old is None:
            assert new is not None  # old == new returned above
            diff = self._get(new, "tree").diff_to_tree(flags=flags, swap=True)
        elif new is None:
            diff = self._get(old, "tree").diff_to_tree(flags=flags)
        else:
            diff = self._get(old, "tree").diff_to_tree(self._get(new, "tree"), flags=flags)
        changes = []
        for delta in diff.deltas:
            status = delta.status_char()
            before = None if status == "A" else str(delta.old_file.id)
            after = None if status == "D" else str(delta.new_file.id)
            side = delta.old_file if after is None else delta.new_file
            changes.append(TreeChange(delta.new_file.path, before, after, int(side.mode)))
        return changes


def _rev_list(
    location: RepoLocation, include: Sequence[str], exclude: Sequence[str]
) -> list[str] | None:
    """``git rev-list INCLUDE --not EXCLUDE``, or None when git cannot run it
    (the walker then does). libgit2's walker marks the history of hidden tips
    on other chains slowly: 1 s for one new commit against 21 hidden tips
    over 100,000 commits, where git answers in 5 ms."""
    import subprocess

    # ``^OID``, not ``--not``: git before 2.42 refuses options on --stdin
    # ("options not supported in --stdin mode"), and the walker took over unseen
    revs = "".join(f"{oid}\n" for oid in include) + "".join(f"^{oid}\n" for oid in exclude)
    try:
        proc = subprocess.run(
            ["git", "--git-dir", str(location.git_dir), "rev-list", "--stdin"],
            input=revs.encode(),
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().split()
