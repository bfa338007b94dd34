"""How a :class:`~gitmem.graph.view.GraphView` comes to be: built or
brought up to date when stale, checked against its manifest, rebuilt when
damaged (as :mod:`gitmem.index.opening` does for the search index).

Only :class:`~gitmem.errors.IndexDamagedError` counts as damage: any other
error (a bug) reaches the caller instead of being rebuilt over.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import IndexDamagedError, NotFoundError
from gitmem.graph.build import LOCK_TIMEOUT, BuildReport, build, graph_root, try_build
from gitmem.graph.freshness import stale_reason
from gitmem.graph.manifest import (
    EDGES_TABLE,
    FILES_FILE,
    NODES_TABLE,
    GraphManifest,
    read_manifest,
)
from gitmem.graph.manifest import check_generation as check
from gitmem.graph.scan import Settings
from gitmem.graph.schema import edges_schema, files_schema, nodes_schema
from gitmem.graph.shards import shard_names
from gitmem.sidecar.integrity import unchanged
from gitmem.storage.gitconfig import Config, read_config
from gitmem.storage.locate import RepoLocation, locate

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.graph.view import GraphView

DEFAULT_WAIT = (
    5.0  # seconds a reader waits for another process's build before reading the previous one
)


def target(manifest: GraphManifest | None, worktree: bool | None) -> tuple[bool, str | None]:
    """(worktree, commit) a refresh builds: what was asked, else what the
    last build followed (a commit named by hand stays named)."""
    if worktree is not None or manifest is None:
        return bool(worktree), None
    return manifest.worktree, manifest.commit if manifest.mode == "commit" else None


def _stale(
    location: RepoLocation, manifest: GraphManifest | None, config: Config, worktree: bool | None
) -> bool:
    if manifest is None:
        return True
    if worktree is not None and (worktree != manifest.worktree or manifest.mode == "commit"):
        return True
    return bool(stale_reason(location, manifest, Settings.from_config(config)))


def open_graph(
    cls: type[GraphView],
    path: str | os.PathLike[str] | None = None,
    *,
    refresh: bool = True,
    wait: float = DEFAULT_WAIT,
    worktree: bool | None = None,
) -> GraphView:
    """:meth:`GraphView.open <gitmem.graph.view.GraphView.open>`."""
    location = locate(path, any_format=True)
    config = read_config(location)
    root = graph_root(location)
    manifest = read_manifest(root)
    report = None
    stale = False
    target_worktree, target_commit = target(manifest, worktree)
    if refresh and _stale(location, manifest, config, worktree):
        report = try_build(
            location,
            config,
            wait=wait if manifest is not None else LOCK_TIMEOUT,
            worktree=target_worktree,
            commit=target_commit,
        )
        stale = report is None
        manifest = read_manifest(root)
    if manifest is None:
        raise NotFoundError("there is no code graph yet", "build it with 'git edda code index'")
    try:
        return _checked(cls, root, manifest, stale, report)
    except IndexDamagedError as exc:
        if not refresh:
            raise NotFoundError(
                f"the code graph is damaged ({exc})",
                "rebuild it with 'git edda code index --rebuild'",
            ) from None
        damage = str(exc)
    # Files that do not match the manifest are damaged, or belonged to a
    # generation another build replaced meanwhile. A build under the lock
    # (so after that one) checks the current generation and builds anew
    # what is damaged; should this view still find damage, a rebuild.
    for rebuild in (False, True):
        report = build(
            location, config, rebuild=rebuild, worktree=target_worktree, commit=target_commit
        )
        manifest = read_manifest(root)
        if manifest is None:
            continue
        try:
            return _checked(cls, root, manifest, False, report)
        except IndexDamagedError as exc:
            damage = str(exc)
    raise NotFoundError(
        f"the code graph could not be rebuilt ({damage})", "run 'git edda code index --rebuild'"
    )


def _read(directory: Path, names: list[str], schema: pa.Schema) -> pa.Table:
    """One table from its files (its shards, in order), read in one call:
    Arrow reads the files in parallel, and opens none twice."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = [str(directory / name) for name in names]
    try:
        table = pq.read_table(paths if len(paths) > 1 else paths[0], memory_map=True)
    except (OSError, pa.ArrowException) as exc:
        raise IndexDamagedError(f"{names[0].split('/')[0]}: {exc}") from None
    if not table.schema.equals(schema):
        raise IndexDamagedError(f"{names[0].split('/')[0]} does not have the graph's columns")
    return table


def _checked(
    cls: type[GraphView],
    root: Path,
    manifest: GraphManifest,
    stale: bool,
    report: BuildReport | None,
) -> GraphView:
    """A view of the generation the manifest names, whose files match it."""
    directory = root / manifest.generation
    checked = check(directory, manifest)
    files = _read(directory, [FILES_FILE], files_schema())
    nodes = _read(directory, shard_names(NODES_TABLE, manifest.shards), nodes_schema())
    edges = _read(directory, shard_names(EDGES_TABLE, manifest.shards), edges_schema())
    # What was read is what was checked: no build replaced a file meanwhile.
    unchanged(directory, checked)
    return cls(files, nodes, edges, manifest=manifest, stale=stale, report=report)


def refresh(
    location: RepoLocation, config: Config | None = None, *, wait: float
) -> BuildReport | None:
    """Bring an existing graph up to date, following what its last build
    followed (HEAD, HEAD and the uncommitted changes, or a commit named by
    hand); None when another process is building and ``wait`` ran out. What
    the git hooks run in the background."""
    config = read_config(location) if config is None else config
    manifest = read_manifest(graph_root(location))
    worktree, commit = target(manifest, None)
    return try_build(location, config, wait=wait, worktree=worktree, commit=commit)
