"""The code graph's manifest: what a generation's tables reflect.

The graph is a sidecar (:mod:`gitmem.sidecar`): its manifest is written last
and atomically with a checksum of its own fields, and names a generation
directory whose files it checksums: ``files.parquet`` and every shard of
the nodes and edges tables (:mod:`gitmem.graph.shards`). What is the
graph's own: the fields it records (the commit, whether uncommitted changes
are in, the versions and settings the tables depend on, counts, how many
shards) and its version.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitmem.errors import IndexDamagedError
from gitmem.graph.shards import MAX_SHARDS, shard_names
from gitmem.sidecar import integrity
from gitmem.sidecar import manifest as sidecar_manifest

__all__ = [
    "EDGES_TABLE",
    "FILES_FILE",
    "GRAPH_VERSION",
    "MODES",
    "NODES_TABLE",
    "SHARDED_TABLES",
    "GraphManifest",
    "check_generation",
    "read_manifest",
    "table_files",
    "write_manifest",
]

GRAPH_VERSION = 2  # 2: nodes and edges in shards
FILES_FILE = "files.parquet"
NODES_TABLE = "nodes"  # nodes/00.parquet …
EDGES_TABLE = "edges"
SHARDED_TABLES = (NODES_TABLE, EDGES_TABLE)


def table_files(shards: int) -> list[str]:
    """Every table file of a generation of ``shards`` shards, in the order
    the tables read them."""
    return [FILES_FILE, *(n for t in SHARDED_TABLES for n in shard_names(t, shards))]


# What a graph follows, so that opening it knows when it is stale:
# "head": HEAD's commit; "worktree": HEAD and the uncommitted changes;
# "commit": one commit named by hand (never stale).
MODES = ("head", "worktree", "commit")


@dataclass
class GraphManifest:
    """What a generation of the graph reflects; written last, atomically."""

    version: int
    generation: str  # the directory (in the graph's root) holding the tables
    mode: str  # see MODES
    commit: str | None  # the commit indexed (None: an unborn branch)
    worktree: bool  # uncommitted changes are in
    status: str  # fingerprint of those changes (worktree builds; "" otherwise)
    object_format: str  # "sha1" or "sha256": how blob ids are named
    extractor: int  # gitmem.graph.facts.EXTRACTOR_VERSION
    schema: int  # gitmem.graph.schema.SCHEMA_VERSION
    settings: str  # fingerprint of edda.code.include/exclude/maxFileBytes
    content: str  # digest of the files indexed (path, blob, language)
    counts: dict[str, int]  # "files", "nodes", "edges"
    skipped: dict[str, int]  # files not indexed, by reason
    shards: int  # of the nodes and edges tables (gitmem.graph.shards.shard_count of files)
    # "<size>:<crc32>" of every file of the generation, by name
    files: dict[str, str] = field(default_factory=dict)
    checksum: str = ""  # CRC-32 of the other fields (see gitmem.sidecar.manifest.checksum)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_manifest(root: Path) -> GraphManifest | None:
    """The manifest, or None when missing, unreadable, damaged, of another
    version or naming a path out of the graph's root."""
    manifest = sidecar_manifest.read(root, GraphManifest, GRAPH_VERSION)
    if manifest is None or manifest.mode not in MODES:
        return None
    if not isinstance(manifest.counts, dict) or not isinstance(manifest.skipped, dict):
        return None
    if not isinstance(manifest.shards, int) or not 1 <= manifest.shards <= MAX_SHARDS:
        return None
    return manifest


def write_manifest(root: Path, manifest: GraphManifest) -> None:
    """Switch the graph to ``manifest`` (its checksum set first)."""
    sidecar_manifest.write(root, manifest)


def check_generation(
    directory: Path, manifest: GraphManifest, *, deep: bool = False
) -> dict[str, integrity.Identity]:
    """Check every table file (``files.parquet``, each shard of the nodes
    and edges) against the manifest's checksums (IndexDamagedError when one
    differs or is missing); returns the identities checked."""
    for name in table_files(manifest.shards):
        if name not in manifest.files:
            raise IndexDamagedError(f"the manifest has no checksum for {name}")
    return integrity.verify(directory, manifest.files, deep=deep)
