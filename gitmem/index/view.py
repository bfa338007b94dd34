"""Reading memory through the sidecar indexes.

:class:`IndexView` answers the same questions as
:class:`~gitmem.memory.api.Memory` (``events``, ``get``, ``branch``,
``window``) from the memory-mapped Arrow tables, so a query over 100,000
events neither walks the commit graph nor imports libgit2. Opening one
refreshes the indexes first when they are stale (new memory commits, events
waiting in the capture spool, hook intents not yet applied).

A view holds its generation's files open (memory maps of the tables, the
Tantivy and usearch indexes) until :meth:`IndexView.close`; a long-lived
reader (the MCP server, the daemon) closes it, or uses it as a context
manager, so a later refresh's files replace these without a process holding
the old ones for hours.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from gitmem.errors import AmbiguousIdError, IndexDamagedError, NotFoundError, UsageError
from gitmem.index import compute as pc
from gitmem.index import table as tables
from gitmem.index.decode import rows_to_events
from gitmem.index.manifest import Manifest, check_generation, index_root
from gitmem.index.opening import DEFAULT_WAIT
from gitmem.index.state import RefreshReport
from gitmem.memory.event import Event
from gitmem.memory.follow import TRUNK_TYPES, follow_mode, id_prefix
from gitmem.memory.query import EventFilter
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.storage.gitconfig import Config, get_last
from gitmem.storage.locate import RepoLocation, memory_branch

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.embed.base import Embedder
    from gitmem.index.codes import Codes
    from gitmem.index.compute import Column
    from gitmem.index.fulltext import FullText
    from gitmem.index.keyrows import KeyRows
    from gitmem.index.links import CommitLinks
    from gitmem.index.vectorshards import VectorShards
    from gitmem.index.window import IndexWindow
    from gitmem.memory.source import BranchKwargs
    from gitmem.memory.window import BranchWindow


def _closed() -> UsageError:
    return UsageError("this index view is closed", "open a new one with IndexView.open")


class IndexView:
    """A read-only view of memory backed by the sidecar indexes."""

    def __init__(
        self,
        location: RepoLocation,
        config: Config,
        manifest: Manifest,
        *,
        stale: bool = False,
        report: RefreshReport | None = None,
    ) -> None:
        self.location = location
        self.config = config
        self.manifest = manifest
        self.root = index_root(location)
        self.directory = self.root / manifest.generation
        self.stale = stale  # another process was still building: this is the previous version
        self.report = report
        # Nothing is mapped before the files match the manifest: Arrow does not
        # check its data, and a flipped offset can drop rows or crash the process.
        self.checked_files = check_generation(self.directory, manifest)
        from gitmem.index.segments import read_segments

        table, _counts = read_segments(self.directory, manifest.segments)
        rows = table.num_rows
        if rows != manifest.events:
            del table  # the error's traceback must not keep the file mapped
            raise IndexDamagedError(
                f"the events table holds {rows} rows, the manifest says {manifest.events}"
            )
        self._table: pa.Table | None = table
        self._members: pa.Table | None = tables.read(
            self.directory / tables.MEMBERS_FILE, tables.member_schema()
        )
        self._fulltext: FullText | None = None
        self._vectors: VectorShards | None = None
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self._keys: KeyRows | None = None
        self._commit_counts: tuple[Any, Any] | None = None  # per memory commit: its events
        self._links: CommitLinks | None = None  # the commit links, by capsule and session
        # Per branch (resolved: a checkout between two queries changes the key),
        # what its queries share: the table never changes under a view.
        self._pools: dict[tuple[str | None, str | None], Column] = {}
        self._windows: dict[tuple[str | None, bool, str | None], IndexWindow] = {}
        self._codes: dict[str, Codes] = {}
        self._closed = False

    # lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        """Release what the view holds: the memory-mapped tables, the
        full-text and vector indexes, the embedder and every cache built from
        them, so the generation's files can be replaced or removed (a mapped
        file cannot be, on Windows). Idempotent; using the view afterwards
        raises :class:`~gitmem.errors.UsageError`."""
        if self._closed:
            return
        self._closed = True
        fulltext, vectors = self._fulltext, self._vectors
        self._table = self._members = None
        self._fulltext = self._vectors = self._embedder = None
        self._keys = self._links = self._commit_counts = None
        self._pools, self._windows, self._codes = {}, {}, {}
        if fulltext is not None:
            fulltext.close()
        if vectors is not None:
            vectors.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> IndexView:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def table(self) -> pa.Table:
        """The events table, one row per event in (time, id) order (memory-mapped)."""
        if self._table is None:
            raise _closed()
        return self._table

    @property
    def members(self) -> pa.Table:
        """Which memory chain reaches which memory commit (memory-mapped)."""
        if self._members is None:
            raise _closed()
        return self._members

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        refresh: bool = True,
        wait: float = DEFAULT_WAIT,
        embed: bool = True,
    ) -> IndexView:
        """Open the view of the repository at ``path``, refreshing stale indexes
        and rebuilding damaged ones (see :mod:`gitmem.index.opening`).

        When another process is building, wait up to ``wait`` seconds, then
        read the previous version (``stale`` is then True). With no previous
        version at all, wait for the build.
        """
        from gitmem.index.opening import open_view

        return open_view(cls, path, refresh=refresh, wait=wait, embed=embed)

    # where ------------------------------------------------------------------------
    @property
    def branch(self) -> str | None:
        return memory_branch(self.location)

    @property
    def trunk(self) -> str | None:
        return get_last(self.config, "edda.trunk") or self.manifest.trunk

    # the pieces search needs, opened on first use ------------------------------------
    @property
    def fulltext(self) -> FullText:
        """The full-text index."""
        if self._closed:
            raise _closed()
        if self._fulltext is None:
            from gitmem.index.fulltext import FullText

            self._fulltext = FullText(self.directory / self.manifest.fulltext)
        return self._fulltext

    @property
    def vectors(self) -> VectorShards | None:
        """The vector index (memory-mapped), or None when there is none."""
        if self._closed:
            raise _closed()
        if self._vectors is None and self.manifest.model and self.manifest.dim:
            from gitmem.index.vectorshards import VectorShards, listed

            names = listed(self.manifest.files)
            if names and all((self.directory / n).exists() for n in names):
                self._vectors = VectorShards(self.directory, self.manifest.dim, names, view=True)
        return self._vectors

    @property
    def embedder(self) -> Embedder | None:
        """The configured query embedder, loaded once per view (None: vectors disabled).

        Loaded in the calling thread: the tokenizer's load holds the GIL, so a
        background thread would only interleave with the query, not overlap it."""
        if self._closed:
            raise _closed()
        if not self._embedder_loaded:
            from gitmem.embed import get_embedder
            from gitmem.embed.base import Preloading

            embedder = get_embedder(self.config, stamp_dir=self.root)
            if isinstance(embedder, Preloading):
                embedder.load()
            self._embedder, self._embedder_loaded = embedder, True
        return self._embedder

    # rows -> events ---------------------------------------------------------------------
    def events_at(self, rows: Sequence[int]) -> list[Event]:
        """Events at row positions (zero-copy slices: ``Table.take`` copies
        whole chunks and costs ~10 ms on a 100,000-row table)."""
        import pyarrow as pa

        if not rows:
            return []
        return rows_to_events(pa.concat_tables([self.table.slice(r, 1) for r in rows]))

    def values_at(self, column: str, rows: Sequence[int]) -> list[Any]:
        """One column's values at row positions (as Python values of the column's type)."""
        if column == "key64":  # kept as one numpy array already
            keys: list[Any] = self._key_rows().values[list(rows)].tolist()
            return keys
        values = self.table.column(column)
        return [values[r].as_py() for r in rows]

    def rows_for_keys(self, keys: Sequence[int]) -> list[int | None]:
        """Row positions of events by key64 (None for keys not in the table;
        the first row when two events share a key); see :mod:`gitmem.index.keyrows`."""
        return self._key_rows().rows(keys)

    def key_values(self) -> Any:
        """Every row's key64 as one numpy array, in row order (read once)."""
        return self._key_rows().values

    def keys_in_order(self) -> tuple[Any, Any]:
        """Every row's key64 sorted (numpy), and the row of each: shared by
        key lookups and by searches that pick the allowed keys in order."""
        return self._key_rows().in_order()

    @property
    def keys_ordered(self) -> bool:
        """Whether :meth:`keys_in_order` is computed already (key lookups
        order the keys after their first few scans)."""
        return self._key_rows().is_sorted

    def _key_rows(self) -> KeyRows:
        if self._keys is None:
            from gitmem.index.keyrows import KeyRows

            self._keys = KeyRows(self.table.column("key64"))
        return self._keys

    def commit_links(
        self, capsules: Sequence[str] = (), sessions: Sequence[str] = ()
    ) -> list[tuple[int, str | None, str | None, str | None]]:
        """(time, session, capsule, sha) of every commit_link event in one of
        ``capsules`` or ``sessions``, in (time, id) order. The commit links
        are picked from the table and grouped once per view (a million events
        hold tens of thousands); see :mod:`gitmem.index.links`."""
        if self._links is None:
            from gitmem.index.links import CommitLinks

            self._links = CommitLinks(self.table)
        if not capsules and not sessions:
            return []
        return self._links.find(capsules, sessions)

    # selection ------------------------------------------------------------------------
    def _commits(self, ref: str) -> Column:
        """The memory commits a chain reaches."""
        return pc.filter(self.members, pc.equal(self.members.column("ref"), ref)).column("commit")

    def _own_ref(self, branch: str | None) -> str | None:
        ref = layout.branch_ref(branch)
        if ref in self.manifest.tips or branch is None:
            return ref
        # No memory yet: the branch shows what it would start from.
        from gitmem.memory.api import Memory

        with Memory(self.location, self.config) as mem:
            plan = mem.plan(branch, tips=dict(self.manifest.tips))
        if plan.kind in ("rename", "fork") and plan.source:
            return layout.branch_ref(plan.source)
        return None

    def pool_mask(self, branch: BranchArg = CURRENT_BRANCH, trunk: str | None = None) -> Column:
        """The rows a branch sees: its own chain, plus what it follows from the
        trunk (computed once per branch and view: ~50-100 ms at a million rows)."""
        branch = self.branch if isinstance(branch, CurrentBranch) else branch
        key = (branch, trunk)
        if key not in self._pools:
            self._pools[key] = self._pool_mask(branch, trunk)
        return self._pools[key]

    def _pool_mask(self, branch: str | None, trunk: str | None) -> Column:
        import pyarrow as pa
        import pyarrow._compute as _c

        commit = self.table.column("commit")
        own_ref = self._own_ref(branch)
        own = self._commits(own_ref) if own_ref is not None else pa.array([], pa.string())
        mode = self._follow_trunk(trunk)
        trunk_name = self.trunk if mode != "none" else None
        if trunk_name is None or trunk_name == branch:
            return pc.false_if_null(pc.is_in(commit, value_set=own))
        # One pass over the million commit ids for both chains: each row's
        # position among the branch's commits, then the trunk's others.
        # (Codes of the commit column would not pay: encoding them costs
        # what this pass costs.)
        theirs = self._commits(layout.branch_ref(trunk_name))
        theirs = pc.filter(theirs, pc.invert(pc.false_if_null(pc.is_in(theirs, value_set=own))))
        both = pa.concat_arrays([_array(own), _array(theirs)])
        found = pc.call("index_in", [commit], _c.SetLookupOptions(both))
        at = pc.to_numpy(pc.call("coalesce", [found, pa.scalar(-1, pa.int32())]), "int32")
        rows = (at >= 0) & (at < len(own))
        extra = at >= len(own)
        if mode != "all":
            extra &= self.codes("type").mask(sorted(TRUNK_TYPES))
        return pc.bools(rows | extra)

    def codes(self, column: str) -> Codes:
        """A string column as integer codes, encoded once per view (the
        ``type`` column: the rows of some types, asked for again and again
        by a context pack; see :mod:`gitmem.index.codes`)."""
        if self._closed:
            raise _closed()
        if column not in self._codes:
            from gitmem.index.codes import Codes

            self._codes[column] = Codes(self.table.column(column))
        return self._codes[column]

    def _follow_trunk(self, trunk: str | None) -> str:
        return follow_mode(self.config, trunk)

    def filter_mask(
        self,
        where: EventFilter | None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        trunk: str | None = None,
    ) -> Column:
        """A boolean mask over the events table: the columns a filter can be
        checked on (the rest, tags and paths globs, is checked per event)."""
        import pyarrow as pa

        t = self.table
        mask = pc.all_true(t.num_rows) if all_branches else self.pool_mask(branch, trunk)
        if where is None:
            return mask

        def member(column: str, values: Sequence[str]) -> Column:
            return pc.false_if_null(
                pc.is_in(t.column(column), value_set=pa.array(list(values), pa.string()))
            )

        if where.types:
            mask = pc.and_(mask, pc.bools(self.codes("type").mask(where.types)))
        if where.since is not None:
            mask = pc.and_(mask, pc.greater_equal(t.column("time"), where.since))
        if where.until is not None:
            mask = pc.and_(mask, pc.less(t.column("time"), where.until))
        if where.sessions:
            mask = pc.and_(mask, member("session", where.sessions))
        if where.capsules:
            mask = pc.and_(
                mask, pc.or_(member("capsule", where.capsules), member("id", where.capsules))
            )
        if where.actors:
            mask = pc.and_(
                mask, pc.or_(member("agent", where.actors), member("user", where.actors))
            )
        if not where.include_redacted:
            mask = pc.and_(mask, pc.invert(t.column("redacted")))
        return mask

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """Events in (time, id) order, as :meth:`Memory.events` selects them."""

        mask = self.filter_mask(where, branch=branch, all_branches=all_branches, trunk=trunk)
        if where is None or not (where.tags or where.paths):
            if limit:
                # Only the last rows are wanted: take them, instead of copying
                # every allowed row (a million, with their bodies) to keep 20.
                return rows_to_events(pc.rows_at(self.table, _last_true(mask, limit)))
            return rows_to_events(pc.filter(self.table, mask))
        rows = pc.filter(self.table, mask)
        chosen = [e for e in rows_to_events(rows) if where.matches(e)]
        return chosen[-limit:] if limit else chosen

    def get(self, event_id: str) -> Event:
        """An event by id or unique id prefix (at least 4 hex characters), on any branch."""
        import numpy as np

        prefix = id_prefix(event_id)
        # The key64 column holds every id's first 16 hex digits as a number:
        # the ids a prefix can name are one range of it (a million ids are
        # not turned into strings for one lookup).
        head = prefix[:16]
        low, high = int(head.ljust(16, "0"), 16), int(head.ljust(16, "f"), 16)
        keys = self._key_rows().values
        candidates = np.flatnonzero((keys >= np.uint64(low)) & (keys <= np.uint64(high)))
        column = self.table.column("id")
        rows: dict[str, int] = {}
        for row in candidates.tolist():
            eid = column[row].as_py()
            if eid.startswith(prefix):
                rows[eid] = row
        found = [prefix] if prefix in rows else sorted(rows)
        if not found:
            raise NotFoundError(
                f"no event with id {event_id}", "list ids with 'git edda log --all-branches'"
            )
        if len(found) > 1:
            raise AmbiguousIdError(
                f"id prefix {event_id} matches {len(found)} events: {', '.join(f[:12] for f in found[:5])}",
                "give more characters of the id",
            )
        return rows_to_events(self.table.slice(rows[found[0]], 1))[0]

    def counts(self, branch: str | None) -> dict[str, int | None]:
        """The event counts of :meth:`Memory.status <gitmem.memory.api.Memory.status>`:
        events on ``branch``'s own chain, in all, redacted, memory refs, and the
        newest event's time."""
        t = self.table
        on_branch = self.chain_size(layout.branch_ref(branch))
        redacted = pc.filter(t.column("id"), t.column("redacted")).length()
        times = t.column("time")
        # rows are sorted by time: each chunk's last row is its newest
        last = max((c[len(c) - 1].as_py() for c in times.chunks if len(c)), default=None)
        return {
            "events_on_branch": on_branch,
            "events_total": t.num_rows,
            "redacted": int(redacted),
            "memory_refs": len(self.manifest.tips),
            "last_event_time": last,
        }

    def chain_size(self, ref: str) -> int:
        """Events on one memory chain (inherited ones included), as
        :meth:`Memory.branches <gitmem.memory.api.Memory.branches>` counts them."""
        if ref not in self.manifest.tips:
            return 0
        if self._commit_counts is None:
            # events per memory commit, once: a chain's size is then a sum over
            # its commits (a tenth of the rows) instead of a pass over every event
            counts = pc.call("value_counts", [self.table.column("commit")])
            self._commit_counts = (counts.field("values"), counts.field("counts"))
        commits, counts = self._commit_counts
        own = pc.false_if_null(pc.is_in(commits, value_set=self._commits(ref)))
        total = pc.call("sum", [pc.filter(counts, own)]).as_py()
        return int(total or 0)

    def window(self, branch_kwargs: BranchKwargs) -> BranchWindow:
        """A branch's events fetched by need, for context packs and ``ask``
        (an :class:`~gitmem.index.window.IndexWindow`; ``branch_kwargs`` as for
        :meth:`events`)."""
        from gitmem.index.window import IndexWindow

        if self._closed:
            raise _closed()
        branch = branch_kwargs.get("branch", CURRENT_BRANCH)
        resolved = self.branch if isinstance(branch, CurrentBranch) else branch
        every, trunk = bool(branch_kwargs.get("all_branches", False)), branch_kwargs.get("trunk")
        key = (resolved, every, trunk)
        if key not in self._windows:
            # One window per branch and view: its masks, decision ledger and
            # book are computed once however many queries ask.
            self._windows[key] = IndexWindow(self, {**branch_kwargs, "branch": resolved})
        return self._windows[key]


def _last_true(mask: Any, limit: int) -> Any:
    """The positions of the last ``limit`` true values of ``mask`` (a boolean
    array or chunked array; null counts as false), in order."""
    import numpy as np

    return np.flatnonzero(pc.to_numpy(pc.false_if_null(mask), "bool"))[-limit:]


def _array(values: Column) -> Any:
    """``values`` as one array (a filter of a table's column has chunks)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values
