"""A branch's events fetched by need from the index (the ``window`` capability).

:class:`IndexWindow` implements
:class:`~gitmem.memory.window.BranchWindow` over an
:class:`~gitmem.index.view.IndexView`: selections are Arrow masks over the
memory-mapped events table, and only the chosen rows are turned into
:class:`~gitmem.memory.event.Event` objects (decoding JSON is what costs).
Session statistics are computed column-wise: each showable row gets an
integer session code from Arrow kernels, then ``value_counts`` gives the
sizes and ``index_in`` the first and last row of every session, so 100,000
events cost a few milliseconds and only the distinct sessions reach Python.

The session keys are exactly those of
:func:`gitmem.memory.window.session_key` (scope session, the
capsule's session, the open's own key, else the UTC day), and "showable"
is what the context pack shows: visible, not a ``redaction``, not pointing
at an invisible event of the branch. For ``capsule_close`` rows the index's
``target`` column holds the closed capsule, not a ``target`` body field, so
those few rows are checked on their decoded bodies instead.

Kernels are called through :mod:`gitmem.index.compute` (and
``pyarrow._compute`` by name for the few it does not wrap), never
``pyarrow.compute``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gitmem.index import compute as pc
from gitmem.memory.describe import iso_date
from gitmem.memory.event import Event
from gitmem.memory.query import paths_overlap
from gitmem.memory.window import (
    BranchWindow,
    DecisionLedger,
    OlderSessions,
    SessionStats,
    SessionWindow,
    capsule_sessions,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.index.view import IndexView

__all__ = ["IndexWindow", "window"]

DAY_US = 86_400_000_000
DAY_CODE = 1 << 40  # session codes from here on are UTC days (see _session_keys)
_EVENT_COLUMNS = ("envelope", "body", "ref", "commit", "redacted")  # what rows_to_events reads


def window(view: IndexView, branch_kwargs: dict[str, Any]) -> BranchWindow:
    """The window of one branch (``branch_kwargs`` as for ``view.events``)."""
    return IndexWindow(view, branch_kwargs)


def _kernel(name: str, args: list[Any], options: Any = None) -> Any:
    """An Arrow kernel by name (for those :mod:`gitmem.index.compute` does not wrap)."""
    import pyarrow as pa
    import pyarrow._compute as _c

    arrow = (pa.Array, pa.ChunkedArray, pa.Scalar, pa.Table, pa.RecordBatch)
    values = [a if isinstance(a, arrow) else pa.scalar(a) for a in args]
    return _c.call_function(name, values, options)


def _strings(values: Iterable[str]) -> Any:
    """A sorted, distinct string array (a value set for ``is_in``)."""
    import pyarrow as pa

    return pa.array(sorted(set(values)), pa.string())


def _contiguous(values: Any) -> Any:
    """A ChunkedArray as one Array (kernels' outputs then line up row for row)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


class IndexWindow:
    """Selective reads of one branch through the index (see the module docstring)."""

    def __init__(self, view: IndexView, branch_kwargs: dict[str, Any]) -> None:
        self.view = view
        self.branch_kwargs = dict(branch_kwargs)
        self._pool: Any = None
        self._visible: Any = None
        self._rownum: Any = None
        self._hidden: frozenset[str] | None = None
        self._types: tuple[Any, list[str]] | None = None
        self._cache: dict[tuple[str, ...], list[Event]] = {}

    @property
    def table(self) -> pa.Table:
        """The view's events table (read through the view: a closed view refuses)."""
        return self.view.table

    # masks -------------------------------------------------------------------------------
    @property
    def pool(self) -> Any:
        """The rows the branch sees."""
        if self._pool is None:
            self._pool = _contiguous(self.view.filter_mask(None, **self.branch_kwargs))
        return self._pool

    @property
    def visible(self) -> Any:
        """The branch's rows that are visible (not redacted, body present)."""
        if self._visible is None:
            t = self.table
            shown = pc.and_(
                _kernel("is_valid", [t.column("body")]), pc.invert(t.column("redacted"))
            )
            self._visible = _contiguous(pc.and_(self.pool, shown))
        return self._visible

    @property
    def rownum(self) -> Any:
        """0, 1, … n-1 (row numbers, to take full rows after filtering light columns)."""
        if self._rownum is None:
            self._rownum = _numbers(self.table.num_rows)
        return self._rownum

    def _of(self, mask: Any) -> Any:
        """``mask`` restricted to the branch's rows."""
        return pc.and_(self.pool, mask)

    def _type_is(self, types: Sequence[str]) -> Any:
        """Rows of these types (any branch).

        The type column is dictionary-encoded once per window: a mask is then
        a lookup of a few small integers instead of hashing 100,000 strings."""
        import pyarrow as pa

        if self._types is None:
            encoded = _kernel("dictionary_encode", [_contiguous(self.table.column("type"))])
            self._types = (encoded.indices, encoded.dictionary.to_pylist())
        indices, names = self._types
        wanted = set(types)
        codes = pa.array([i for i, name in enumerate(names) if name in wanted], pa.int32())
        return pc.false_if_null(pc.is_in(indices, codes))

    def _rows(self, mask: Any, *, last: int | None = None) -> list[Event]:
        """Events of the rows where ``mask`` is true (the newest ``last`` of them).

        Filtering with a mask works chunk by chunk; ``take`` on the chunked
        table would first concatenate every chunk of the JSON columns (~13 ms)."""
        rows = pc.filter(self.table.select(list(_EVENT_COLUMNS)), mask)
        if last is not None:
            rows = rows.slice(max(0, rows.num_rows - last))
        return self.view.rows_to_events(rows) if rows.num_rows else []

    def _take_rows(self, rows: Iterable[int]) -> list[Event]:
        """Events of these row numbers, in table order."""
        import pyarrow as pa

        wanted = pa.array(sorted(set(rows)), pa.int64())
        if len(wanted) == 0:
            return []
        return self._rows(pc.false_if_null(pc.is_in(self.rownum, wanted)))

    # BranchWindow ------------------------------------------------------------------------
    def of_types(self, types: Sequence[str]) -> list[Event]:
        """Every event of these types, visible or not."""
        key = tuple(sorted(set(types)))
        if key not in self._cache:
            self._cache[key] = self._rows(self._of(self._type_is(key))) if key else []
        return list(self._cache[key])

    def newest(self, event_type: str, count: int) -> list[Event]:
        """The newest ``count`` visible events of one type."""
        if count <= 0:
            return []
        mask = pc.and_(self.visible, self._type_is((event_type,)))
        return self._rows(mask, last=count)

    def by_ids(self, ids: Iterable[str]) -> list[Event]:
        """The branch's events with these (full) ids."""
        wanted = _strings(ids)
        if len(wanted) == 0:
            return []
        return self._rows(self._of(pc.false_if_null(pc.is_in(self.table.column("id"), wanted))))

    def _touching_rows(self, mask: Any, paths: Sequence[str]) -> list[int]:
        """Row numbers, among those where ``mask`` is true, whose paths overlap ``paths``.

        The ``paths`` column is flattened, each distinct path is tested once
        (:func:`~gitmem.memory.query.paths_overlap`), and the rows holding
        a matching path are kept."""
        if not paths:
            return []
        numbers = _contiguous(pc.filter(self.rownum, mask))
        lists = _contiguous(pc.filter(self.table.column("paths"), mask))
        if len(lists) == 0:
            return []
        flat = _kernel("list_flatten", [lists])
        distinct = _kernel("unique", [flat]).to_pylist()
        matching = [p for p in distinct if p is not None and paths_overlap([p], paths)]
        if not matching:
            return []
        parents = _kernel("list_parent_indices", [lists])
        hit = pc.filter(parents, pc.false_if_null(pc.is_in(flat, _strings(matching))))
        rows: list[int] = _kernel("take", [numbers, _kernel("unique", [hit])]).to_pylist()
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
        rows: set[int] = set(pc.filter(self.rownum, pc.and_(base, wanted)).to_pylist())
        rest = pc.and_(base, pc.invert(wanted))
        if len(session_set) and "commit_link" in types:
            # a commit link records the session it came from in its body
            links = pc.and_(rest, self._type_is(("commit_link",)))
            bodies = pc.filter(t.column("body"), links)
            named = _falses(len(bodies))
            for session in session_set.to_pylist():
                needle = '"session": ' + json.dumps(session, ensure_ascii=False)
                found = _kernel("match_substring", [bodies], _match_options(needle))
                named = pc.or_(named, pc.false_if_null(found))
            rows.update(pc.filter(pc.filter(self.rownum, links), named).to_pylist())
        rows.update(self._touching_rows(rest, sorted(set(paths))))
        return self._take_rows(rows)

    def hidden(self) -> frozenset[str]:
        """Ids of the branch's events that are not visible."""
        if self._hidden is None:
            rows = pc.and_(self.pool, pc.invert(self.visible))
            ids = pc.filter(self.table.column("id"), rows).to_pylist()
            self._hidden = frozenset(str(i) for i in ids)
        return self._hidden

    def decisions(self) -> DecisionLedger:
        """The ledger of the branch's visible decisions and ratifications."""
        t = self.table
        mask = pc.and_(self.visible, self._type_is(("decision", "ratify")))

        def column(name: str) -> list[Any]:
            values: list[Any] = pc.filter(t.column(name), mask).to_pylist()
            return values

        def text(name: str) -> tuple[str, ...]:
            return tuple(v or "" for v in column(name))

        return DecisionLedger(
            text("id"),
            text("type"),
            text("key"),
            text("target"),
            tuple(column("time")),
            tuple(column("agent")),
            tuple(tuple(p or ()) for p in column("paths")),
            text("line"),
        )

    def capsule_counts(self) -> dict[str, int]:
        """Events per capsule id (every event of the branch, visible or not)."""
        capsules = pc.filter(self.table.column("capsule"), self.pool)
        counted = _kernel("value_counts", [capsules])
        values = counted.field(0).to_pylist()
        counts = counted.field(1).to_pylist()
        return {v: int(c) for v, c in zip(values, counts, strict=True) if v}

    def everything(self) -> list[Event]:
        """All the branch's events."""
        return self.view.events(**self.branch_kwargs)

    # sessions ----------------------------------------------------------------------------
    def _showable(self) -> Any:
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
                _kernel("match_substring", [bodies], _match_options('"target": '))
            )
            rows = pc.filter(pc.filter(self.rownum, closes), targeted).to_pylist()
            dropped = [e.id for e in self._take_rows(rows) if _points_at(e.field("target"), hidden)]
            if dropped:
                mask = pc.and_(
                    mask, pc.invert(pc.false_if_null(pc.is_in(t.column("id"), _strings(dropped))))
                )
        return mask

    def _session_keys(self, mask: Any) -> tuple[Any, Any, Any, list[str]]:
        """Row numbers, times and session codes of the rows where ``mask`` is
        true, and the key each code below :data:`DAY_CODE` stands for.

        Codes are integers (hashing and counting them is several times
        cheaper than building key strings): scope sessions and capsule
        sessions share one numbering, days are ``DAY_CODE + day number``."""
        import pyarrow as pa

        t = self.table
        numbers = _contiguous(pc.filter(self.rownum, mask))
        times = _contiguous(pc.filter(t.column("time"), mask))
        sessions = _kernel("dictionary_encode", [_contiguous(pc.filter(t.column("session"), mask))])
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
        keys = [_kernel("take", [pa.array(scoped_codes, pa.int64()), sessions.indices])]
        mapping = capsule_sessions(self.of_types(["capsule_open"]))
        if mapping:
            opens = pa.array(list(mapping), pa.string())
            codes = pa.array([number(key) for key in mapping.values()], pa.int64())
            for name in ("capsule", "id"):
                column = _contiguous(pc.filter(t.column(name), mask))
                keys.append(
                    _kernel("take", [codes, _kernel("index_in", [column], _set_options(opens))])
                )
        keys.append(_kernel("add", [_kernel("divide", [times, DAY_US]), DAY_CODE]))
        return numbers, times, _kernel("coalesce", keys), names

    def sessions(self, recent: int, session: str | None, tail: int) -> SessionWindow:
        """The ``recent`` sessions of latest activity plus ``session`` when it
        has events, each with its newest ``tail`` events; the rest aggregated.

        ``value_counts`` sizes every session; ``index_in`` of the distinct
        codes into the codes (and into them reversed) finds each session's
        first and last row; only the distinct sessions reach Python."""
        numbers, times, keys, names = self._session_keys(self._showable())
        n = len(keys)
        if n == 0:
            return SessionWindow((), None)
        counted = _kernel("value_counts", [keys])
        codes = counted.field(0)
        counts: list[int] = counted.field(1).to_pylist()
        firsts = _kernel("index_in", [codes], _set_options(keys))
        backwards = _kernel("take", [keys, _kernel("subtract", [n - 1, _numbers(n)])])
        lasts = _kernel("subtract", [n - 1, _kernel("index_in", [codes], _set_options(backwards))])
        first_times: list[int] = _kernel("take", [times, firsts]).to_pylist()
        last_times: list[int] = _kernel("take", [times, lasts]).to_pylist()
        last_rows: list[int] = lasts.to_pylist()
        code_list: list[int] = codes.to_pylist()
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
        self, numbers: Any, keys: Any, chosen: list[int], tail: int
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


def _numbers(n: int) -> Any:
    """0, 1, … n-1 as an int64 array."""
    import pyarrow as pa

    if n == 0:
        return pa.array([], pa.int64())
    ones = pa.repeat(pa.scalar(1, pa.int64()), n)
    return _kernel("subtract", [_kernel("cumulative_sum", [ones]), 1])


def _falses(n: int) -> Any:
    """A mask of ``n`` false values."""
    return pc.invert(pc.all_true(n))


def _points_at(target: Any, hidden: frozenset[str]) -> bool:
    """Whether a ``target`` body field names one of ``hidden`` (``summary:`` prefix allowed)."""
    return isinstance(target, str) and target.removeprefix("summary:") in hidden


def _set_options(values: Any) -> Any:
    import pyarrow._compute as _c

    return _c.SetLookupOptions(_contiguous(values))


def _cast_options(target: Any) -> Any:
    import pyarrow._compute as _c

    return _c.CastOptions(target)


def _match_options(pattern: str) -> Any:
    import pyarrow._compute as _c

    return _c.MatchSubstringOptions(pattern)
