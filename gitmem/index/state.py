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
from gitmem.index.segments import (
    Rewritten,
    Runs,
    count_texts,
    is_segment,
    read_segments,
    remove_stale,
    rewrite,
    text_rows,
)
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


def _accept_written(directory: Path, manifest: Manifest, deep: bool) -> list[str]:
    """Check the parts (tables, full text) against the manifest or, failing
    that, ``written.json``; returns the events table's segments to use: the
    manifest's, or those a refresh that died before its manifest recorded
    with its other files (the table, the members and the full text then
    agree with each other)."""
    written = generations.read_written(directory)
    if not written:
        check_generation(directory, manifest, deep=deep, vectors=False)  # raises the damage
    newer = {
        p
        for p in (tables.MEMBERS_FILE, manifest.fulltext)
        if generations.verify_part(directory, manifest.files, p, written, deep)
    }
    order = generations.read_written_order(directory)
    if newer and order is not None and order != manifest.segments:
        for name in order:
            if not is_segment(name):
                raise IndexDamagedError(f"written.json names {name!r}")
            generations.verify_part(directory, {}, name, written, deep)
        return order
    for name in manifest.segments:
        generations.verify_part(directory, manifest.files, name, written, deep)
    return list(manifest.segments)


class RefreshState:
    """The files of one generation, loaded for updating."""

    def __init__(
        self,
        directory: Path,
        segments: list[str],
        members: pa.Table,
        fulltext: FullText | None,
    ) -> None:
        self.directory = directory
        self.segments = list(segments)
        self.events, self.counts = read_segments(directory, self.segments)
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
        from gitmem.index.vectorshards import listed, on_disk

        segments = list(manifest.segments)
        try:
            check_generation(directory, manifest, deep=deep, vectors=False)
            newer = False
        except IndexDamagedError:
            # A refresh that died before its manifest write leaves files the
            # manifest does not describe; any mix of old and new versions is
            # sound (rows, documents and vectors are deduplicated by event id),
            # so a part matching what that refresh recorded as written is no damage.
            segments = _accept_written(directory, manifest, deep)
            newer = segments != manifest.segments
        dropped = ""
        shards = listed({*manifest.files, *on_disk(directory)})
        if shards or (directory / VECTORS_FILE).is_symlink():
            try:
                written = generations.read_written(directory)
                for name in shards or [VECTORS_FILE]:
                    generations.verify_part(directory, manifest.files, name, written, deep)
            except IndexDamagedError as exc:
                dropped = str(exc)
                for name in shards or [VECTORS_FILE]:
                    generations.remove(directory / name)
                manifest.model = manifest.dim = None  # nothing vouches for any vector now
        # Segments are never rewritten in place, only replaced by new files:
        # those in use were checked above; any other was left by a killed refresh.
        remove_stale(directory, segments)
        members = tables.read(directory / tables.MEMBERS_FILE, tables.member_schema())
        fulltext = FullText(directory / manifest.fulltext)
        state = cls(directory, segments, members, fulltext)
        if not newer and state.count() != manifest.events:
            raise IndexDamagedError(
                f"the events table holds {state.count()} rows, the manifest says {manifest.events}"
            )
        if fulltext.count() > state.count():
            raise IndexDamagedError("full-text index holds more documents than the table")
        state.dropped_vectors = dropped
        return state

    @classmethod
    def create(cls, directory: Path, manifest: Manifest) -> RefreshState:
        members = tables.from_rows([], tables.member_schema())
        state = cls(directory, [], members, None)
        state._dirty = True
        return state

    # reads
    def count(self) -> int:
        return int(self.events.num_rows)

    def member_commits(self) -> set[str]:
        """Every memory commit some chain reaches (distinct first: a commit
        inherited by twenty branches has twenty rows)."""
        unique: list[str] = pc.call("unique", [self.members.column("commit")]).to_pylist()
        return set(unique)

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
        rows = pc.filter(
            self.events.select(["type", "target"]),
            pc.equal(self.events.column("type"), "redaction"),
        )
        return {t for t in rows.column("target").to_pylist() if t}

    def unredacted_rows(self, ids: set[str]) -> list[tables.EventRow]:
        import pyarrow as pa

        if not ids:
            return []
        wanted = pc.is_in(self.events.column("id"), value_set=pa.array(sorted(ids)))
        return self._rows(pc.and_(wanted, pc.invert(self.events.column("redacted"))))

    def text_rows(self) -> Iterator[list[tables.TextRow]]:
        """(id, key64, text) of every row with text, a few thousand at a time
        (one segment mapped at a time: see :func:`gitmem.index.segments.column_batches`)."""
        return text_rows(self.directory, self.segments)

    def count_texts(self) -> int:
        """Rows with text."""
        return count_texts(self.directory, self.segments)

    # writes
    def update_events(
        self, runs: Runs, replaced: list[tables.EventRow], blank: set[str]
    ) -> Rewritten:
        """Merge the new rows (``runs``) and the rows replacing old ones
        (``replaced``) into the events table, writing the segments that
        change (see :mod:`gitmem.index.segments`)."""
        replacing = Runs(self.directory)
        try:
            for row in replaced:
                replacing.add(row)
            replacing.flush()
            result = rewrite(
                self.directory,
                self.events,
                self.segments,
                self.counts,
                [*replacing.paths, *runs.paths],
                replacing=len(replacing.paths),
                drop={r["id"] for r in replaced},
                blank=blank,
            )
        finally:
            replacing.close()
        if result.segments != self.segments:
            self.segments = result.segments
            self.events, self.counts = read_segments(self.directory, self.segments)
        return result

    def add_members(self, parts: list[pa.Table]) -> None:
        """Add (ref, commit) rows."""
        import pyarrow as pa

        if parts:
            self.members = pa.concat_tables([self.members, *parts])
            self._dirty = True

    def write_tables(self) -> None:
        if not self._dirty:
            return
        tables.write(self.directory / tables.MEMBERS_FILE, self.members.combine_chunks())
        self._dirty = False

    def rebuild_fulltext(self, progress: Progress) -> str:
        """A new full-text directory holding every row with text; returns its name."""
        from gitmem.index.fulltext import FullText, TextDoc

        name = f"fulltext-{os.urandom(3).hex()}"
        fulltext = FullText(self.directory / name, create=True)
        total = self.count()
        done = 0

        def docs() -> Iterator[TextDoc]:
            nonlocal done
            for batch in self.text_rows():
                for row in batch:
                    yield TextDoc(row["id"], row["key64"], row["text"])
                done += len(batch)
                progress("full-text index", min(done, total), total)

        fulltext.update(docs(), fresh=True)
        self.fulltext = fulltext
        return name

    def remove_stale_fulltext(self, keep: str) -> None:
        for entry in self.directory.iterdir():
            if entry.is_dir() and entry.name.startswith("fulltext") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)
