"""A branch's events fetched by need from the index (the ``window`` capability).

:class:`IndexWindow` implements
:class:`~gitmem.memory.window.BranchWindow` over an
:class:`~gitmem.index.view.IndexView`: selections are Arrow masks over the
memory-mapped events table, and only the chosen rows are turned into
:class:`~gitmem.memory.event.Event` objects (decoding JSON is what costs).
Session statistics are computed column-wise: each showable row gets an
integer session code from Arrow kernels (looked up beyond its scope session
only for the rows without one), then numpy gives the size and the first and
last row of every session, so a million events cost tens of milliseconds
and only the distinct sessions reach Python.

A pack asks the window a dozen questions about one branch: the branch's
rows (its pool), the rows of some types (from the view's type codes,
:mod:`gitmem.index.codes`) and the visible ones are computed once and
shared; a few rows are sliced out of the table rather than filtered with a
mask over every row.

The session keys are exactly those of
:func:`gitmem.memory.window.session_key` (scope session, the
capsule's session, the open's own key, else the UTC day), and "showable"
is what the context pack shows: visible, not a ``redaction``, not pointing
at an invisible event of the branch. For ``capsule_close`` rows the index's
``target`` column holds the closed capsule, not a ``target`` body field, so
those few rows are checked on their decoded bodies instead.

Kernels are called through :mod:`gitmem.index.compute` (by name with
:func:`~gitmem.index.compute.call` for the few it does not wrap), never
``pyarrow.compute``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gitmem.index import compute as pc
from gitmem.index.decode import EVENT_COLUMNS, rows_to_events
from gitmem.memory.describe import iso_date
from gitmem.memory.event import Event
from gitmem.memory.query import paths_overlap
from gitmem.memory.window import (
    BranchWindow,
    DecisionBook,
    DecisionLedger,
    OlderSessions,
    SessionStats,
    SessionWindow,
    capsule_sessions,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow._compute as _c

    from gitmem.index.compute import Column
    from gitmem.index.view import IndexView
    from gitmem.memory.source import BranchKwargs

__all__ = ["IndexWindow", "window"]

DAY_US = 86_400_000_000
SLICED_ROWS = 1_000  # rows taken by slicing the table; more are filtered with a mask
DAY_CODE = 1 << 40  # session codes from here on are UTC days (see _session_keys)


def window(view: IndexView, branch_kwargs: BranchKwargs) -> BranchWindow:
    """The window of one branch (``branch_kwargs`` as for ``view.events``)."""
    return IndexWindow(view, branch_kwargs)


def _strings(values: Iterable[str]) -> pa.Array:
    """A sorted, distinct string array (a value set for ``is_in``)."""
    import pyarrow as pa

    return pa.array(sorted(set(values)), pa.string())


def _contiguous(values: Column) -> pa.Array:
    """A ChunkedArray as one Array (kernels' outputs then line up row for row)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


class IndexWindow:
    """Selective reads of one branch through the index (see the module docstring)."""

    def __init__(self, view: IndexView, branch_kwargs: BranchKwargs) -> None:
        self.view = view
        self.branch_kwargs: BranchKwargs = {**branch_kwargs}
        self._pool: pa.Array | None = None
        self._visible: pa.Array | None = None
        self._hidden: frozenset[str] | None = None
        self._cache: dict[tuple[str, ...], list[Event]] = {}
        self._ledger: DecisionLedger | None = None
        self._book: DecisionBook | None = None

    @property
    def table(self) -> pa.Table:
        """The view's events table (read through the view: a closed view refuses)."""
        return self.view.table

    # masks -------------------------------------------------------------------------------
    @property
    def pool(self) -> pa.Array:
        """The rows the branch sees."""
        if self._pool is None:
            self._pool = _contiguous(self.view.filter_mask(None, **self.branch_kwargs))
        return self._pool

    @property
    def visible(self) -> pa.Array:
        """The branch's rows that are visible (not redacted, body present)."""
        if self._visible is None:
            t = self.table
            shown = pc.and_(
                pc.call("is_valid", [t.column("body")]), pc.invert(t.column("redacted"))
            )
            self._visible = _contiguous(pc.and_(self.pool, shown))
        return self._visible

    def _of(self, mask: Column) -> Column:
        """``mask`` restricted to the branch's rows."""
        return pc.and_(self.pool, mask)

    def _type_is(self, types: Sequence[str]) -> Column:
        """Rows of these types (any branch), from the view's type codes: a
        lookup per row instead of hashing a million strings."""
        return pc.bools(self.view.codes("type").mask(types))

    def _rows(self, mask: Column) -> list[Event]:
        """Events of the rows where ``mask`` is true.

        Filtering with a mask works chunk by chunk; ``take`` on the chunked
        table would first concatenate every chunk of the JSON columns (~13 ms)."""
        rows = pc.filter(self.table.select(list(EVENT_COLUMNS)), mask)
        return rows_to_events(rows) if rows.num_rows else []

    def _take_rows(self, rows: Iterable[int]) -> list[Event]:
        """Events of these row numbers, in table order: a few are sliced out
        of the table, many filtered with a mask."""
        import numpy as np

        wanted = pc.sorted_distinct(np.fromiter(rows, dtype=np.int64))
        if len(wanted) == 0:
            return []
        if len(wanted) > SLICED_ROWS:
            mask = np.zeros(self.table.num_rows, dtype=bool)
            mask[wanted] = True
            return self._rows(pc.bools(mask))
        return rows_to_events(pc.rows_at(self.table.select(list(EVENT_COLUMNS)), wanted))

    # BranchWindow ------------------------------------------------------------------------
    def of_types(self, types: Sequence[str]) -> list[Event]:
        """Every event of these types, visible or not."""
        key = tuple(sorted(set(types)))
        if key not in self._cache:
            # read already among the events of more types (the sessions want
            # the capsule opens of the pack's capsule events): picked, not decoded again
            wider = next((k for k in self._cache if set(key) <= set(k)), None)
            if wider is not None:
                self._cache[key] = [e for e in self._cache[wider] if e.type in key]
            else:
                self._cache[key] = self._rows(self._of(self._type_is(key))) if key else []
        return list(self._cache[key])

    def newest(self, event_type: str, count: int) -> list[Event]:
        """The newest ``count`` visible events of one type."""
        import numpy as np

        if count <= 0:
            return []
        mask = pc.to_numpy(pc.and_(self.visible, self._type_is((event_type,))), "bool")
        return self._take_rows(np.flatnonzero(mask)[-count:].tolist())

    def by_ids(self, ids: Iterable[str]) -> list[Event]:
        """The branch's events with these (full) ids."""
        wanted = _strings(ids)
        if len(wanted) == 0:
            return []
        return self._rows(self._of(pc.false_if_null(pc.is_in(self.table.column("id"), wanted))))

    def _touching_rows(self, mask: Column, paths: Sequence[str]) -> list[int]:
        """Row numbers, among those where ``mask`` is true, whose paths overlap ``paths``.

        The ``paths`` column is flattened, each distinct path is tested once
        (:func:`~gitmem.memory.query.paths_overlap`), and the rows holding
        a matching path are kept."""
        if not paths:
            return []
        numbers = _positions(mask)
        lists = _contiguous(pc.filter(self.table.column("paths"), mask))
        if len(lists) == 0:
            return []
        flat = pc.call("list_flatten", [lists])
        distinct = pc.call("unique", [flat]).to_pylist()
        matching = [p for p in distinct if p is not None and paths_overlap([p], paths)]
        if not matching:
            return []
        parents = pc.call("list_parent_indices", [lists])
        hit = pc.filter(parents, pc.false_if_null(pc.is_in(flat, _strings(matching))))
        rows: list[int] = pc.call("take", [numbers, pc.call("unique", [hit])]).to_pylist()
        return rows

    def touching(self, types: Sequence[str], paths: Sequence[str]) -> list[Event]:
        """Visible events of these types whose paths overlap ``paths`` (either way round)."""
        if not types:
            return []
        return self._take_rows(
            self._touching_rows(pc.and_(self.visible, self._type_is(types)), paths)
        )

    def related(
        self,
        types: Sequence[str],
        *,
        capsules: Iterable[str] = (),
        sessions: Iterable[str] = (),
        paths: Iterable[str] = (),
    ) -> list[Event]:
        """Visible events of these types in one of ``capsules`` or ``sessions``
        (scope session, or for a commit link the ``session`` field of its body,
        matched as JSON text: a superset), or whose paths overlap ``paths``."""
        t = self.table
        base = pc.and_(self.visible, self._type_is(types))
        capsule_set, session_set = _strings(capsules), _strings(sessions)
        wanted = _falses(t.num_rows)
        if len(capsule_set):
            wanted = pc.or_(wanted, pc.false_if_null(pc.is_in(t.column("capsule"), capsule_set)))
        if len(session_set):
            wanted = pc.or_(wanted, pc.false_if_null(pc.is_in(t.column("session"), session_set)))
        rows: set[int] = set(_positions(pc.and_(base, wanted)).to_pylist())
        rest = pc.and_(base, pc.invert(wanted))
        if len(session_set) and "commit_link" in types:
            # a commit link records the session it came from in its body
            links = pc.and_(rest, self._type_is(("commit_link",)))
            bodies = pc.filter(t.column("body"), links)
            named = _falses(len(bodies))
            for session in session_set.to_pylist():
                needle = '"session": ' + json.dumps(session, ensure_ascii=False)
                found = pc.call("match_substring", [bodies], _match_options(needle))
                named = pc.or_(named, pc.false_if_null(found))
            rows.update(pc.filter(_positions(links), named).to_pylist())
        rows.update(self._touching_rows(rest, sorted(set(paths))))
        return self._take_rows(rows)

    def hidden(self) -> frozenset[str]:
        """Ids of the branch's events that are not visible."""
        if self._hidden is None:
            rows = pc.and_(self.pool, pc.invert(self.visible))
            ids = pc.filter(self.table.column("id"), rows).to_pylist()
            self._hidden = frozenset(str(i) for i in ids)
        return self._hidden

    def book(self) -> DecisionBook:
        """The decision states of :meth:`decisions`, computed once per window
        (the view keeps a window per branch, so a hot search pays this once)."""
        if self._book is None:
            self._book = DecisionBook(self.decisions(), self.by_ids)
        return self._book

    def decisions(self) -> DecisionLedger:
        """The ledger of the branch's visible decisions and ratifications."""
        if self._ledger is None:
            self._ledger = self._decisions()
        return self._ledger

    def _decisions(self) -> DecisionLedger:
        mask = pc.and_(self.visible, self._type_is(("decision", "ratify")))
        names = ["id", "type", "key", "target", "time", "agent", "paths", "line"]
        # one filter of the columns together: each column's alone reads the mask again
        picked = pc.filter(self.table.select(names), mask)

        def column(name: str) -> list[Any]:
            values: list[Any] = picked.column(name).to_pylist()
            return values

        def text(name: str) -> tuple[str, ...]:
            # nulls as "" in Arrow: the values are then the strings themselves
            values: list[str] = pc.call("coalesce", [picked.column(name), ""]).to_pylist()
            return tuple(values)

        return DecisionLedger(
            text("id"),
            text("type"),
            text("key"),
            text("target"),
            tuple(column("time")),
            tuple(v if isinstance(v, str) else None for v in column("agent")),
            tuple(tuple(p or ()) for p in column("paths")),
            text("line"),
        )

    def capsule_counts(self, capsules: Iterable[str] | None = None) -> dict[str, int]:
        """Events per capsule id (every event of the branch, visible or not),
        of ``capsules`` only when given (a pack shows a few: they are picked
        first, not every capsule's events copied and counted)."""
        column = self.table.column("capsule")
        rows = self.pool
        if capsules is not None:
            wanted = _strings(capsules)
            if not len(wanted):
                return {}
            rows = pc.and_(rows, pc.false_if_null(pc.is_in(column, wanted)))
        counted = pc.call("value_counts", [pc.filter(column, rows)])
        values = counted.field(0).to_pylist()
        counts = counted.field(1).to_pylist()
        return {v: int(c) for v, c in zip(values, counts, strict=True) if v}

    def everything(self) -> list[Event]:
        """All the branch's events."""
        return self.view.events(**self.branch_kwargs)

    # sessions ----------------------------------------------------------------------------
    def _showable(self) -> Column:
        """Visible rows that the context pack may show (see the module docstring)."""
        t = self.table
        mask = pc.and_(self.visible, pc.invert(self._type_is(("redaction",))))
        hidden = self.hidden()
        if hidden:
            targets = _strings([*hidden, *("summary:" + h for h in hidden)])
            pointing = pc.and_(
                pc.false_if_null(pc.is_in(t.column("target"), targets)),
                pc.invert(self._type_is(("capsule_close",))),
            )
            mask = pc.and_(mask, pc.invert(pointing))
            # capsule_close rows: the target column is the capsule, so read the body
            closes = pc.and_(mask, self._type_is(("capsule_close",)))
            bodies = pc.filter(t.column("body"), closes)
            targeted = pc.false_if_null(
                pc.call("match_substring", [bodies], _match_options('"target": '))
            )
            rows = pc.filter(_positions(closes), targeted).to_pylist()
            dropped = [e.id for e in self._take_rows(rows) if _points_at(e.field("target"), hidden)]
            if dropped:
                mask = pc.and_(
                    mask, pc.invert(pc.false_if_null(pc.is_in(t.column("id"), _strings(dropped))))
                )
        return mask

    def _session_keys(self, mask: Column) -> tuple[pa.Array, pa.Array, pa.Array, list[str]]:
        """Row numbers, times and session codes of the rows where ``mask`` is
        true, and the key each code below :data:`DAY_CODE` stands for.

        Codes are integers (hashing and counting them is several times
        cheaper than building key strings): scope sessions and capsule
        sessions share one numbering, days are ``DAY_CODE + day number``."""
        import numpy as np
        import pyarrow as pa

        t = self.table
        numbers = _positions(mask)
        times = _contiguous(pc.filter(t.column("time"), mask))
        sessions = pc.call("dictionary_encode", [_contiguous(pc.filter(t.column("session"), mask))])
        names: list[str] = []
        code: dict[str, int] = {}

        def number(key: str) -> int:
            if key not in code:
                code[key] = len(names)
                names.append(key)
            return code[key]

        scoped_codes = [
            None if not s else number("s:" + s) for s in sessions.dictionary.to_pylist()
        ]
        scoped = pc.call("take", [pa.array(scoped_codes, pa.int64()), sessions.indices])
        mapping = capsule_sessions(self.of_types(["capsule_open"]))
        codes = pa.array([number(key) for key in mapping.values()], pa.int64())
        if scoped.null_count == 0:  # every row has a scope session: nothing falls back
            return numbers, times, scoped, names
        # Only the rows without a scope session fall back to their capsule's
        # session, their open's own key, or the day: looked up for those alone.
        session = t.column("session")
        unscoped = pc.or_(pc.call("is_null", [session]), pc.false_if_null(pc.equal(session, "")))
        rows = pc.and_(mask, unscoped)
        keys = []
        if mapping:
            opens = pa.array(list(mapping), pa.string())
            for name in ("capsule", "id"):
                column = _contiguous(pc.filter(t.column(name), rows))
                keys.append(
                    pc.call("take", [codes, pc.call("index_in", [column], _set_options(opens))])
                )
        day = _contiguous(pc.filter(t.column("time"), rows))
        keys.append(pc.call("add", [pc.call("divide", [day, DAY_US]), DAY_CODE]))
        merged = pc.to_numpy(pc.call("coalesce", [scoped, -1]), "int64")
        merged[np.flatnonzero(pc.to_numpy(pc.call("is_null", [scoped]), "bool"))] = pc.to_numpy(
            pc.call("coalesce", keys), "int64"
        )
        return numbers, times, pc.int64s(merged), names

    def sessions(self, recent: int, session: str | None, tail: int) -> SessionWindow:
        """The ``recent`` sessions of latest activity plus ``session`` when it
        has events, each with its newest ``tail`` events; the rest aggregated.

        The codes are numbered densely in order of first appearance
        (``dictionary_encode``); numpy then counts each session's rows and
        finds its first row (where the running largest number grows) and its
        last; only the distinct sessions reach Python."""
        import numpy as np

        numbers, times, keys, names = self._session_keys(self._showable())
        n = len(keys)
        if n == 0:
            return SessionWindow((), None)
        encoded = pc.call("dictionary_encode", [keys])
        code_list: list[int] = encoded.dictionary.to_pylist()
        dense = pc.to_numpy(encoded.indices, "int32")
        counts: list[int] = np.bincount(dense, minlength=len(code_list)).tolist()
        running = np.maximum.accumulate(dense)
        appears = np.empty(n, dtype=bool)
        appears[0] = True
        np.greater(running[1:], running[:-1], out=appears[1:])
        firsts = np.flatnonzero(appears)  # the first row of each number, in order
        lasts = np.zeros(len(code_list), dtype=np.int64)
        np.maximum.at(lasts, dense, np.arange(n, dtype=np.int64))
        at = pc.to_numpy(times, "int64")
        first_times: list[int] = at[firsts].tolist()
        last_times: list[int] = at[lasts].tolist()
        last_rows: list[int] = lasts.tolist()
        order = sorted(range(len(code_list)), key=lambda i: last_rows[i])
        chosen = order[-recent:] if recent > 0 else []
        wanted = names.index("s:" + session) if session and "s:" + session in names else None
        if wanted is not None and wanted in code_list:
            extra = code_list.index(wanted)
            if extra not in chosen:
                chosen = sorted([*chosen, extra], key=lambda i: last_rows[i])
        taken = set(chosen)
        rest = [i for i in order if i not in taken]
        older = (
            OlderSessions(
                len(rest),
                sum(counts[i] for i in rest),
                min(first_times[i] for i in rest),
                max(last_times[i] for i in rest),
            )
            if rest
            else None
        )
        tails = self._tails(numbers, keys, [code_list[i] for i in chosen], tail)

        def key(code: int) -> str:
            return names[code] if code < DAY_CODE else "d:" + iso_date((code - DAY_CODE) * DAY_US)

        recent_stats = tuple(
            SessionStats(
                key(code_list[i]),
                counts[i],
                first_times[i],
                last_times[i],
                tuple(tails[code_list[i]]),
            )
            for i in chosen
        )
        return SessionWindow(recent_stats, older)

    def _tails(
        self, numbers: pa.Array, keys: pa.Array, chosen: list[int], tail: int
    ) -> dict[int, list[Event]]:
        """The newest ``tail`` (at least one) rows of each chosen session, as events."""
        import pyarrow as pa

        tail = max(tail, 1)
        mask = pc.false_if_null(pc.is_in(keys, pa.array(chosen, pa.int64())))
        sub_keys = pc.filter(keys, mask).to_pylist()
        sub_rows = pc.filter(numbers, mask).to_pylist()
        picked: dict[int, list[int]] = {key: [] for key in chosen}
        full = 0
        for key, row in zip(reversed(sub_keys), reversed(sub_rows), strict=True):
            rows = picked[key]
            if len(rows) < tail:
                rows.append(row)
                full += len(rows) == tail
                if full == len(chosen):
                    break
        every = sorted(r for rows in picked.values() for r in rows)
        by_row = dict(zip(every, self._take_rows(every), strict=True))
        return {key: [by_row[r] for r in reversed(rows)] for key, rows in picked.items()}


def _positions(mask: Column) -> pa.Array:
    """The row numbers where ``mask`` is true (null: false), as an int64 array."""
    import numpy as np

    return pc.int64s(np.flatnonzero(pc.to_numpy(pc.false_if_null(mask), "bool")))


def _falses(n: int) -> Column:
    """A mask of ``n`` false values."""
    return pc.all_false(n)


def _points_at(target: object, hidden: frozenset[str]) -> bool:
    """Whether a ``target`` body field names one of ``hidden`` (``summary:`` prefix allowed)."""
    return isinstance(target, str) and target.removeprefix("summary:") in hidden


def _set_options(values: Column) -> _c.SetLookupOptions:
    import pyarrow._compute as _c

    return _c.SetLookupOptions(_contiguous(values))


def _match_options(pattern: str) -> _c.MatchSubstringOptions:
    import pyarrow._compute as _c

    return _c.MatchSubstringOptions(pattern)
