"""The search index's manifest: the memory tips its files reflect.

The index is a sidecar (:mod:`gitmem.sidecar`): its manifest is read and
written by :mod:`gitmem.sidecar.manifest` (written last and atomically, with
a checksum of its own fields) and its generations checked file by file by
:mod:`gitmem.sidecar.integrity`. What is the index's own: the fields it
records, its version, and which files a generation must hold.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitmem.errors import IndexDamagedError
from gitmem.index import table as tables
from gitmem.sidecar import integrity
from gitmem.sidecar import manifest as sidecar_manifest
from gitmem.sidecar.generations import sidecar_root
from gitmem.sidecar.manifest import MANIFEST
from gitmem.storage.locate import RepoLocation

__all__ = [
    "INDEX_DIR",
    "INDEX_VERSION",
    "MANIFEST",
    "Manifest",
    "check_generation",
    "generation_files",
    "index_root",
    "read_manifest",
    "write_manifest",
]

# 2: full-text documents carry key64; 3: as a fast field; 4: line column;
# 5: the manifest holds checksums of every file and of itself;
# 6: a commit_link's text is its message without the sha; full text has a head field;
# 7: the events table in segments, the vectors in shards
INDEX_VERSION = 7
INDEX_DIR = "index"


def index_root(location: RepoLocation) -> Path:
    return sidecar_root(location, INDEX_DIR)


@dataclass
class Manifest:
    """What the sidecar files reflect; written last, atomically."""

    version: int
    generation: str  # the directory (under index/) holding this version's files
    fulltext: str  # the full-text directory inside the generation
    tips: dict[str, str]  # chain ref -> tip
    payloads: str | None  # the payload store's tip
    events: int
    trunk: str | None  # the trunk when this was built (readers need it without libgit2)
    model: str | None = None  # the embedder whose vectors the vector shards hold
    dim: int | None = None
    unembedded: int = 0  # rows with text but no vector yet (embedding failed or disabled)
    embed_error: str | None = None  # why the last embedding failed; queries then do not retry
    # "<size>:<crc32>" of every file of the generation, by path inside it
    files: dict[str, str] = field(default_factory=dict)
    # the events table's segment files, in order (gitmem.index.segments)
    segments: list[str] = field(default_factory=list)
    checksum: str = ""  # CRC-32 of the other fields (see gitmem.sidecar.manifest.checksum)

    @classmethod
    def empty(cls, generation: str) -> Manifest:
        """The manifest of a new generation, before anything is in it."""
        return cls(INDEX_VERSION, generation, "fulltext", {}, None, 0, None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_manifest(root: Path) -> Manifest | None:
    """The manifest, or None when missing, unreadable, damaged (its checksum
    differs), of another version or naming a path out of the index."""
    from gitmem.index.segments import is_segment

    manifest = sidecar_manifest.read(root, Manifest, INDEX_VERSION)
    if manifest is None or not sidecar_manifest.plain_name(manifest.fulltext):
        return None
    segments = manifest.segments
    if not isinstance(segments, list) or not all(
        isinstance(n, str) and sidecar_manifest.plain_name(n) and is_segment(n) for n in segments
    ):
        return None
    return manifest


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Switch the index to ``manifest`` (its checksum set first)."""
    sidecar_manifest.write(root, manifest)


def check_generation(
    directory: Path, manifest: Manifest, *, deep: bool = False, vectors: bool = True
) -> dict[str, integrity.Identity]:
    """Check the generation's files against the manifest's checksums (the
    vector index too, with ``vectors``); IndexDamagedError when one differs.
    Returns the identities checked (see :func:`integrity.unchanged`)."""
    from gitmem.index.vectorshards import shard_number

    required = (*manifest.segments, tables.MEMBERS_FILE, f"{manifest.fulltext}/meta.json")
    for name in required:
        if name not in manifest.files:
            raise IndexDamagedError(f"the manifest has no checksum for {name}")
    files = {k: v for k, v in manifest.files.items() if vectors or shard_number(k) is None}
    return integrity.verify(directory, files, deep=deep)


def generation_files(directory: Path, fulltext: str, segments: list[str]) -> list[str]:
    """The files of a generation a manifest vouches for: the events table's
    ``segments``, the members table (once written), the full-text
    directory's files (not Tantivy's lock files, which readers create) and
    the vector index's shards when there are any."""
    from gitmem.index.vectorshards import on_disk

    names = [*segments]
    if (directory / tables.MEMBERS_FILE).is_file():
        names.append(tables.MEMBERS_FILE)
    with os.scandir(directory / fulltext) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".tantivy-") and entry.name.endswith(".lock"):
                continue
            if entry.is_file(follow_symlinks=False):
                names.append(f"{fulltext}/{entry.name}")
    names.extend(on_disk(directory))
    return names
