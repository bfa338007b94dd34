"""The few Arrow compute kernels gitmem uses, called through ``pyarrow._compute``.

``import pyarrow.compute`` costs ~45 ms (it builds Python wrappers and
docstrings for every kernel), more than a whole query over a warm index; the
kernels themselves are reachable by name for ~6 ms. Every command that reads
the index pays this once per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    import pyarrow as pa

    Column: TypeAlias = "pa.Array | pa.ChunkedArray"
    """A column or mask (pyarrow is untyped: to mypy this is ``Any``)."""


def _call(name: str, args: list[Any], options: Any = None) -> Any:
    import pyarrow as pa
    import pyarrow._compute as _c

    arrow = (pa.Array, pa.ChunkedArray, pa.Scalar, pa.Table, pa.RecordBatch)
    values = [a if isinstance(a, arrow) else pa.scalar(a) for a in args]
    return _c.call_function(name, values, options)


def is_in(values: Any, value_set: Any) -> Any:
    """True where ``values`` is in ``value_set`` (null where ``values`` is null)."""
    import pyarrow as pa
    import pyarrow._compute as _c

    if not isinstance(value_set, pa.Array | pa.ChunkedArray):
        value_set = pa.array(list(value_set), pa.string())
    if isinstance(value_set, pa.ChunkedArray):
        value_set = value_set.combine_chunks()
    return _call("is_in", [values], _c.SetLookupOptions(value_set))


def equal(values: Any, scalar: Any) -> Any:
    return _call("equal", [values, scalar])


def not_equal(values: Any, scalar: Any) -> Any:
    return _call("not_equal", [values, scalar])


def greater_equal(values: Any, scalar: Any) -> Any:
    return _call("greater_equal", [values, scalar])


def less(values: Any, scalar: Any) -> Any:
    return _call("less", [values, scalar])


def and_(a: Any, b: Any) -> Any:
    return _call("and", [a, b])


def or_(a: Any, b: Any) -> Any:
    return _call("or", [a, b])


def invert(mask: Any) -> Any:
    return _call("invert", [mask])


def false_if_null(mask: Any) -> Any:
    import pyarrow as pa

    return _call("coalesce", [mask, pa.scalar(False)])


def filter(table: Any, mask: Any) -> Any:
    """The rows of ``table`` where ``mask`` is true (Table.filter imports pyarrow.compute)."""
    return _call("filter", [table, mask])


def all_true(length: int) -> Any:
    import pyarrow as pa

    return pa.array([True] * length, pa.bool_()) if length else pa.array([], pa.bool_())
