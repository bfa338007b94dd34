"""Row positions of events by their 64-bit key.

Full-text and vector hits come back as ``key64`` values (the first 64 bits of
an event id, see :func:`gitmem.index.vectors.key64`); :class:`KeyRows` maps
them to rows of the events table. A cold query makes a few lookups, for
which a scan is cheapest (passing over the rows whose leading bits no key
has); a long-lived reader (the MCP server, the
daemon) makes many, so after :data:`SCANS` lookups the keys are sorted once
and binary-searched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

SCANS = 8  # key lookups answered by a scan before the keys are sorted once


class KeyRows:
    """Lookups of rows by key64 over the ``key64`` column of the events table."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        from gitmem.index import compute

        # one numpy array (a copy: nothing here keeps the memory map alive)
        self.values: NDArray[np.uint64] = compute.to_numpy(column, "uint64")
        self.lookups = 0
        self._sorted: tuple[NDArray[np.uint64], NDArray[np.intp]] | None = None

    @property
    def is_sorted(self) -> bool:
        """Whether lookups binary-search a sorted copy (after :data:`SCANS` scans)."""
        return self._sorted is not None

    def in_order(self) -> tuple[NDArray[np.uint64], NDArray[np.intp]]:
        """The keys sorted, and the row of each (sorted once, then kept)."""
        import numpy as np

        if self._sorted is None:
            # Keys are distinct but for a 64-bit collision: any sort then puts
            # the rows in the order a stable one does, at half its cost.
            order = np.argsort(self.values)
            ordered = self.values[order]
            if len(ordered) > 1 and bool(np.any(ordered[1:] == ordered[:-1])):
                order = np.argsort(self.values, kind="stable")
                ordered = self.values[order]
            self._sorted = (ordered, order)
        return self._sorted

    def rows(self, keys: Sequence[int]) -> list[int | None]:
        """Row positions of ``keys`` (None for keys not in the table; the
        first row when two events share a key)."""
        import numpy as np

        from gitmem.index import compute

        values = self.values
        if not len(keys) or not len(values):
            return [None] * len(keys)
        wanted = np.asarray(keys, dtype=np.uint64)
        self.lookups += 1
        if self._sorted is None and self.lookups <= SCANS:
            # A cold query's few lookups: a scan costs less than sorting the
            # keys once (~65 ms at a million rows). The rows whose leading
            # bits no key has are passed over in one gather (~2 ms), the few
            # left compared with the keys.
            leading = np.zeros(1 << 16, dtype=bool)
            leading[(wanted >> np.uint64(48)).astype(np.intp)] = True
            near = np.flatnonzero(leading[_leading16(values)])
            keys_near = values[near]
            asked = compute.sorted_distinct(wanted)  # (np.isin would import numpy.ma)
            at = np.minimum(np.searchsorted(asked, keys_near), len(asked) - 1)
            first: dict[int, int] = {}
            for row in near[asked[at] == keys_near].tolist():
                first.setdefault(int(values[row]), row)
            return [first.get(int(k)) for k in keys]
        ordered, order = self.in_order()
        at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
        found = ordered[at] == wanted
        rows: list[int] = order[
            at
        ].tolist()  # (Python ints at once: numpy scalars one by one cost more)
        return [row if ok else None for row, ok in zip(rows, found.tolist(), strict=True)]


def _leading16(values: NDArray[np.uint64]) -> NDArray[np.uint16]:
    """Each key's leading 16 bits, as a view of ``values`` (no copy)."""
    import sys

    import numpy as np

    parts = values.view(np.uint16)
    return parts[3::4] if sys.byteorder == "little" else parts[0::4]
