"""The events table in segments, written with bounded memory.

The sizes that matter at a million events (32,768 rows a segment, runs of
20,000 rows read 1,024 at a time, windows of 8,192) are shrunk here to a few
rows, so that a store of a few dozen events spans many segments, runs,
batches and windows; the table must still equal a full rebuild, in order,
with each event once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pytest
from conftest import git, scratch_repo
from hypothesis import given
from test_index import OPS, PROPERTY, _run_ops, member_pairs, rows, scratch

from gitmem import Memory
from gitmem.capture.sealer import Draft
from gitmem.index import segments, vectorshards
from gitmem.index.manifest import index_root, read_manifest
from gitmem.index.refresh import refresh
from gitmem.index.vectors import key64
from gitmem.index.view import IndexView
from gitmem.retrieval.search import search

T0 = 1_700_000_000_000_000
HOUR = 3_600_000_000


@contextmanager
def tiny(segment: int = 5, run: int = 4, batch: int = 2, window: int = 3) -> Iterator[None]:
    with mock.patch.multiple(
        segments, SEGMENT_ROWS=segment, RUN_ROWS=run, RUN_BATCH=batch, WINDOW=window
    ):
        yield


def notes(mem: Memory, texts: list[str], start: int, branch: str = "main") -> list[str]:
    drafts = [
        Draft("note", {"text": t}, branch=branch, time=start + i * HOUR)
        for i, t in enumerate(texts)
    ]
    return [e.id for e in mem.append_many(drafts)]


def segment_sizes(repo: Path) -> list[int]:
    manifest = read_manifest(index_root_of(repo))
    assert manifest is not None
    root = index_root_of(repo) / manifest.generation
    return [
        pa.ipc.open_file(pa.memory_map(str(root / n))).read_all().num_rows
        for n in manifest.segments
    ]


def index_root_of(repo: Path) -> Path:
    with Memory.open(repo) as mem:
        return index_root(mem.location)


def manifest_segments(repo: Path) -> list[str]:
    manifest = read_manifest(index_root_of(repo))
    assert manifest is not None
    return manifest.segments


def test_newer_events_rewrite_only_the_last_segment(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with tiny(), Memory.open(repo) as mem:
        notes(mem, [f"heron {i}" for i in range(12)], T0)
        assert refresh(mem).mode == "full"
        first = manifest_segments(repo)
        assert segment_sizes(repo) == [5, 5, 2]
        notes(mem, ["egret 1", "egret 2"], T0 + 100 * HOUR)
        report = refresh(mem)
        assert report.mode == "incremental" and report.added == 2
        after = manifest_segments(repo)
        assert after[:2] == first[:2] and after[2] != first[2]  # the last one, rewritten
        assert segment_sizes(repo) == [5, 5, 4]
        # files the manifest no longer names are gone
        generation = index_root_of(repo) / read_manifest(index_root_of(repo)).generation  # type: ignore[union-attr]
        on_disk = sorted(p.name for p in generation.iterdir() if segments.is_segment(p.name))
        assert on_disk == sorted(after)
        assert not [p for p in generation.iterdir() if p.name.startswith(".run-")]


def test_older_events_rewrite_from_the_segment_they_fall_in(tmp_path: Path) -> None:
    """Events synced from another clone may be older than what the index
    holds: they go where they sort, and the table stays in (time, id) order."""
    repo = scratch_repo(tmp_path / "repo")
    with tiny(), Memory.open(repo) as mem:
        notes(mem, [f"heron {i}" for i in range(15)], T0)
        refresh(mem)
        first = manifest_segments(repo)
        late = notes(mem, ["ibis early", "ibis earlier"], T0 + 6 * HOUR + 1)
        report = refresh(mem)
        assert report.mode == "incremental" and report.added == 2
        after = manifest_segments(repo)
        assert after[0] == first[0] and after[1] != first[1]
        with IndexView.open(repo, refresh=False) as view:
            table = rows(view)
            keys = [(r["time"], r["id"]) for r in table]
            assert keys == sorted(keys) and len(table) == 17
            # after heron 6 (at 6 h) and heron 7 (at 7 h)
            assert [i for i, r in enumerate(table) if r["id"] in late] == [7, 9]
            assert search(view, "ibis", mode="lexical").hits
        inc = rows_of(repo)
        refresh(mem, rebuild=True)
    assert rows_of(repo) == inc


def rows_of(repo: Path) -> list[dict[str, object]]:
    with IndexView.open(repo, refresh=False) as view:
        return rows(view, drop=("ref",))


def test_a_duplicate_and_a_redaction_across_segments(tmp_path: Path) -> None:
    """An event in two commits is one row; a redaction read in the same
    refresh as its target blanks it wherever the merge puts it."""
    repo = scratch_repo(tmp_path / "repo")
    with tiny(), Memory.open(repo) as mem:
        ids = notes(mem, [f"heron {i} secret" for i in range(9)], T0)
        refresh(mem)
        git(repo, "branch", "side")
        mem.fork("side")
        notes(mem, [f"side {i}" for i in range(6)], T0 + 50 * HOUR, branch="side")
        mem.merge("side", into="main")
        mem.redact(ids[2], "test")
        report = refresh(mem)
        assert report.mode == "incremental"
        with IndexView.open(repo, refresh=False) as view:
            table = rows(view)
            assert len({r["id"] for r in table}) == len(table)
            target = next(r for r in table if r["id"] == ids[2])
            assert target["redacted"] and target["text"] == ""
            assert not any("heron 2" in str(r["text"]) for r in table)
        inc = rows_of(repo)
        refresh(mem, rebuild=True)
    assert rows_of(repo) == inc


@PROPERTY
@given(ops=OPS)
def test_many_small_segments_equal_a_full_rebuild(ops: list[tuple[str, int, int]]) -> None:
    with scratch() as tmp, tiny():
        repo = scratch_repo(Path(tmp) / "repo")
        with Memory.open(repo) as mem:
            _run_ops(repo, mem, ops)
            with IndexView.open(repo, refresh=False) as inc:
                inc_rows, inc_members = rows(inc, drop=("ref",)), member_pairs(inc)
                inc_count = inc.fulltext.count()
                assert all(n <= 5 for n in segment_sizes(repo))
            refresh(mem, rebuild=True)
        with IndexView.open(repo, refresh=False) as full:
            assert inc_rows == rows(full, drop=("ref",))
            assert inc_members == member_pairs(full)
            assert inc_count == full.fulltext.count()


@pytest.mark.parametrize("limit", [3, 1000])
def test_new_texts_beyond_the_limit_are_read_from_the_table(tmp_path: Path, limit: int) -> None:
    """More new rows than a refresh keeps in memory for the full text and
    the vectors: both are brought up to date from the table instead."""
    repo = scratch_repo(tmp_path / "repo")
    with tiny(), mock.patch.object(segments, "TEXT_LIMIT", limit), Memory.open(repo) as mem:
        notes(mem, ["first"], T0)
        refresh(mem)
        notes(mem, [f"kingfisher {i}" for i in range(8)], T0 + HOUR)
        assert refresh(mem).mode == "incremental"
        with IndexView.open(repo, refresh=False) as view:
            assert view.fulltext.count() == 9
            assert view.vectors is not None and len(view.vectors) == 9
            assert len(search(view, "kingfisher", mode="lexical", limit=20).hits) == 8


# the vector index in shards -----------------------------------------------------------------
@contextmanager
def tiny_shards(size: int = 4) -> Iterator[None]:
    with mock.patch.object(vectorshards, "SHARD_VECTORS", size):
        yield


def test_vectors_in_shards_search_as_one_index(tmp_path: Path) -> None:
    """Texts spread over shards of four vectors: each search gives what one
    index of every vector gives (each shard is scored exactly, as is a small
    index), and a refresh fills the last shard before it starts a new one."""
    repo = scratch_repo(tmp_path / "one")
    texts = [f"heron {w} nests in the {w} marsh near {i}" for i, w in enumerate("abcdefghijk")]
    with Memory.open(repo) as mem:
        notes(mem, texts, T0)
        refresh(mem)
        with IndexView.open(repo, refresh=False) as view:
            expected = {
                q: search(view, q, mode="vector", limit=5).to_json() for q in ("heron a", "marsh k")
            }
    sharded = scratch_repo(tmp_path / "many")
    with tiny_shards(), Memory.open(sharded) as mem:
        notes(mem, texts[:6], T0)
        refresh(mem)
        assert vectorshards.on_disk(generation_of(sharded)) == [
            "vectors.usearch",
            "vectors.1.usearch",
        ]
        notes(mem, texts[6:], T0 + 50 * HOUR)
        refresh(mem)
        names = vectorshards.on_disk(generation_of(sharded))
        assert len(names) == 3  # 4 + 4 + 3
        with IndexView.open(sharded, refresh=False) as view:
            assert view.vectors is not None and len(view.vectors) == 11
            assert [len(s) for s in view.vectors.shards] == [4, 4, 3]
            for query, answer in expected.items():
                got = search(view, query, mode="vector", limit=5).to_json()
                # two stores: the same texts, other ids (the salts differ)
                assert [h["summary"] for h in got["hits"]] == [h["summary"] for h in answer["hits"]]
                assert [h["components"] for h in got["hits"]] == [
                    h["components"] for h in answer["hits"]
                ]


def test_a_redaction_rebuilds_every_shard(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with tiny_shards(), Memory.open(repo) as mem:
        ids = notes(mem, [f"kingfisher {i} secret {i}" for i in range(10)], T0)
        refresh(mem)
        mem.redact(ids[1], "test")
        report = refresh(mem)
        assert "vectors (redaction)" in report.rebuilt
        with IndexView.open(repo, refresh=False) as view:
            assert view.vectors is not None and len(view.vectors) == 10  # 9 notes and the redaction
            assert view.vectors.contains([key64(ids[1])]) == [False]
        # nothing on disk still holds the redacted text's vector: every shard was rewritten
        assert len(vectorshards.on_disk(generation_of(repo))) == 3


def test_a_damaged_shard_is_rebuilt(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with tiny_shards(), Memory.open(repo) as mem:
        notes(mem, [f"egret {i}" for i in range(9)], T0)
        refresh(mem)
        (generation_of(repo) / "vectors.1.usearch").write_bytes(b"not an index" * 10)
        notes(mem, ["egret late"], T0 + 99 * HOUR)
        report = refresh(mem)
        assert report.mode == "incremental" and report.vectors == 10
        with IndexView.open(repo) as view:
            assert view.vectors is not None and len(view.vectors) == 10


def generation_of(repo: Path) -> Path:
    manifest = read_manifest(index_root_of(repo))
    assert manifest is not None
    return index_root_of(repo) / manifest.generation


def test_embed_types_are_reconciled_in_every_shard(tmp_path: Path) -> None:
    """``git edda index`` after ``edda.embed.types`` changed: the vectors of
    the types no longer wanted leave every shard, the memory-mapped full ones
    too, and a search of what is left is the same as before."""
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.types", "all")
    with tiny_shards(), Memory.open(repo) as mem:
        drafts = [
            Draft(
                "observation" if i % 2 else "note",
                {"kind": "command", "input": f"heron {i}", "result": "ok"}
                if i % 2
                else {"text": f"heron {i} in the marsh"},
                time=T0 + i * HOUR,
            )
            for i in range(10)
        ]
        events = mem.append_many(drafts)
        refresh(mem)
    assert len(vectorshards.on_disk(generation_of(repo))) == 3  # 4 + 4 + 2
    git(repo, "config", "edda.embed.types", "note")
    with tiny_shards(), Memory.open(repo) as mem:
        report = refresh(mem, embed_all=True)
        assert report.mode == "none"
        with IndexView.open(repo) as view:
            assert view.report is None  # the manifest vouches for the shards as they are
            assert view.vectors is not None and len(view.vectors) == 5
            kept = view.vectors.contains([key64(e.id) for e in events])
            assert kept == [e.type == "note" for e in events]
            hits = search(view, "heron marsh", mode="vector", limit=10).hits
            assert sorted(h.event.id for h in hits) == sorted(
                e.id for e in events if e.type == "note"
            )


def test_texts_are_read_newest_first_of_the_types_asked(tmp_path: Path) -> None:
    """What the vector sync reads from the table: every row with text of the
    types asked, segment by segment from the last row back to the first."""
    repo = scratch_repo(tmp_path / "repo")
    with tiny(), Memory.open(repo) as mem:
        drafts = [
            Draft(
                "observation" if i % 3 == 0 else "note",
                {"kind": "command", "input": f"egret {i}", "result": "ok"}
                if i % 3 == 0
                else {"text": f"egret {i}"},
                time=T0 + i * HOUR,
            )
            for i in range(13)
        ]
        events = mem.append_many(drafts)
        refresh(mem)
    generation = generation_of(repo)
    names = manifest_segments(repo)
    assert len(names) == 3
    oldest_first = [r["id"] for batch in segments.text_rows(generation, names) for r in batch]
    assert oldest_first == [e.id for e in events]
    pieces = segments.text_pieces(generation, names, frozenset({"note"}), newest_first=True, size=2)
    newest_first = [i for piece in pieces for i in piece.column("id").to_pylist()]
    assert newest_first == [e.id for e in reversed(events) if e.type == "note"]
