"""A string column of the events table as integer codes, for membership masks.

A context pack asks for the rows of some types a dozen times: ``is_in``
hashes every row's string again for each (~10 ms at a million rows).
Encoded once per view as dictionary codes (~25 ms for the ``type``
column), a test is a lookup of the values asked for among the few distinct
ones, then one gather per row in numpy (~2 ms).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gitmem.index import compute as pc

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray


class Codes:
    """One column's rows as codes into its distinct values (nulls: -1)."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        import pyarrow as pa
        import pyarrow._compute as _c

        if isinstance(column, pa.ChunkedArray):  # one dictionary for every row
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        encoded = pc.call("dictionary_encode", [column])
        self.values: pa.Array = encoded.dictionary
        codes = pc.call("coalesce", [encoded.indices, pa.scalar(-1, encoded.indices.type)])
        self.codes: NDArray[np.int32] = pc.to_numpy(codes, "int32")
        self._options = _c.SetLookupOptions(self.values)

    def mask(self, values: pa.Array | pa.ChunkedArray | Iterable[str]) -> NDArray[np.bool_]:
        """True for the rows whose value is one of ``values`` (never for nulls)."""
        import numpy as np
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        elif not isinstance(values, pa.Array):
            values = pa.array(list(values), pa.string())
        found = pc.call("index_in", [values], self._options)
        positions = pc.to_numpy(pc.call("coalesce", [found, pa.scalar(-1, pa.int32())]), "int32")
        # one slot more, which the nulls' code -1 reads: never a member
        member = np.zeros(len(self.values) + 1, dtype=bool)
        member[positions[positions >= 0]] = True
        rows: NDArray[np.bool_] = member[self.codes]
        return rows
