"""``purge``: make removed payload bytes unrecoverable in the local object store.

Redaction replaces the payload store's snapshot, so the removed blobs leave
the store at once but stay on disk until git prunes them. Their ids are on the
purge list (``<common dir>/edda/purge-list``), appended by every step that
removes payloads: a redaction, and a sync merge that drops payloads a
redaction names, including ones that only the fetched remote store still had.

``purge`` destroys those blobs without touching the user's own safety nets
(reflogs of code branches, recently dangling commits):

1. rewrite each remote mirror's payload snapshot
   (``refs/edda-remotes/<remote>/payloads``) without the listed blobs. The
   mirror is a cache of what the remote held at the last fetch; nothing
   trusts it beyond the sync round that fetched it (spec/sync.md, "Redaction
   and the mirror"), so rewriting it locally loses nothing;
2. expire the reflogs of ``refs/edda/*`` and ``refs/edda-remotes/*`` only
   (they exist with ``core.logAllRefUpdates=always``);
3. ``git repack -A -d``: every reachable object goes into one pack, and
   unreachable packed objects are loosened instead of dropped;
4. delete the loose object of each listed blob that nothing reaches any more
   (``git rev-list --objects --all --reflog --indexed-objects``), then
   ``git prune-packed``;
5. keep on the list every id git still has, for whatever reason (another
   event with identical bytes, a ref of the user's reaching an old snapshot,
   an alternate object store), and drop the others: an id leaves the list
   only when its bytes are gone, so no later purge can forget them.

It holds the mirror lock throughout, so no sync points a mirror at a blob
while it is being deleted, and the writer lock, so nothing appends to the
list meanwhile. Hosting services may keep copies of pushed objects: a leaked
secret must still be rotated.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.records import layout
from gitmem.storage import files
from gitmem.storage.eventchain import check_format
from gitmem.storage.locate import RepoLocation, run_git
from gitmem.storage.lock import mirror_lock
from gitmem.storage.objects import ObjectBatch
from gitmem.storage.purgelist import PURGE_LIST, read_purge_list

if TYPE_CHECKING:
    from gitmem.memory.api import Memory

# A purge-list entry names an object file to delete: anything but a plain
_REFLOG_BATCH = 200  # refs per 'git reflog expire' call


@dataclass(frozen=True)
class PurgeReport:
    """What a purge (``git edda gc``) did."""

    destroyed: int  # objects that were on disk and are gone now
    still_referenced: int  # listed objects something still reaches
    pending: int  # ids left on the purge list: every listed object git still has
    mirrors_rewritten: int  # remote mirror snapshots rewritten

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def purge(memory: Memory) -> PurgeReport:
    """Destroy the bytes of removed payloads (see the module docstring)."""
    location = memory.location
    cwd = location.cwd
    state_dir = location.state_dir
    with mirror_lock(state_dir), memory.ledger.locked():
        present = _present(cwd, read_purge_list(state_dir))  # never-present ids just leave
        rewritten = _strip_mirrors(memory, present)
        _remove_scratch_repositories(location)
        _expire_reflogs(memory)
        run_git(["repack", "-A", "-d", "-q"], cwd)
        reachable = set(
            line.split(" ", 1)[0]
            for line in run_git(
                ["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"], cwd
            )
            .decode()
            .splitlines()
        )
        objects = location.common_dir / "objects"
        for oid in sorted(present - reachable):
            try:
                os.unlink(objects / oid[:2] / oid[2:])
            except FileNotFoundError:
                pass  # packed in a pack git keeps (.keep, alternates): checked below
        run_git(["prune-packed", "-q"], cwd)
        left = _present(cwd, present)
        _write_purge_list(state_dir, left, fsync=memory.ledger.fsync)
    return PurgeReport(
        destroyed=len(present - left),
        still_referenced=len(left & reachable),
        pending=len(left),
        mirrors_rewritten=rewritten,
    )


def _present(cwd: str | os.PathLike[str], oids: Iterable[str]) -> set[str]:
    """The ids among ``oids`` that the object store (alternates included) has."""
    wanted = sorted(oids)
    if not wanted:
        return set()
    out = run_git(["cat-file", "--batch-check"], cwd, "".join(f"{o}\n" for o in wanted).encode())
    found = set()
    for line in out.decode("ascii", "replace").splitlines():
        oid, _, rest = line.partition(" ")
        if rest and rest != "missing":
            found.add(oid)
    return found


def _write_purge_list(state_dir: Path, oids: set[str], *, fsync: bool) -> None:
    path = state_dir / PURGE_LIST
    if not oids:
        path.unlink(missing_ok=True)
        return
    data = "".join(f"{oid}\n" for oid in sorted(oids)).encode("ascii")
    files.write_atomic(str(path), data, fsync=fsync)


def _mirrored(ref: str) -> str:
    """The remote's ref that mirror ref ``ref`` (``refs/edda-remotes/<key>/<rest>``,
    the remote key one component) copies, ``refs/edda/<rest>``; "" for none."""
    key, sep, rest = ref[len(layout.MIRROR_ROOT) :].partition("/")
    return layout.REF_ROOT + rest if key and sep else ""


def _is_payload_mirror(ref: str) -> bool:
    """A mirrored store commit or partition (or a format-1 store)."""
    remote = _mirrored(ref)
    return remote == layout.PAYLOAD_REF or layout.is_partition_ref(remote)


def _is_base_mirror(ref: str) -> bool:
    """A mirrored ``refs/edda/payloads-base`` or ``refs/edda/store-base/<partition>``."""
    remote = _mirrored(ref)
    return remote == layout.PAYLOAD_BASE_REF or remote.startswith(layout.PARTITION_BASE_PREFIX)


def _store_blobs(memory: Memory, root: str) -> Iterable[tuple[str, str]]:
    """(path, blob) of every payload and attachment in a payload-store tree.

    Only the layout gitmem writes (``p/<fan>/<id>``, ``b/<fan>/<sha>``) is
    walked: a fetched tree is the remote's, and anything it holds elsewhere
    stays reachable, so its ids stay on the purge list and are reported.
    """
    backend = memory.backend
    for top in ("p", "b"):
        sub = backend.read_path(root, top)
        if sub is None:
            continue
        for fan in backend.read_tree(sub):
            if fan.mode != layout.MODE_TREE:
                continue
            for entry in backend.read_tree(fan.oid):
                if entry.mode != layout.MODE_TREE:
                    yield f"{top}/{fan.name}/{entry.name}", entry.oid


def _live_blobs(memory: Memory) -> set[str]:
    """Every blob the local payload store uses now (bytes still needed)."""
    roots = memory.ledger.payload_roots()
    if roots is None:
        return set()
    return {oid for tree in roots.trees.values() for _, oid in _store_blobs(memory, tree)}


def _strip_mirrors(memory: Memory, listed: set[str]) -> int:
    """Rewrite each mirrored payload snapshot (a partition, or a remote's
    format-1 store) without the listed blobs the local store does not use,
    then each mirrored store commit to name the rewritten partitions;
    return how many mirror refs changed.

    The sync round that fetches a mirror is also the one that pushes against
    it, with a lease naming the value it fetched (not the ref's value at push
    time), and it holds the mirror lock that this runs under. A mirror
    rewritten here is therefore next read only after a fresh fetch has
    replaced it, and the compare-and-swap on the remote is unaffected.
    """
    from gitmem.storage.backends.base import EMPTY_TREE_MARK, edit_tree, transact

    if not listed:
        return 0
    backend = memory.backend
    refs = backend.list_refs(layout.MIRROR_ROOT)
    # A mirrored base keeps the snapshot before the remote's current one
    # reachable; it only helps the next transfer, so it goes.
    bases = {r: tip for r, tip in refs.items() if _is_base_mirror(r)}
    if bases:
        run_git(
            ["update-ref", "--stdin"],
            memory.location.cwd,
            "".join(f"delete {r} {tip}\n" for r, tip in bases.items()).encode(),
        )
    snapshots = sorted(r for r in refs if _is_payload_mirror(r))
    if not snapshots:
        return 0
    live: set[str] | None = None
    objects_dir = os.path.join(memory.location.common_path, "objects")
    replaced: dict[str, str] = {}  # partition commit -> its rewrite
    rewritten = 0

    def write(batch: ObjectBatch) -> None:
        skip = [oid for oid in batch.objects if backend.has_object(oid)]
        batch.write(objects_dir, fsync=memory.ledger.fsync, skip=skip)

    def strip(current: Mapping[str, str | None], ref: str) -> dict[str, str | None]:
        nonlocal live
        tip = current[ref]
        if tip is None:
            return {ref: None}
        info = backend.read_commit(tip)
        check_format(info.message, f"the mirrored payload store {ref}")
        if any(e.mode == layout.MODE_GITLINK for e in backend.read_tree(info.tree)):
            return {ref: tip}  # a store commit: renamed below, once its partitions are
        drop = [(path, oid) for path, oid in _store_blobs(memory, info.tree) if oid in listed]
        if drop and live is None:
            live = _live_blobs(memory)
        changes: dict[str, str | None] = {
            path: None for path, oid in drop if oid not in (live or set())
        }
        if not changes:
            return {ref: tip}
        batch = ObjectBatch()
        tree = edit_tree(backend, batch, info.tree, changes)
        tree = batch.tree([]) if tree == EMPTY_TREE_MARK else tree
        new = batch.commit(tree, [], info.message, 0)
        write(batch)
        replaced[tip] = new
        return {ref: new}

    def rename(current: Mapping[str, str | None], ref: str) -> dict[str, str | None]:
        tip = current[ref]
        if tip is None:
            return {ref: None}
        info = backend.read_commit(tip)
        entries = backend.read_tree(info.tree)
        if not any(e.oid in replaced for e in entries if e.mode == layout.MODE_GITLINK):
            return {ref: tip}
        batch = ObjectBatch()
        tree = batch.tree([(e.name, e.mode, replaced.get(e.oid, e.oid)) for e in entries])
        new = batch.commit(tree, list(info.parents), info.message, 0)
        write(batch)
        return {ref: new}

    for step in (strip, rename):
        for ref in snapshots:
            before = backend.read_ref(ref)
            try:
                after = transact(backend, [ref], functools.partial(step, ref=ref))[ref]
            except GitmemError:
                # Not a readable store of a format we know (it is the remote's
                # data): leave it. What it holds stays reachable, stays listed.
                continue
            rewritten += after != before
    return rewritten


def _remove_scratch_repositories(location: RepoLocation) -> None:
    """Delete scratch repositories a killed shallow repair left behind: they
    hold a copy of the remote's memory, payloads included. The mirror lock
    guarantees that no repair is using one now."""
    scratch_root = location.state_dir / "tmp"
    try:
        names = os.listdir(scratch_root)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith("unshallow-"):
            shutil.rmtree(scratch_root / name, ignore_errors=True)


def _expire_reflogs(memory: Memory) -> None:
    """Expire the reflogs of memory refs and mirror refs, and of no other ref."""
    location = memory.location
    backend = memory.backend
    refs = [*backend.list_refs(layout.REF_ROOT), *backend.list_refs(layout.MIRROR_ROOT)]
    if (location.common_dir / "reftable").is_dir():
        # reftable keeps reflogs inside its tables; ask git which refs have one
        logged = [r for r in refs if _git_ok(["reflog", "exists", r], location.cwd)]
    else:
        logged = [r for r in refs if (location.common_dir / "logs" / r).exists()]
    # 'git reflog expire REF' fails on a ref without a reflog, hence the filter
    for start in range(0, len(logged), _REFLOG_BATCH):
        batch = logged[start : start + _REFLOG_BATCH]
        run_git(
            ["reflog", "expire", "--expire=now", "--expire-unreachable=now", *batch], location.cwd
        )


def _git_ok(args: list[str], cwd: str | os.PathLike[str]) -> bool:
    try:
        run_git(args, cwd)
    except GitmemError:
        return False
    return True
