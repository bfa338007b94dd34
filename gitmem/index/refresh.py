"""Keeping the sidecar indexes current.

The manifest records the memory tips the index reflects. A refresh compares
them with the current tips:

* equal: nothing to do (the check reads refs with the standard library);
* every indexed tip an ancestor of its current tip: walk only the new commits
  and add their events (``incremental``);
* anything else (a chain rewound, a ref deleted, a missing, corrupt or
  foreign-version sidecar, ``--rebuild``): build a new generation directory
  from scratch and switch the manifest to it (``full``).

Writes go in an order that makes a crash at any point harmless: full text,
vectors, tables, then the manifest (renamed into place). Work the manifest
does not yet record is redone next time and deduplicated by event id.
One process builds at a time (an ``flock`` on ``index/lock``,
:mod:`gitmem.sidecar.lock`); readers never wait for a build unless there is
no previous version to read.

A redaction removes its target's text from every index. Tantivy and usearch
only mark deleted entries and keep their bytes until a merge, so the full-text
and vector indexes are rebuilt without the target (the bytes are gone when
this returns), and the embedding cache drops the target's text digest.

The manifest records a checksum of every file of its generation and one of
itself (:mod:`gitmem.sidecar.manifest`, :mod:`gitmem.sidecar.integrity`). A
file that does not match is damage: the tables or the full text damaged mean
a full build, the vector index damaged means only that index is rebuilt
(from the embedding cache).

The index is a sidecar (:mod:`gitmem.sidecar`: root directory, generations,
manifest, builder lock, freshness). Here: the policy; the building itself is
:class:`gitmem.index.builder.Builder`, its working state
:class:`gitmem.index.state.RefreshState`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gitmem.index.builder import Builder
from gitmem.index.manifest import Manifest, index_root
from gitmem.index.state import Progress, RefreshReport
from gitmem.sidecar import generations
from gitmem.sidecar.freshness import reflects_memory
from gitmem.sidecar.lock import LOCK_TIMEOUT, building, unless_busy
from gitmem.storage.locate import RepoLocation

if TYPE_CHECKING:
    from gitmem.memory.api import Memory

__all__ = [
    "LOCK_TIMEOUT",
    "Progress",
    "RefreshReport",
    "is_fresh",
    "refresh",
    "refresh_existing",
    "try_refresh",
]


def is_fresh(location: RepoLocation, manifest: Manifest | None, *, vectors: bool = True) -> bool:
    """True when the manifest reflects the current memory tips (stdlib only)
    and, with ``vectors``, every text has a vector or the last refresh that
    tried says why not (the embedder failed, or its time budget ran out:
    queries do not wait for embedding, see :mod:`gitmem.index.embedding`)."""
    if manifest is None:
        return False
    if vectors and manifest.unembedded and manifest.embed_error is None:
        return False
    return reflects_memory(location, manifest.tips, manifest.payloads)


def refresh(
    mem: Memory,
    *,
    rebuild: bool = False,
    embed: bool = True,
    progress: Progress | None = None,
    timeout: float = LOCK_TIMEOUT,
    deep: bool = False,
    embed_all: bool = False,
) -> RefreshReport:
    """Bring the indexes up to date with memory (see the module docstring).

    ``deep`` checks every byte of every file against the manifest's checksums,
    not only the files whose stamp is out of date (see :mod:`gitmem.sidecar.integrity`).
    ``embed_all`` embeds every text that should have a vector and has none,
    however long it takes; otherwise embedding stops after ``edda.embed.budget``
    seconds and the next refresh goes on (:mod:`gitmem.index.embedding`)."""
    started = time.monotonic()
    root = index_root(mem.location)
    with building(root, timeout, what="index builder lock"):
        mem.flush()
        report = Builder(mem, root, progress, embed, embed_all=embed_all).run(rebuild, deep=deep)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def refresh_existing(mem: Memory) -> RefreshReport | None:
    """Refresh the index now if one was ever built here (None otherwise).

    ``git edda redact`` and ``gc`` call this so that the index's copy of a
    redacted text is gone when they return, not at the next query."""
    if not generations.exists(index_root(mem.location)):
        return None
    return refresh(mem)


def try_refresh(mem: Memory, *, wait: float, embed: bool = True) -> RefreshReport | None:
    """Refresh unless another process is building and ``wait`` runs out:
    then None, and the caller reads the previous version."""
    return unless_busy(lambda: refresh(mem, embed=embed, timeout=wait))
