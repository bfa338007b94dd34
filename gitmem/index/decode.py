"""Events from rows of the index's events table.

A row holds its event's envelope and body as JSON (see
:mod:`gitmem.index.table`); turning rows back into
:class:`~gitmem.memory.event.Event` objects is what a query over the index
mostly costs, so it is done only for the rows chosen.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec

from gitmem.memory.event import Event

if TYPE_CHECKING:
    import pyarrow as pa

EVENT_COLUMNS = ("envelope", "body", "ref", "commit", "redacted")
"""The columns :func:`rows_to_events` reads."""

_DECODE = msgspec.json.Decoder().decode


def decode(text: str) -> Any:
    """A stored JSON document. msgspec reads these small documents about twice
    as fast as ``json.loads`` (a context pack decodes thousands); anything it
    refuses but the standard library accepts (say, an escaped lone surrogate
    written by an older version) still decodes."""
    try:
        return _DECODE(text)
    except msgspec.DecodeError:
        return json.loads(text)


def rows_to_events(rows: pa.Table) -> list[Event]:
    """Events from a (filtered) slice of the events table, in its order."""
    columns = rows.select(list(EVENT_COLUMNS)).to_pydict()
    return [
        Event(
            decode(envelope),
            None if body is None else decode(body),
            ref,
            commit,
            bool(redacted),
        )
        for envelope, body, ref, commit, redacted in zip(
            columns["envelope"],
            columns["body"],
            columns["ref"],
            columns["commit"],
            columns["redacted"],
            strict=True,
        )
    ]
