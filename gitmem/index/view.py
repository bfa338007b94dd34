"""Reading memory through the sidecar indexes.

:class:`IndexView` answers the same questions as
:class:`~gitmem.memory.api.Memory` (``events``, ``get``, ``branch``) from the
memory-mapped Arrow tables, so a query over 100,000 events neither walks the
commit graph nor imports libgit2. Opening one refreshes the indexes first when
they are stale (new memory commits, events waiting in the capture spool,
hook intents not yet applied).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import msgspec

from gitmem.errors import AmbiguousIdError, IndexDamagedError, NotFoundError
from gitmem.index import compute as pc
from gitmem.index import table as tables
from gitmem.index.integrity import unchanged
from gitmem.index.refresh import (
    LOCK_TIMEOUT,
    Manifest,
    RefreshReport,
    check_generation,
    index_root,
    is_fresh,
    read_manifest,
)
from gitmem.memory.event import Event
from gitmem.memory.follow import TRUNK_TYPES, follow_mode, id_prefix
from gitmem.memory.query import EventFilter
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.storage.gitconfig import Config, get_last, read_config
from gitmem.storage.locate import RepoLocation, locate, memory_branch

_SCANS = 4  # key lookups answered by a linear scan before the keys are sorted once
DEFAULT_WAIT = (
    5.0  # seconds a reader waits for another process's build before reading the previous version
)

_NOT_LOADED: Any = object()  # the embedder before its first use


def _pending_work(location: RepoLocation) -> bool:
    """Events in the capture spool or hook intents not yet applied."""
    from gitmem.branches.intents import has_pending
    from gitmem.storage import spool

    return bool(spool.pending(location.state_dir)) or has_pending(location.state_path)


_DECODE = msgspec.json.Decoder().decode


def _decode(text: str) -> Any:
    """A stored JSON document. msgspec reads these small documents about twice
    as fast as ``json.loads`` (a context pack decodes thousands); anything it
    refuses but the standard library accepts (say, an escaped lone surrogate
    written by an older version) still decodes."""
    try:
        return _DECODE(text)
    except msgspec.DecodeError:
        return json.loads(text)


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
        self._checked_files = check_generation(self.directory, manifest)
        self.table = tables.read(self.directory / tables.EVENTS_FILE, tables.event_schema())
        self.members = tables.read(self.directory / tables.MEMBERS_FILE, tables.member_schema())
        if self.table.num_rows != manifest.events:
            raise IndexDamagedError(
                f"{tables.EVENTS_FILE} holds {self.table.num_rows} rows, the manifest says {manifest.events}"
            )
        self._fulltext: Any = None
        self._vectors: Any = None
        self._ids: dict[str, int] | None = None
        self._embedder: Any = _NOT_LOADED
        self._keys: Any = None  # the key64 column as one numpy array
        self._key_sort: Any = None  # (sorted keys, their rows), once lookups are many
        self._lookups = 0
        self._links: list[tuple[int, str | None, str | None, str | None]] | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        refresh: bool = True,
        wait: float = DEFAULT_WAIT,
        embed: bool = True,
    ) -> IndexView:
        """Open the view of the repository at ``path``, refreshing stale indexes.

        When another process is building, wait up to ``wait`` seconds, then
        read the previous version (``stale`` is then True). With no previous
        version at all, wait for the build.
        """
        location = locate(path)
        config = read_config(location)
        root = index_root(location)
        manifest = read_manifest(root)
        report = None
        stale = False
        if refresh and (_pending_work(location) or not is_fresh(location, manifest, vectors=embed)):
            from gitmem.index.refresh import try_refresh
            from gitmem.memory.api import Memory

            with Memory(location, config) as mem:
                report = try_refresh(
                    mem, wait=wait if manifest is not None else LOCK_TIMEOUT, embed=embed
                )
            stale = report is None
            manifest = read_manifest(root)
        if manifest is None:
            raise NotFoundError("there is no memory index yet", "build it with 'git edda index'")
        try:
            return cls._checked(location, config, manifest, stale, report, embed)
        except IndexDamagedError as exc:
            if not refresh:
                raise NotFoundError(
                    f"the memory index is damaged ({exc})",
                    "rebuild it with 'git edda index --rebuild'",
                ) from None
            damage = exc
        # Files that do not match the manifest are damaged, or were being
        # replaced by a refresh in another process. A refresh under the builder
        # lock (so after that one) checks them again and builds anew what is
        # damaged; should this view still find damage, a full rebuild.
        from gitmem.index.refresh import refresh as run_refresh
        from gitmem.memory.api import Memory

        for rebuild in (False, True):
            with Memory(location, config) as mem:
                report = run_refresh(mem, rebuild=rebuild, embed=embed)
            manifest = read_manifest(root)
            if manifest is None:
                continue
            try:
                return cls._checked(location, config, manifest, False, report, embed)
            except IndexDamagedError as exc:
                damage = exc
        raise NotFoundError(
            f"the memory index could not be rebuilt ({damage})", "run 'git edda index --rebuild'"
        )

    @classmethod
    def _checked(
        cls,
        location: RepoLocation,
        config: Config,
        manifest: Manifest,
        stale: bool,
        report: RefreshReport | None,
        embed: bool,
    ) -> IndexView:
        """A view whose files match the manifest and whose tables, full text
        and (when used) vectors all open; IndexDamagedError otherwise."""
        view = cls(location, config, manifest, stale=stale, report=report)
        view.fulltext.count()
        if embed and manifest.model:
            from gitmem.index.vectors import VECTORS_FILE

            if VECTORS_FILE not in manifest.files:
                raise IndexDamagedError(f"{VECTORS_FILE} is missing")
            _ = view.vectors
        # What was opened is what was checked: no refresh replaced a file meanwhile.
        unchanged(view.directory, view._checked_files)
        return view

    # where ------------------------------------------------------------------------
    @property
    def branch(self) -> str | None:
        return memory_branch(self.location)

    @property
    def trunk(self) -> str | None:
        return get_last(self.config, "edda.trunk") or self.manifest.trunk

    # the pieces search needs, opened on first use ------------------------------------
    @property
    def fulltext(self) -> Any:
        if self._fulltext is None:
            from gitmem.index.fulltext import FullText

            self._fulltext = FullText(self.directory / self.manifest.fulltext)
        return self._fulltext

    @property
    def vectors(self) -> Any:
        """The vector index (memory-mapped), or None when there is none."""
        if self._vectors is None and self.manifest.model and self.manifest.dim:
            from gitmem.index.vectors import VECTORS_FILE, Vectors

            path = self.directory / VECTORS_FILE
            if path.exists():
                self._vectors = Vectors(path, self.manifest.dim, view=True)
        return self._vectors

    @property
    def embedder(self) -> Any:
        """The configured query embedder, loaded once per view (None: vectors disabled).

        Loaded in the calling thread: the tokenizer's load holds the GIL, so a
        background thread would only interleave with the query, not overlap it."""
        if self._embedder is _NOT_LOADED:
            from gitmem.embed import get_embedder

            embedder = get_embedder(self.config, stamp_dir=self.root)
            load = getattr(embedder, "load", None)
            if load is not None:
                load()
            self._embedder = embedder
        return self._embedder

    # rows -> events ---------------------------------------------------------------------
    def rows_to_events(self, rows: Any) -> list[Event]:
        """Events from a (filtered) slice of the events table, in its order."""
        columns = rows.select(["envelope", "body", "ref", "commit", "redacted"]).to_pydict()
        out = []
        for envelope, body, ref, commit, redacted in zip(
            columns["envelope"],
            columns["body"],
            columns["ref"],
            columns["commit"],
            columns["redacted"],
            strict=True,
        ):
            out.append(
                Event(
                    _decode(envelope),
                    None if body is None else _decode(body),
                    ref,
                    commit,
                    bool(redacted),
                )
            )
        return out

    def events_at(self, rows: Sequence[int]) -> list[Event]:
        """Events at row positions (zero-copy slices: ``Table.take`` copies
        whole chunks and costs ~10 ms on a 100,000-row table)."""
        import pyarrow as pa

        if not rows:
            return []
        return self.rows_to_events(pa.concat_tables([self.table.slice(r, 1) for r in rows]))

    def values_at(self, column: str, rows: Sequence[int]) -> list[Any]:
        """One column's values at row positions."""
        values = self.table.column(column)
        return [values[r].as_py() for r in rows]

    def rows_for_keys(self, keys: Sequence[int]) -> list[int | None]:
        """Row positions of events by key64 (None for keys not in the table;
        the first row when two events share a key)."""
        import numpy as np

        if self._keys is None:
            column = self.table.column("key64")
            self._keys = (
                np.concatenate([c.to_numpy(zero_copy_only=False) for c in column.chunks])
                if column.num_chunks
                else np.zeros(0, dtype=np.uint64)
            )
        values = self._keys
        if not len(keys) or not len(values):
            return [None] * len(keys)
        wanted = np.asarray(keys, dtype=np.uint64)
        self._lookups += 1
        if self._key_sort is None and self._lookups <= _SCANS:
            # A cold query's few lookups: scanning (~1 ms at 100,000 rows)
            # costs less than sorting the keys once (~10 ms).
            first: dict[int, int] = {}
            for row in np.flatnonzero(np.isin(values, wanted)).tolist():
                first.setdefault(int(values[row]), row)
            return [first.get(int(k)) for k in keys]
        if self._key_sort is None:
            order = np.argsort(values, kind="stable")
            self._key_sort = (values[order], order)
        ordered, order = self._key_sort
        at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
        found = ordered[at] == wanted
        return [int(order[i]) if ok else None for i, ok in zip(at, found, strict=True)]

    def commit_links(self) -> list[tuple[int, str | None, str | None, str | None]]:
        """(time, session, capsule, sha) of every commit_link event, in order."""
        if self._links is None:
            rows = pc.filter(self.table, pc.equal(self.table.column("type"), "commit_link"))
            cols = rows.select(["time", "session", "capsule", "body"]).to_pydict()
            self._links = [
                (t, s, c, json.loads(b).get("sha") if b else None)
                for t, s, c, b in zip(
                    cols["time"], cols["session"], cols["capsule"], cols["body"], strict=True
                )
            ]
        return self._links

    def row_index(self) -> dict[str, int]:
        if self._ids is None:
            self._ids = {eid: i for i, eid in enumerate(self.table.column("id").to_pylist())}
        return self._ids

    # selection ------------------------------------------------------------------------
    def _commits(self, ref: str) -> Any:

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

    def pool_mask(self, branch: BranchArg = CURRENT_BRANCH, trunk: str | None = None) -> Any:
        """The rows a branch sees: its own chain, plus what it follows from the trunk."""
        import pyarrow as pa

        branch = self.branch if isinstance(branch, CurrentBranch) else branch
        commit = self.table.column("commit")
        own_ref = self._own_ref(branch)
        own = (
            pc.is_in(commit, value_set=self._commits(own_ref))
            if own_ref is not None
            else pc.invert(pc.all_true(self.table.num_rows))
        )
        mode = self._follow_trunk(trunk)
        trunk_name = self.trunk if mode != "none" else None
        if trunk_name is None or trunk_name == branch:
            return own
        extra = pc.is_in(commit, value_set=self._commits(layout.branch_ref(trunk_name)))
        if mode != "all":
            types = pa.array(sorted(TRUNK_TYPES))
            extra = pc.and_(extra, pc.is_in(self.table.column("type"), value_set=types))
        return pc.or_(own, extra)

    def _follow_trunk(self, trunk: str | None) -> str:
        return follow_mode(self.config, trunk)

    def filter_mask(
        self,
        where: EventFilter | None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        trunk: str | None = None,
    ) -> Any:
        """A boolean mask over the events table: the columns a filter can be
        checked on (the rest, tags and paths globs, is checked per event)."""
        import pyarrow as pa

        t = self.table
        mask = pc.all_true(t.num_rows) if all_branches else self.pool_mask(branch, trunk)
        if where is None:
            return mask

        def member(column: str, values: Sequence[str]) -> Any:
            return pc.false_if_null(pc.is_in(t.column(column), value_set=pa.array(list(values))))

        if where.types:
            mask = pc.and_(mask, member("type", where.types))
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
        rows = pc.filter(self.table, mask)
        if where is None or not (where.tags or where.paths):
            if limit:
                rows = rows.slice(max(0, rows.num_rows - limit))
            return self.rows_to_events(rows)
        chosen = [e for e in self.rows_to_events(rows) if where.matches(e)]
        return chosen[-limit:] if limit else chosen

    def get(self, event_id: str) -> Event:
        """An event by id or unique id prefix (at least 4 hex characters), on any branch."""
        prefix = id_prefix(event_id)
        ids = self.row_index()
        found = [prefix] if prefix in ids else sorted(eid for eid in ids if eid.startswith(prefix))
        if not found:
            raise NotFoundError(
                f"no event with id {event_id}", "list ids with 'git edda log --all-branches'"
            )
        if len(found) > 1:
            raise AmbiguousIdError(
                f"id prefix {event_id} matches {len(found)} events: {', '.join(f[:12] for f in found[:5])}",
                "give more characters of the id",
            )
        return self.rows_to_events(self.table.slice(ids[found[0]], 1))[0]

    def counts(self, branch: str | None) -> dict[str, Any]:
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
        commit = self.table.column("commit")
        own = pc.false_if_null(pc.is_in(commit, value_set=self._commits(ref)))
        return int(pc.filter(commit, own).length())

    def window(self, branch_kwargs: dict[str, Any]) -> Any:
        """A branch's events fetched by need, for context packs and ``ask``
        (an :class:`~gitmem.index.window.IndexWindow`; ``branch_kwargs`` as for
        :meth:`events`)."""
        from gitmem.index.window import window

        return window(self, branch_kwargs)
