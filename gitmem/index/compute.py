"""The few Arrow compute kernels gitmem uses, called through ``pyarrow._compute``.

``import pyarrow.compute`` costs ~45 ms (it builds Python wrappers and
docstrings for every kernel), more than a whole query over a warm index; the
kernels themselves are reachable by name for ~6 ms. Every command that reads
the index pays this once per process.

pyarrow has no type annotations (mypy sees its classes as ``Any``); the
aliases below still say what each kernel takes and returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow._compute as _c

Column: TypeAlias = "pa.Array | pa.ChunkedArray"
"""A column or a mask: one array, or the chunks of a table's column."""
Datum: TypeAlias = "pa.Array | pa.ChunkedArray | pa.Scalar | pa.Table | pa.RecordBatch"
"""Anything a kernel takes or returns."""


def call(name: str, args: Sequence[object], options: _c.FunctionOptions | None = None) -> Datum:
    """The kernel ``name`` applied to ``args`` (plain values become scalars)."""
    import pyarrow as pa
    import pyarrow._compute as _c

    arrow = (pa.Array, pa.ChunkedArray, pa.Scalar, pa.Table, pa.RecordBatch)
    values = [a if isinstance(a, arrow) else scalar(a) for a in args]
    return _c.call_function(name, values, options)


def scalar(value: object) -> pa.Scalar:
    """``value`` as an Arrow scalar of the type Arrow would infer for it.

    The type is given, not inferred: inferring it first tries to import
    ``dateutil`` (for relative deltas), and when that is not installed the
    failed import searches every path entry again on every call, ~0.4 ms."""
    import pyarrow as pa

    kind = _SCALAR_TYPES.get(type(value))
    return pa.scalar(value, getattr(pa, kind)()) if kind else pa.scalar(value)


_SCALAR_TYPES = {bool: "bool_", int: "int64", float: "float64", str: "string"}


def is_in(values: Column, value_set: Column | Iterable[str]) -> Column:
    """True where ``values`` is in ``value_set`` (null where ``values`` is null)."""
    import pyarrow as pa
    import pyarrow._compute as _c

    if not isinstance(value_set, pa.Array | pa.ChunkedArray):
        value_set = pa.array(list(value_set), pa.string())
    if isinstance(value_set, pa.ChunkedArray):
        value_set = value_set.combine_chunks()
    return call("is_in", [values], _c.SetLookupOptions(value_set))


def equal(values: Column, scalar: object) -> Column:
    return call("equal", [values, scalar])


def not_equal(values: Column, scalar: object) -> Column:
    return call("not_equal", [values, scalar])


def greater_equal(values: Column, scalar: object) -> Column:
    return call("greater_equal", [values, scalar])


def less(values: Column, scalar: object) -> Column:
    return call("less", [values, scalar])


def and_(a: Column, b: Column) -> Column:
    return call("and", [a, b])


def or_(a: Column, b: Column) -> Column:
    return call("or", [a, b])


def invert(mask: Column) -> Column:
    return call("invert", [mask])


def false_if_null(mask: Column) -> Column:
    return call("coalesce", [mask, False])


def filter(table: Datum, mask: Column) -> Datum:
    """The rows of ``table`` where ``mask`` is true (Table.filter imports pyarrow.compute)."""
    return call("filter", [table, mask])


def all_true(length: int) -> pa.Array:
    return _constant(True, length)


def all_false(length: int) -> pa.Array:
    return _constant(False, length)


def _constant(value: bool, length: int) -> pa.Array:
    # from a numpy array: a list of a million Python bools costs ~18 ms
    import numpy as np

    return bools(np.full(length, value, dtype=bool))


def bools(mask: Any) -> pa.Array:
    """A numpy boolean array as an Arrow mask, its bits packed by numpy
    (``pa.array`` of a numpy array first imports ``numpy.ma``, ~20 ms, to
    ask whether it is a masked one)."""
    import numpy as np
    import pyarrow as pa

    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def to_numpy(values: Column, dtype: str) -> Any:
    """One numpy array of a column or mask, whether one array or chunks
    (a copy when there are several: nothing then keeps a memory map alive)."""
    import numpy as np

    chunks = values.chunks if hasattr(values, "chunks") else [values]
    if not chunks:
        return np.zeros(0, dtype=dtype)
    return np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks])


def rows_at(table: pa.Table, positions: Any) -> pa.Table:
    """The rows of ``table`` at ``positions`` (ascending), as zero-copy slices
    of each run of neighbours: ``take`` on a table of many chunks first
    joins every chunk of every column (0.8 s and a gigabyte for a million
    events, to keep 20 rows), and a filter reads a mask of every row (a few
    milliseconds, more than a few hundred slices cost)."""
    import numpy as np
    import pyarrow as pa

    if not len(positions):
        return table.slice(0, 0)
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(positions)]))
    pieces = [table.slice(int(positions[a]), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


def int64s(values: Any) -> pa.Array:
    """A numpy array of integers as an Arrow int64 array, sharing its memory
    (``pa.array`` of a numpy array first imports ``numpy.ma``)."""
    import numpy as np
    import pyarrow as pa

    ints = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(ints), [None, pa.py_buffer(ints)])


def sorted_distinct(values: Any) -> Any:
    """A numpy array's values sorted, without repeats: ``np.unique``'s
    answer, without its first call importing ``numpy.ma`` (~20 ms of a
    one-query process)."""
    import numpy as np

    ordered = np.sort(np.asarray(values))
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
