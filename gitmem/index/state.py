"""A refresh's working state: the generation it updates, and what it did.

:class:`RefreshState` holds one generation's tables and full-text index,
loaded for updating once they match the manifest (or, for files written by a
refresh that died before its manifest, ``written.json``);
:class:`RefreshReport` is what a refresh returns.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import IndexDamagedError
from gitmem.index import compute as pc
from gitmem.index import table as tables
from gitmem.index.manifest import Manifest, check_generation
from gitmem.sidecar import generations

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.index.compute import Column
    from gitmem.index.fulltext import FullText

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class RefreshReport:
    """What a refresh did."""

    mode: str  # "none", "incremental" or "full"
    events: int = 0  # events in the index afterwards
    added: int = 0
    redacted: int = 0
    embedded: int = 0  # texts embedded (cache misses)
    vectors: int = 0  # vectors added to the vector index
    rebuilt: list[str] = field(default_factory=list)  # indexes rebuilt whole
    reason: str = ""  # why a full build happened
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _accept_written(directory: Path, manifest: Manifest, deep: bool) -> set[str]:
    """Check the parts (tables, full text) against the manifest or, failing
    that, ``written.json``; returns those only the latter vouched for."""
    written = generations.read_written(directory)
    if not written:
        check_generation(directory, manifest, deep=deep, vectors=False)  # raises the damage
    parts = [tables.EVENTS_FILE, tables.MEMBERS_FILE, manifest.fulltext]
    return {
        p for p in parts if generations.verify_part(directory, manifest.files, p, written, deep)
    }


class RefreshState:
    """The files of one generation, loaded for updating."""

    def __init__(
        self, directory: Path, events: pa.Table, members: pa.Table, fulltext: FullText | None
    ) -> None:
        self.directory = directory
        self.events = events
        self.members = members
        self.fulltext = fulltext
        self._dirty = False
        self.dropped_vectors = ""  # why a damaged vector index was removed on opening

    @classmethod
    def open(cls, directory: Path, manifest: Manifest, *, deep: bool = False) -> RefreshState:
        """The generation's files, checked against the manifest first: damaged
        tables or full text raise IndexDamagedError (the caller builds anew);
        a damaged vector index is removed and rebuilt by the vector sync."""
        from gitmem.index.fulltext import FullText
        from gitmem.index.vectors import VECTORS_FILE

        try:
            check_generation(directory, manifest, deep=deep, vectors=False)
            newer: set[str] = set()
        except IndexDamagedError:
            # A refresh that died before its manifest write leaves files the
            # manifest does not describe; any mix of old and new versions is
            # sound (rows, documents and vectors are deduplicated by event id),
            # so a part matching what that refresh recorded as written is no damage.
            newer = _accept_written(directory, manifest, deep)
        dropped = ""
        vectors = directory / VECTORS_FILE
        if VECTORS_FILE in manifest.files or vectors.exists() or vectors.is_symlink():
            try:
                written = generations.read_written(directory)
                generations.verify_part(directory, manifest.files, VECTORS_FILE, written, deep)
            except IndexDamagedError as exc:
                dropped = str(exc)
                generations.remove(vectors)
                manifest.model = manifest.dim = None  # nothing vouches for any vector now
        events = tables.read(directory / tables.EVENTS_FILE, tables.event_schema())
        members = tables.read(directory / tables.MEMBERS_FILE, tables.member_schema())
        if tables.EVENTS_FILE not in newer and events.num_rows != manifest.events:
            raise IndexDamagedError(
                f"{tables.EVENTS_FILE} holds {events.num_rows} rows, the manifest says {manifest.events}"
            )
        fulltext = FullText(directory / manifest.fulltext)
        if fulltext.count() > events.num_rows:
            raise IndexDamagedError("full-text index holds more documents than the table")
        state = cls(directory, events, members, fulltext)
        state.dropped_vectors = dropped
        return state

    @classmethod
    def create(cls, directory: Path, manifest: Manifest) -> RefreshState:
        events = tables.from_rows([], tables.event_schema())
        members = tables.from_rows([], tables.member_schema())
        state = cls(directory, events, members, None)
        state._dirty = True
        return state

    # reads
    def count(self) -> int:
        return int(self.events.num_rows)

    def ids(self) -> set[str]:
        return set(self.events.column("id").to_pylist())

    def member_commits(self) -> set[str]:
        return set(self.members.column("commit").to_pylist())

    def commits_of(self, ref: str) -> set[str]:

        mask = pc.equal(self.members.column("ref"), ref)
        return set(pc.filter(self.members, mask).column("commit").to_pylist())

    def _rows(self, mask: Column) -> list[tables.EventRow]:
        rows: list[tables.EventRow] = pc.filter(self.events, mask).to_pylist()
        for row in rows:
            row["was_missing"] = row["missing"]
        return rows

    def missing_rows(self) -> list[tables.EventRow]:
        return self._rows(self.events.column("missing"))

    def redaction_targets(self) -> set[str]:

        rows = pc.filter(self.events, pc.equal(self.events.column("type"), "redaction"))
        return {t for t in rows.column("target").to_pylist() if t}

    def unredacted_rows(self, ids: set[str]) -> list[tables.EventRow]:
        import pyarrow as pa

        if not ids:
            return []
        wanted = pc.is_in(self.events.column("id"), value_set=pa.array(sorted(ids)))
        return self._rows(pc.and_(wanted, pc.invert(self.events.column("redacted"))))

    def text_rows(self) -> Iterator[tuple[str, int, str]]:
        """(id, key64, text) of every row with text."""

        rows = pc.filter(self.events, pc.not_equal(self.events.column("text"), ""))
        ids = rows.column("id").to_pylist()
        keys = rows.column("key64").to_pylist()
        texts = rows.column("text").to_pylist()
        yield from zip(ids, keys, texts, strict=True)

    # writes
    def update_tables(
        self,
        new_rows: list[tables.EventRow],
        replaced: list[tables.EventRow],
        members: list[tables.MemberRow],
    ) -> None:
        import pyarrow as pa

        schema = tables.event_schema()
        events = self.events
        if replaced:
            drop = pc.is_in(events.column("id"), value_set=pa.array([r["id"] for r in replaced]))
            events = pc.filter(events, pc.invert(drop))
        if new_rows or replaced:
            added = tables.from_rows([*new_rows, *replaced], schema)
            events = tables.sort_events(pa.concat_tables([events, added]))
            self.events = events
            self._dirty = True
        if members:
            added_members = tables.from_rows(members, tables.member_schema())
            self.members = pa.concat_tables([self.members, added_members])
            self._dirty = True

    def write_tables(self) -> None:
        if not self._dirty:
            return
        tables.write(self.directory / tables.EVENTS_FILE, self.events.combine_chunks())
        tables.write(self.directory / tables.MEMBERS_FILE, self.members.combine_chunks())
        self._dirty = False

    def rebuild_fulltext(self, progress: Progress) -> str:
        """A new full-text directory holding every row with text; returns its name."""
        from gitmem.index.fulltext import FullText, TextDoc

        name = f"fulltext-{os.urandom(3).hex()}"
        fulltext = FullText(self.directory / name, create=True)
        rows = list(self.text_rows())
        chunk = 20000
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            fulltext.update(TextDoc(i, k, t) for i, k, t in part)
            progress("full-text index", min(start + chunk, len(rows)), len(rows))
        if not rows:
            fulltext.update([])
        self.fulltext = fulltext
        return name

    def remove_stale_fulltext(self, keep: str) -> None:
        for entry in self.directory.iterdir():
            if entry.is_dir() and entry.name.startswith("fulltext") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)
