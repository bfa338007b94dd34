"""``purge``: make removed payload bytes unrecoverable in the local object store.

Redaction replaces the payload store's snapshot, so the removed blobs become
unreachable at once but stay on disk until git prunes them. ``purge``
destroys exactly those blobs without touching the user's own safety nets
(reflogs of code branches, recently dangling commits):

1. expire reflogs of ``refs/edda/*`` only (they exist only with
   ``core.logAllRefUpdates=always``);
2. ``git repack -A -d``: every reachable object goes into one pack, and
   unreachable packed objects are loosened instead of dropped;
3. for each blob id on the purge list that nothing reachable uses any more
   (checked with ``git rev-list --objects --all --reflog``), delete its loose
   object file; ``git prune-packed`` tidies the rest.

Hosting services may keep copies of pushed objects: a leaked secret must
still be rotated.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from gitmem.storage import layout
from gitmem.storage.ledger import PURGE_LIST
from gitmem.storage.locate import run_git

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


def purge(memory: Memory) -> dict[str, Any]:
    """Run the purge; returns how many blobs were destroyed and kept."""
    location = memory.location
    cwd = location.cwd
    purge_list = location.state_dir / PURGE_LIST
    with memory.ledger.locked():
        try:
            wanted = sorted(set(purge_list.read_text(encoding="ascii").split()))
        except FileNotFoundError:
            wanted = []
        for ref in memory.backend.list_refs(layout.REF_ROOT):
            if (location.common_dir / "logs" / ref).exists():
                run_git(["reflog", "expire", "--expire=now", "--expire-unreachable=now", ref], cwd)
        run_git(["repack", "-A", "-d", "-q"], cwd)
        reachable = set(
            line.split(" ", 1)[0]
            for line in run_git(
                ["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"], cwd
            )
            .decode()
            .splitlines()
        )
        destroyed, kept = [], []
        objects = location.common_dir / "objects"
        for oid in wanted:
            if oid in reachable:
                kept.append(oid)  # identical bytes are still used by another event
                continue
            try:
                os.unlink(objects / oid[:2] / oid[2:])
            except FileNotFoundError:
                pass
            destroyed.append(oid)
        run_git(["prune-packed", "-q"], cwd)
        purge_list.unlink(missing_ok=True)
    return {"destroyed": len(destroyed), "still_referenced": len(kept)}
