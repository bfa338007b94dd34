"""Export reads the store in two passes instead of holding it: the events it
hands out are exactly ``Memory.events``' (same order, ref, commit, body,
redaction state, problem), and its memory does not grow with the bodies."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pygit2
import pytest
from conftest import git, init_repo, scratch_repo
from test_verify import rewrite_payload_store

from gitmem.app import admin
from gitmem.capture.sealer import Draft
from gitmem.memory.api import Memory
from gitmem.memory.bundle import export_json
from gitmem.memory.event import Event
from gitmem.memory.exporting import export_events
from gitmem.memory.query import EventFilter
from gitmem.records import canonical, layout


def held_in_memory(mem: Memory, branch: str | None) -> list[Event]:
    """What export gave before it streamed: every event read into memory,
    a branch's own plus the redactions of its redacted events."""
    if branch is None:
        events = mem.events(all_branches=True)
    else:
        events = mem.events(branch=branch, trunk="none")
        redacted = {e.id for e in events if e.redacted}
        have = {e.id for e in events}
        events += [
            e
            for e in mem.events(EventFilter(types=["redaction"]), all_branches=True)
            if e.field("target") in redacted and e.id not in have
        ]
    return sorted(events, key=lambda e: e.order_key)


def forked_store(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """main's memory; feature forked from it (so main's events are reachable
    from both chains), with a redaction of a main event; a detached-HEAD
    event; one payload forged behind gitmem's back; a branch without memory."""
    repo = init_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        secret = mem.note("a secret on main")
        forged = mem.note("a note whose payload is then forged")
        mem.decide("db", "postgres", reason="mature")
    git(repo, "switch", "-q", "-c", "feature")
    with Memory.open(repo) as mem:
        mem.note("on feature")
        mem.redact(secret.id, "leak")  # recorded on feature
        mem.append("note", {"text": "detached"}, branch=None)
    git(repo, "switch", "-q", "main")
    with Memory.open(repo) as mem:
        mem.note("main again", tags=["t"])
    git(repo, "branch", "fresh", "feature")  # no memory of its own yet
    rewrite_payload_store(
        repo, {layout.payload_path(forged.id): canonical.encode({"text": "forged"})}
    )
    return repo, {"secret": secret.id, "forged": forged.id}


@pytest.mark.parametrize("chunk", [2, 1 << 16])
def test_export_events_are_the_events_read_whole(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.memory import exporting

    monkeypatch.setattr(exporting, "_CHUNK", chunk)  # ids gathered in arrays of 2, or of all
    repo, ids = forked_store(tmp_path)
    with Memory.open(repo) as mem:
        for branch in (None, "main", "feature", "fresh", "nothing-here"):
            streamed = list(export_events(mem, branch))
            assert streamed == held_in_memory(mem, branch), branch
        everything = list(export_events(mem, None))
    by_id = {e.id: e for e in everything}
    assert by_id[ids["secret"]].redacted and by_id[ids["secret"]].body is None
    assert by_id[ids["forged"]].body is None and by_id[ids["forged"]].problem
    # main's events sit on both chains: each is the first ref's (memory_refs order)
    assert {e.ref for e in everything} >= {layout.branch_ref("main"), layout.branch_ref(None)}
    with Memory.open(repo) as mem:
        main_only = list(export_events(mem, "main"))
    # main's bundle carries feature's redaction of its secret
    assert any(e.type == "redaction" and e.field("target") == ids["secret"] for e in main_only)


def test_a_store_listed_or_not_exports_the_same(tmp_path: Path) -> None:
    """The store's listing gives each event's payload where it can; where it
    cannot (an entry of another shape, an unreadable directory), lookups by
    path do: the same events either way."""
    import zlib

    from test_verify import loose_object, overwrite, payload_commit

    repo, ids = forked_store(tmp_path)
    secret = ids["secret"]
    with Memory.open(repo) as mem:
        some = next(e for e in mem.events(all_branches=True) if e.type == "decision")
    wrong_place = "zz/" + some.id if some.id[:2] != "zz" else "yy/" + some.id
    rewrite_payload_store(repo, {f"p/{wrong_place}": canonical.encode({"text": "elsewhere"})})
    with Memory.open(repo) as mem:
        assert list(export_events(mem)) == held_in_memory(mem, None)
    rewrite_payload_store(repo, {f"p/{secret[:2]}/short": b"{}"})
    with Memory.open(repo) as mem:
        assert list(export_events(mem)) == held_in_memory(mem, None)
    pg = pygit2.Repository(str(repo))
    directory = payload_commit(pg).tree["p"][some.id[:2]]
    overwrite(loose_object(repo, str(directory.id)), zlib.compress(b"tree 5\x00junk!"))
    with Memory.open(repo) as mem:
        streamed = list(export_events(mem))
        assert streamed == held_in_memory(mem, None)
    assert next(e for e in streamed if e.id == some.id).problem


def test_an_event_time_beyond_64_bits_stops_the_export_before_it_writes(tmp_path: Path) -> None:
    from test_verify import rewrite_envelope

    from gitmem.errors import FormatError

    repo, ids = forked_store(tmp_path)
    rewrite_envelope(
        repo, layout.branch_ref("main"), ids["forged"], lambda e: e.update(time=1 << 64)
    )
    out = tmp_path / "bundle.json"
    with pytest.raises(FormatError, match="beyond 64 bits"):
        admin.export(repo, output=out)
    assert not out.exists()


def test_streamed_bundle_and_parquet_are_what_the_events_give(tmp_path: Path) -> None:
    repo, _ = forked_store(tmp_path)
    for branch in (None, "main", "fresh"):
        with Memory.open(repo) as mem:
            expected = held_in_memory(mem, branch)
        done = admin.export(repo, branch=branch)
        assert done.data == export_json(expected) and done.events == len(expected)
        out = tmp_path / "events.parquet"
        assert admin.export(repo, format="parquet", branch=branch, output=out).events == len(
            expected
        )
        rows = pq.read_table(out).to_pylist()
        assert [(r["id"], r["commit"], r["redacted"]) for r in rows] == [
            (e.id, e.commit, e.redacted) for e in expected
        ]


def test_an_empty_store_exports_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        assert list(export_events(mem)) == []
    assert json.loads(admin.export(repo).data or b"")["events"] == []


def test_parquet_is_written_a_row_group_at_a_time(tmp_path: Path, monkeypatch: Any) -> None:
    from gitmem.memory import parquet

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.append_many([Draft("note", {"text": f"note {i}"}) for i in range(25)])
    monkeypatch.setattr(parquet, "ROWS_PER_GROUP", 10)
    out = tmp_path / "m.parquet"
    assert admin.export(repo, format="parquet", output=out).events == 25
    meta = pq.ParquetFile(out).metadata
    assert (meta.num_row_groups, meta.num_rows) == (3, 25)
    times = pq.read_table(out).column("time_us").to_pylist()
    assert times == sorted(times)


def test_export_memory_does_not_grow_with_the_bodies(tmp_path: Path) -> None:
    """400 events of 16 KB each (6.4 MB of bodies): the export to a file
    holds a fraction of them at once (reading them all in held them twice)."""
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.append_many([Draft("note", {"text": f"{i:04d} " + "x" * 16_000}) for i in range(400)])
    out = tmp_path / "bundle.json"
    admin.export(repo, output=out)  # what it imports is not what it holds
    tracemalloc.start()
    try:
        admin.export(repo, output=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.stat().st_size > 6_400_000
    assert peak < 3_000_000, peak


def test_a_streaming_pass_leaves_nothing_in_libgit2s_cache(tmp_path: Path) -> None:
    """Commits and trees read inside ``streaming()`` are not kept by libgit2
    (an export read each once and held ~250 MB of them at a million events);
    the cache is on again once the outermost pass ends."""
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        for i in range(30):
            mem.note(f"note {i}")
    with Memory.open(repo) as mem:
        backend = mem.backend
        tip = backend.read_ref(layout.branch_ref("main"))
        assert tip is not None
        commits = backend.commits_between([tip], [])

        def read_all() -> int:
            for oid in commits:
                backend.read_tree(backend.read_commit(oid).tree)
            return int(pygit2.settings.cached_memory[0])

        before = int(pygit2.settings.cached_memory[0])
        with backend.streaming():
            with backend.streaming():  # nested: still off when the inner one ends
                pass
            during = read_all()
        assert during <= before
        after = read_all()
        assert after > during  # cached again


def test_export_walks_the_chains_without_libgit2s_cache(tmp_path: Path, monkeypatch: Any) -> None:
    from gitmem.memory import exporting

    repo, _ = forked_store(tmp_path)
    grown: list[int] = []
    walk = exporting._walk

    def measured(mem: Memory, tips: dict[str, str]) -> Any:
        before = int(pygit2.settings.cached_memory[0])
        rows = walk(mem, tips)
        grown.append(int(pygit2.settings.cached_memory[0]) - before)
        return rows

    monkeypatch.setattr(exporting, "_walk", measured)
    with Memory.open(repo) as mem:  # a fresh repository object: nothing cached yet
        exported = export_json(list(export_events(mem, None)))
    assert grown and grown[0] <= 0
    with Memory.open(repo) as mem:
        assert exported == export_json(held_in_memory(mem, None))
