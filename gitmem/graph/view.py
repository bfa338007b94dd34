"""A read-only view of the stored graph: the three tables, and the lookups
queries need, built on first use.

:meth:`GraphView.from_tables` wraps tables in memory (tests, a build that
has just resolved them); :meth:`GraphView.open` reads the current sidecar
generation (memory-mapped Parquet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os

    import pyarrow as pa

    from gitmem.graph.build import BuildReport
    from gitmem.graph.manifest import GraphManifest


class GraphView:
    """The code graph of one repository at one build.

    Opened from the sidecar, it also says which build: ``manifest`` (the
    commit, whether uncommitted changes are in, counts), ``stale`` (True
    when another process was building and this is the previous version) and
    ``report`` (the build this opening ran, if it ran one)."""

    def __init__(
        self,
        files: pa.Table,
        nodes: pa.Table,
        edges: pa.Table,
        *,
        manifest: GraphManifest | None = None,
        stale: bool = False,
        report: BuildReport | None = None,
    ) -> None:
        self.files = files
        self.nodes = nodes
        self.edges = edges
        self.manifest = manifest
        self.stale = stale
        self.report = report

    @classmethod
    def from_tables(cls, files: pa.Table, nodes: pa.Table, edges: pa.Table) -> GraphView:
        """A view of tables already in memory."""
        return cls(files, nodes, edges)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        refresh: bool = True,
        wait: float | None = None,
        worktree: bool | None = None,
    ) -> GraphView:
        """The current graph of the worktree at ``path`` (memory-mapped
        Parquet), built or brought up to date first when ``refresh`` and it
        is stale (HEAD moved, the uncommitted changes it includes changed,
        settings or versions changed), as the search index does.

        ``worktree``: include uncommitted changes (None: as the last build
        did). ``wait``: seconds to wait for another process's build before
        reading the previous version (``stale``). See
        :func:`gitmem.graph.opening.open_graph`."""
        from gitmem.graph.opening import DEFAULT_WAIT, open_graph

        return open_graph(
            cls,
            path,
            refresh=refresh,
            wait=DEFAULT_WAIT if wait is None else wait,
            worktree=worktree,
        )
