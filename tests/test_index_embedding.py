"""Which events get vectors, and embedding that never holds a refresh up
(gitmem.index.embedding): ``edda.embed.types``, ``edda.embed.budget``, the
texts a refresh leaves for later, and who catches up with them.

Real repositories, the real refresh and the default (MiniLM) embedder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli, git, scratch_repo

from gitmem.app import retrieve
from gitmem.capture.sealer import Draft
from gitmem.daemon.server import Daemon
from gitmem.errors import UsageError
from gitmem.index.embedding import DEFERRED, deferred, embed_budget, embed_types
from gitmem.index.manifest import index_root, read_manifest
from gitmem.index.refresh import is_fresh, refresh
from gitmem.index.vectors import VECTORS_FILE, Vectors, key64
from gitmem.index.view import IndexView
from gitmem.memory.api import Memory
from gitmem.retrieval.search import search
from gitmem.storage.locate import locate

ANIMALS = [
    "axolotl",
    "pangolin",
    "narwhal",
    "okapi",
    "quokka",
    "tapir",
    "wombat",
    "capybara",
    "platypus",
    "ocelot",
]


def notes(n: int) -> list[Draft]:
    return [
        Draft("note", {"text": f"the {ANIMALS[i % 10]} number {i} eats leaf {i * 7}"})
        for i in range(n)
    ]


def observation(command: str) -> Draft:
    return Draft("observation", {"kind": "command", "input": command, "result": "ok"})


def manifest_of(repo: Path):  # type: ignore[no-untyped-def]
    manifest = read_manifest(index_root(locate(repo)))
    assert manifest is not None
    return manifest


def vector_keys(repo: Path, ids: list[str]) -> list[bool]:
    manifest = manifest_of(repo)
    path = index_root(locate(repo)) / manifest.generation / VECTORS_FILE
    return Vectors(path, manifest.dim).contains([key64(i) for i in ids])


def test_settings_are_read_and_checked() -> None:
    assert embed_budget({}) == 0.25
    assert embed_budget({"edda.embed.budget": ["2.5"]}) == 2.5
    assert embed_budget({"edda.embed.budget": ["1s"]}) == 1.0
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(UsageError, match=r"edda\.embed\.budget"):
            embed_budget({"edda.embed.budget": [bad]})
    default = embed_types({})
    assert default is not None and "observation" not in default
    assert {"note", "decision", "prompt", "commit_link"} <= default
    assert embed_types({"edda.embed.types": ["all"]}) is None
    assert embed_types({"edda.embed.types": ["note, decision"]}) == {"note", "decision"}
    assert embed_types({"edda.embed.types": ["note observation"]}) == {"note", "observation"}
    with pytest.raises(UsageError, match="unknown event type notes"):
        embed_types({"edda.embed.types": ["notes"]})


def test_observations_get_no_vector_unless_asked(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        note, seen = mem.append_many([notes(1)[0], observation("pytest tests/test_pangolin.py")])
        report = refresh(mem)
    assert report.vectors == 1
    assert vector_keys(repo, [note.id, seen.id]) == [True, False]
    manifest = manifest_of(repo)
    assert manifest.unembedded == 0 and manifest.embed_error is None  # by choice, not waiting
    with IndexView.open(repo) as view:  # still found by its words
        result = search(view, "pytest", all_branches=True)
        assert [h.event.id for h in result.hits][:1] == [seen.id]
        assert not any("no vector" in w for w in result.warnings)

    # All types: 'git edda index' looks at every row and embeds what lacks a vector.
    git(repo, "config", "edda.embed.types", "all")
    report = retrieve.index(repo)
    assert report.vectors == 1 and vector_keys(repo, [note.id, seen.id]) == [True, True]
    # Back to notes only: the observation's vector goes.
    git(repo, "config", "edda.embed.types", "note")
    retrieve.index(repo)
    assert vector_keys(repo, [note.id, seen.id]) == [True, False]


def test_a_refresh_embeds_within_its_budget_and_leaves_the_rest(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.budget", "0.000001")  # nothing fits
    with Memory.open(repo) as mem:
        events = mem.append_many(notes(40))
        report = refresh(mem)
    manifest = manifest_of(repo)
    assert report.vectors < 40 and manifest.unembedded == 40 - report.vectors
    assert manifest.embed_error is not None and manifest.embed_error.startswith(DEFERRED)
    assert "edda.embed.budget" in manifest.embed_error and deferred(manifest)
    location = locate(repo)
    # Queries do not wait for embedding: the index counts as fresh...
    assert is_fresh(location, manifest)
    with IndexView.open(repo) as view:
        assert view.report is None  # ...so opening it refreshed nothing
        result = search(view, "pangolin number 11", all_branches=True)
        assert events[11].id in [h.event.id for h in result.hits]  # by its words
        assert any("have no vector yet" in w for w in result.warnings)

    # The next refresh (memory moved) goes on, newest first.
    git(repo, "config", "edda.embed.budget", "30")
    with Memory.open(repo) as mem:
        (late,) = mem.append_many([Draft("note", {"text": "the okapi hides in the forest"})])
        report = refresh(mem)
    manifest = manifest_of(repo)
    assert manifest.unembedded == 0 and manifest.embed_error is None and not deferred(manifest)
    assert all(vector_keys(repo, [e.id for e in [*events, late]]))
    with IndexView.open(repo) as view:
        result = search(view, "a shy striped animal in the woods", all_branches=True, mode="vector")
        assert result.hits and not any("no vector" in w for w in result.warnings)


def test_git_edda_index_has_no_budget(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.budget", "0.000001")
    with Memory.open(repo) as mem:
        events = mem.append_many(notes(12))
        refresh(mem)
    assert manifest_of(repo).unembedded > 0
    code, _out, err = cli(repo, "index")
    assert code == 0, err
    manifest = manifest_of(repo)
    assert manifest.unembedded == 0 and manifest.embed_error is None
    assert all(vector_keys(repo, [e.id for e in events]))


def test_texts_left_by_a_refresh_without_embeddings_are_embedded_by_the_next_query(
    tmp_path: Path,
) -> None:
    """A refresh that does not embed (log, show, status read through one)
    leaves texts that no refresh has tried: the next search embeds them,
    within its budget."""
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        (event,) = mem.append_many([Draft("note", {"text": "the quokka smiles"})])
        refresh(mem, embed=False)
    manifest = manifest_of(repo)
    assert manifest.unembedded == 1 and manifest.embed_error is None and deferred(manifest)
    assert not is_fresh(locate(repo), manifest)
    with IndexView.open(repo) as view:
        assert view.report is not None and view.report.vectors == 1
    assert vector_keys(repo, [event.id]) == [True]


def test_the_daemon_catches_up_in_its_lulls(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.budget", "0.000001")
    with Memory.open(repo) as mem:
        events = mem.append_many(notes(10))
        refresh(mem)
    assert deferred(manifest_of(repo))
    daemon = Daemon(locate(repo), idle_timeout=60)
    assert daemon.catch_up() is True  # the index is fresh, and texts wait
    assert daemon.embed_round() is True  # a round that cannot finish: the next one goes on
    git(repo, "config", "edda.embed.budget", "30")
    assert daemon.embed_round() is False
    assert manifest_of(repo).unembedded == 0
    assert all(vector_keys(repo, [e.id for e in events]))
    assert daemon.catch_up() is False  # nothing waits: nothing to do


def test_a_query_rebuilds_the_vectors_when_the_model_changed(tmp_path: Path) -> None:
    """gitmem's default changed (static before), or edda.embed.* did: the first
    query refreshes and re-embeds (within its budget) instead of searching by
    words alone until memory moves."""
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", "static")
    with Memory.open(repo) as mem:
        (event,) = mem.append_many([Draft("note", {"text": "the tapir swims at dusk"})])
        refresh(mem)
    assert manifest_of(repo).model is not None
    assert manifest_of(repo).model.startswith("static:")
    git(repo, "config", "--unset", "edda.embed.provider")
    with IndexView.open(repo) as view:
        assert view.report is not None and view.report.rebuilt == ["vectors (model)"]
        result = search(view, "an animal swimming in the evening", mode="vector")
        assert [h.event.id for h in result.hits][:1] == [event.id] and result.warnings == []
    assert manifest_of(repo).model.startswith("minilm:")
    with IndexView.open(repo) as view:
        assert view.report is None  # the same model now: nothing to do
