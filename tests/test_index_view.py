"""An index view's lifetime: what it holds open, and that closing lets go of it.

A long-lived reader (the MCP server, the daemon) holds an ``IndexView`` for
hours while refreshes write new generations. ``close()`` (or leaving a
``with`` block) must release the memory-mapped tables, the Tantivy and
usearch indexes and the open files, so the generation can be removed or
replaced; a closed view refuses to answer instead of reading freed memory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import git, init_repo, scratch_repo

from gitmem.capture.sealer import Draft
from gitmem.errors import UsageError
from gitmem.index.view import IndexView
from gitmem.memory.api import Memory
from gitmem.retrieval.search import search

LINUX = Path("/proc/self/maps").exists()


def held(directory: Path) -> set[str]:
    """Files under ``directory`` this process maps or has open (Linux's /proc)."""
    root = str(directory)
    found = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed meanwhile
            continue
    return {path for path in found if path.startswith(root)}


@pytest.fixture
def heron_notes(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    with Memory.open(repo) as mem:
        for i in range(30):
            mem.note(f"heron {i} nests in the marsh", session=f"s{i % 3}")
    return repo


def test_close_releases_the_files_and_a_closed_view_refuses(heron_notes: Path) -> None:
    view = IndexView.open(heron_notes)
    # every part is open (tables, full text, vectors), and a caller kept two of them
    parts = (view.fulltext, view.vectors)
    assert parts[1] is not None
    hits = search(view, "heron marsh", limit=5).hits
    assert hits and view.window({}).sessions(1, None, 3).recent
    generation = view.directory
    if LINUX:
        names = {Path(p).name for p in held(generation)}
        assert {*view.manifest.segments, "members.arrow", "vectors.usearch"} <= names
    view.close()
    assert view.closed
    if LINUX:
        assert held(generation) == set()
    window = view.window  # a bound method: calling it must fail too
    for use in (
        view.events,
        lambda: view.get(hits[0].event.id),
        lambda: view.fulltext,
        lambda: view.vectors,
        lambda: window({}).everything(),
        lambda: search(view, "heron"),
    ):
        with pytest.raises(UsageError, match="closed"):
            use()
    view.close()  # closing twice is harmless


def test_after_close_the_generation_can_go_and_a_new_view_works(heron_notes: Path) -> None:
    with IndexView.open(heron_notes) as view:
        before = [e.id for e in view.events()]
        generation = view.directory
        search(view, "heron")
    assert view.closed
    shutil.rmtree(generation)  # what a refresh does to a generation no one reads
    with Memory.open(heron_notes) as mem:
        late = mem.note("an egret fishes at dawn")
    with IndexView.open(heron_notes) as again:
        assert again.directory != generation
        assert [e.id for e in again.events()] == [*before, late.id]
        assert next(h.event.id for h in search(again, "egret dawn").hits) == late.id


def test_leaving_the_block_by_an_error_closes_the_view(heron_notes: Path) -> None:
    with pytest.raises(KeyError), IndexView.open(heron_notes, embed=False) as view:
        raise KeyError("boom")
    assert view.closed


def test_a_view_keeps_one_window_per_branch_and_follows_a_checkout(tmp_path: Path) -> None:
    """Windows (and their decision book) are kept per view, keyed by the
    branch they resolve to: a checkout between two queries of a long-lived
    view reads the other branch, never the first one's cached answers."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    git(repo, "config", "edda.followTrunk", "none")
    with Memory.open(repo) as mem:
        mem.decide("db", "postgres")
        git(repo, "checkout", "-q", "-b", "feat")
        mem.decide("db", "sqlite")
        git(repo, "checkout", "-q", "main")
    with IndexView.open(repo) as view:
        first = view.window({})
        assert view.window({}) is first  # the same branch: the same window
        assert first.book() is first.book()
        on_main = [o.text for o in first.book().outlines(superseded=False)]
        git(repo, "checkout", "-q", "feat")
        other = view.window({})
        assert other is not first
        on_feat = [o.text for o in other.book().outlines(superseded=False)]
        assert any("postgres" in line for line in on_main)
        assert any("sqlite" in line for line in on_feat)
        assert not any("sqlite" in line for line in on_main)
        # the pool mask follows the checkout too
        assert search(view, "sqlite", mode="lexical").hits
        git(repo, "checkout", "-q", "main")
        assert not search(view, "sqlite", mode="lexical").hits
    with pytest.raises(UsageError):
        view.window({})


@pytest.mark.parametrize("limit", [1, 3, 7, 50])
def test_the_last_events_are_taken_by_position(tmp_path: Path, limit: int) -> None:
    import pyarrow as pa

    from gitmem.index import compute

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        for batch in range(4):
            mem.append_many([Draft("note", {"text": f"batch {batch} note {i}"}) for i in range(5)])
    with IndexView.open(repo) as view:
        whole = view.events()
        assert [e.id for e in view.events(limit=limit)] == [e.id for e in whole][-limit:]
        # a table of several chunks, as a large store's segments make it
        table = pa.concat_tables(
            [view.table.slice(0, 7), view.table.slice(7, 6), view.table.slice(13)]
        )
        assert table.column("id").num_chunks == 3
        ids = table.column("id").to_pylist()
        for positions in ([0], [1, 2, 3, 9], [0, 5, 6, 7, 19], list(range(20)), []):
            picked = compute.rows_at(table, np.asarray(positions, dtype=np.intp))
            assert picked.column("id").to_pylist() == [ids[p] for p in positions]


def test_get_by_any_prefix_agrees_with_a_scan_of_every_id(tmp_path: Path) -> None:
    from gitmem.errors import AmbiguousIdError, NotFoundError

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.append_many([Draft("note", {"text": f"note {i}"}) for i in range(300)])
    with IndexView.open(repo) as view:
        ids = view.table.column("id").to_pylist()
        for eid in ids[:60]:
            for k in (4, 5, 15, 16, 17, 40, 64):
                prefix = eid[:k]
                matching = [i for i in ids if i.startswith(prefix)]
                if len(matching) == 1:
                    assert view.get(prefix.upper()).id == eid
                else:
                    with pytest.raises(AmbiguousIdError):
                        view.get(prefix)
        with pytest.raises(NotFoundError):
            view.get("0000000000000000000000")
