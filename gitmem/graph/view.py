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


class GraphView:
    """The code graph of one repository at one build."""

    def __init__(self, files: pa.Table, nodes: pa.Table, edges: pa.Table) -> None:
        self.files = files
        self.nodes = nodes
        self.edges = edges

    @classmethod
    def from_tables(cls, files: pa.Table, nodes: pa.Table, edges: pa.Table) -> GraphView:
        """A view of tables already in memory."""
        return cls(files, nodes, edges)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None) -> GraphView:
        """The current graph of the repository at ``path`` (the build's sidecar)."""
        raise NotImplementedError("the graph sidecar is being built (issue 13)")
