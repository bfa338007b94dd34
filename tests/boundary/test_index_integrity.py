"""A damaged sidecar index is never read: queries rebuild it and answer in full.

Each case damages the index of a real repository (flipped bits at several
offsets of every kind of file, truncation, an older table copied over the
current one, a directory where a file belongs or a file where a directory
belongs), then runs a query command on it. The command must exit 0 with
exactly what the same commands answer from a freshly rebuilt index, and leave
an index whose every byte matches its manifest. Before the checksums, a flipped
bit in ``events.arrow`` was an internal error (or a crash), one in
``members.arrow`` made ``log`` drop an event silently, and an older table under
a newer manifest hid events until ``git edda index --rebuild``.

Also here: ``redact`` and ``gc`` remove redacted text from the index at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, init_repo, isolated_environment, pack_objects, run_cli

from gitmem.capture.sealer import Draft
from gitmem.errors import IndexDamagedError
from gitmem.index import table as tables
from gitmem.index.fulltext import FullText, analyze
from gitmem.index.manifest import check_generation, index_root, read_manifest
from gitmem.index.refresh import refresh
from gitmem.index.vectors import VECTORS_FILE
from gitmem.index.view import IndexView
from gitmem.memory.api import Memory
from gitmem.sidecar import manifest as sidecar_manifest
from gitmem.storage.locate import locate

NOW = "2031-01-01"
Damage = Callable[[Path, Path, Any], None]  # (index root, generation, manifest)


# the store ----------------------------------------------------------------------------
def _index(repo: Path) -> tuple[Path, Path, Any]:
    root = index_root(locate(repo))
    manifest = read_manifest(root)
    assert manifest is not None
    return root, root / manifest.generation, manifest


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A repository whose index was built, then refreshed incrementally after
    more events (main and a fork), with the tables of the first version kept
    aside; and what every command answers after a fresh ``--rebuild``."""
    base = tmp_path_factory.mktemp("integrity")
    with isolated_environment(tmp_path_factory.mktemp("home")):
        repo = init_repo(base / "template")
        git(repo, "config", "edda.fsync", "false")
        git(repo, "branch", "feat")
        with Memory.open(repo) as mem:
            mem.append_many(
                [Draft("note", {"text": f"heron {i} nests in marsh {i}"}) for i in range(20)]
            )
            decision = mem.decide("db.engine", "postgres", reason="the heron team knows it")
            refresh(mem)
            _root, gen, _manifest = _index(repo)
            old = base / "old-tables"
            old.mkdir()
            shutil.copy2(gen / tables.MEMBERS_FILE, old / tables.MEMBERS_FILE)
            shutil.copy2(gen / _manifest.segments[0], old / "events")
            mem.append_many(
                [Draft("note", {"text": f"egret {i} fishes at dawn"}) for i in range(11)]
                + [Draft("note", {"text": f"feat egret {i}"}, branch="feat") for i in range(5)]
            )
            assert refresh(mem).mode == "incremental"
        pack_objects(repo)  # every case copies it five times
        reference = base / "reference"
        shutil.copytree(repo, reference, symlinks=True)
        code, _out, err = run_cli(reference, "index", "--rebuild")
        assert code == 0, err
        commands = _commands(decision.id)
        expected = {name: _answer(reference, args) for name, args in commands.items()}
        assert len(expected["log"]["events"]) == 32  # 21 + 11 on main: feat's 5 are not on main
        yield {"repo": repo, "old": old, "commands": commands, "expected": expected}


def _commands(decision: str) -> dict[str, tuple[str, ...]]:
    return {
        "log": ("log", "--json"),
        "show": ("show", decision, "--json"),
        "search": ("search", "heron egret marsh", "--json", "--now", NOW, "--limit", "50"),
        "context": ("context", "heron", "--json", "--now", NOW),
        "status": ("status", "--json"),
    }


def _answer(repo: Path, args: tuple[str, ...]) -> Any:
    code, out, err = run_cli(repo, *args)
    assert code == 0, (args, code, err)
    data = json.loads(out)
    if isinstance(data, dict):
        data.pop("repository", None)  # status names the copy's path
    return data


def _copy(template: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the template whose index has been read once, so its stamps
    match (the damage is then found through the cheap path queries take)."""
    repo = tmp_path / "repo"
    shutil.copytree(template["repo"], repo, symlinks=True)
    assert run_cli(repo, "status")[0] == 0
    _root, gen, manifest = _index(repo)
    check_generation(gen, manifest)
    return repo


def _sound(repo: Path) -> None:
    """The index is built and every byte of it matches its manifest."""
    _root, gen, manifest = _index(repo)
    check_generation(gen, manifest, deep=True)


# the damage -------------------------------------------------------------------------------
def _fulltext_files(gen: Path, manifest: Any) -> list[str]:
    return sorted(n for n in manifest.files if n.startswith(manifest.fulltext + "/"))


def _flip(target: str, where: float | int, bit: int = 0x01) -> Damage:
    """XOR one byte of ``target`` (a path in the generation, "*manifest" for the
    manifest, or "*fulltext:<suffix>" for the Tantivy file with that suffix) at
    a fraction of its length (float) or a byte offset (int, from the end when negative)."""

    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = _resolve(target, root, gen, manifest)
        data = bytearray(path.read_bytes())
        at = int(where * len(data)) if isinstance(where, float) else where % len(data)
        data[min(at, len(data) - 1)] ^= bit
        path.write_bytes(bytes(data))

    return damage


def _flip_in(target: str, pattern: bytes) -> Damage:
    """Flip the lowest bit of the first byte matching ``pattern`` in ``target``:
    data Arrow cannot tell from valid data (a commit id, a character of a text)."""

    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = _resolve(target, root, gen, manifest)
        data = bytearray(path.read_bytes())
        found = re.search(pattern, bytes(data))
        assert found, pattern
        data[found.start()] ^= 0x01
        path.write_bytes(bytes(data))

    return damage


def _resolve(target: str, root: Path, gen: Path, manifest: Any) -> Path:
    if target == "*manifest":
        return root / "manifest.json"
    if target == EVENTS:  # the events table's first segment (the herons)
        return gen / manifest.segments[0]
    if target == LAST_EVENTS:  # its last (the egrets, added incrementally)
        return gen / manifest.segments[-1]
    if target.startswith("*fulltext:"):
        suffix = target.split(":", 1)[1]
        (name,) = [n for n in _fulltext_files(gen, manifest) if n.endswith(suffix)][:1]
        return gen / name
    return gen / target


def _truncate(target: str) -> Damage:
    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = _resolve(target, root, gen, manifest)
        os.truncate(path, path.stat().st_size // 2)

    return damage


def _older(*names: str) -> Damage:
    """The first version's tables copied over the current ones (a newer manifest)."""

    def damage(root: Path, gen: Path, manifest: Any) -> None:
        old = root.parents[3] / "old-tables"  # beside the repository (see ``damaged``)
        for name in names:
            source = old / ("events" if name == LAST_EVENTS else name)
            shutil.copyfile(source, _resolve(name, root, gen, manifest))

    return damage


def _directory_instead(target: str) -> Damage:
    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = _resolve(target, root, gen, manifest)
        path.unlink()
        path.mkdir()
        (path / "stray").write_text("x")

    return damage


def _file_instead(which: str) -> Damage:
    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = {
            "index": root,
            "generation": gen,
            "fulltext": gen / manifest.fulltext,
            "embeddings": root / "embeddings",
        }[which]
        shutil.rmtree(path)
        path.write_bytes(b"not a directory\n")

    return damage


def _garbage(target: str) -> Damage:
    def damage(root: Path, gen: Path, manifest: Any) -> None:
        path = root / target if target == "lock" else gen / target
        if target == "lock":
            path.unlink(missing_ok=True)
            path.mkdir()
        else:
            path.write_bytes(b"\x00\xffgarbage")

    return damage


ARROW = (0, 0.25, 0.5, 0.75, -1)  # the magic, data, the footer
EVENTS, LAST_EVENTS = "*events", "*last-events"  # segments of the events table
DAMAGE: dict[str, Damage] = {
    **{f"flip events @{w}": _flip(EVENTS, w) for w in ARROW},
    **{f"flip events @{w} bit 7": _flip(EVENTS, w, 0x80) for w in (0.3, 0.6)},
    **{f"flip last events @{w}": _flip(LAST_EVENTS, w) for w in (0.5, -1)},
    **{f"flip members.arrow @{w}": _flip(tables.MEMBERS_FILE, w) for w in ARROW},
    "flip a commit id in members.arrow": _flip_in(tables.MEMBERS_FILE, rb"[0-9a-f]{40}"),
    "flip a text in events": _flip_in(EVENTS, rb"(?<=marsh )7"),
    "flip an event id in events": _flip_in(EVENTS, rb"[0-9a-f]{32}"),
    **{f"flip vectors @{w}": _flip(VECTORS_FILE, w) for w in (0, 0.5, -1)},
    **{
        f"flip fulltext {s}": _flip(f"*fulltext:{s}", 0.5)
        for s in ("meta.json", ".managed.json", ".idx", ".term", ".pos", ".store", ".fast")
    },
    "flip fulltext .fieldnorm end": _flip("*fulltext:.fieldnorm", -1),
    **{f"flip manifest @{w}": _flip("*manifest", w) for w in (0.1, 0.3, 0.5, 0.7, 0.9)},
    "flip manifest top bit": _flip("*manifest", 0.5, 0x80),
    **{f"truncate {t}": _truncate(t) for t in (EVENTS, LAST_EVENTS, tables.MEMBERS_FILE)},
    "truncate vectors": _truncate(VECTORS_FILE),
    "truncate fulltext .store": _truncate("*fulltext:.store"),
    "truncate manifest": _truncate("*manifest"),
    "older events": _older(LAST_EVENTS),
    "older members.arrow": _older(tables.MEMBERS_FILE),
    "older tables": _older(LAST_EVENTS, tables.MEMBERS_FILE),
    **{
        f"directory instead of {t}": _directory_instead(t)
        for t in (EVENTS, LAST_EVENTS, tables.MEMBERS_FILE, VECTORS_FILE, "*manifest")
    },
    "directory instead of fulltext meta.json": _directory_instead("*fulltext:meta.json"),
    **{f"file instead of {w} directory": _file_instead(w) for w in ("index", "generation")},
    "file instead of fulltext directory": _file_instead("fulltext"),
    "file instead of embeddings directory": _file_instead("embeddings"),
    "garbage stamps": _garbage("verified.json"),
    "garbage written record": _garbage("written.json"),
    "directory instead of the lock": _garbage("lock"),
}


@pytest.fixture
def damaged(template: dict[str, Any], tmp_path: Path) -> Callable[[str], Path]:
    """``damaged(case)``: a fresh copy of the template with that damage done."""
    copies = iter(range(1000))

    def make(case: str) -> Path:
        repo = _copy(template, tmp_path / f"c{next(copies)}")
        # _older finds the old tables four levels above the index root
        shutil.copytree(template["old"], repo.parent / "old-tables")
        root, gen, manifest = _index(repo)
        assert root.parents[3] == repo.parent
        DAMAGE[case](root, gen, manifest)
        return repo

    return make


@pytest.mark.parametrize("case", list(DAMAGE))
def test_every_query_answers_in_full_from_a_damaged_index(
    template: dict[str, Any], damaged: Callable[[str], Path], case: str
) -> None:
    for name, args in template["commands"].items():
        repo = damaged(case)  # each command meets the damage itself
        code, out, err = run_cli(repo, *args)
        assert code == 0, (name, err)
        assert "internal error" not in err
        data = json.loads(out)
        if isinstance(data, dict):
            data.pop("repository", None)
        assert data == template["expected"][name], name
        _sound(repo)


def test_cli_search_in_a_fresh_process_survives_flipped_bits(
    template: dict[str, Any], damaged: Callable[[str], Path]
) -> None:
    """The process, not only the library: a flipped offset in an Arrow file
    mapped without a check could crash it (a segmentation fault)."""
    repo = damaged("flip events @0.5")
    args = template["commands"]["search"]
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)], capture_output=True
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == template["expected"]["search"]


def test_git_edda_index_checks_every_byte(template: dict[str, Any], tmp_path: Path) -> None:
    """Damage the file system does not see (the stamps still match: a failing
    disk) escapes the cheap check of queries, and 'git edda index' finds it."""
    repo = _copy(template, tmp_path)
    _root, gen, manifest = _index(repo)
    name = manifest.segments[0]
    path = gen / name
    before = os.stat(path)
    with open(path, "r+b") as handle:  # flip a bit, then put the times back
        handle.seek(before.st_size // 2)
        byte = handle.read(1)
        handle.seek(before.st_size // 2)
        handle.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    stamps = json.loads((gen / "verified.json").read_text())
    after = os.stat(path)
    # what a failing disk would leave: the stamp still describes the file
    stamps[name][:5] = [
        after.st_dev,
        after.st_ino,
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    ]
    (gen / "verified.json").write_text(json.dumps(stamps))
    code, out, err = run_cli(repo, "index", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["mode"] == "full" and name in report["reason"], report
    _sound(repo)
    assert _answer(repo, template["commands"]["log"]) == template["expected"]["log"]


def test_a_bug_is_not_mistaken_for_damage(
    template: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only damage rebuilds the index: any other error reaches the caller."""
    repo = _copy(template, tmp_path)
    _root, gen, _manifest = _index(repo)

    def broken(path: Path, schema: Any) -> Any:
        raise ValueError("a bug, not damage")

    monkeypatch.setattr(tables, "read", broken)
    with pytest.raises(ValueError, match="a bug"):
        IndexView.open(repo)
    assert _index(repo)[1] == gen  # no rebuild happened


def test_a_bug_in_a_refresh_is_not_mistaken_for_damage(
    template: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh rebuilds only on IndexDamagedError: the same failure as any
    other error (a ValueError from a reader) reaches the caller."""
    repo = _copy(template, tmp_path)
    _root, gen, _manifest = _index(repo)

    def failing(error: Exception) -> Callable[[FullText], int]:
        def count(self: FullText) -> int:
            raise error

        return count

    monkeypatch.setattr(FullText, "count", failing(ValueError("a bug, not damage")))
    with Memory.open(repo) as mem:
        with pytest.raises(ValueError, match="a bug"):
            refresh(mem)
        assert _index(repo)[1] == gen  # no rebuild happened
        # the control: damage, reported as such, is rebuilt
        monkeypatch.setattr(FullText, "count", failing(IndexDamagedError("a flipped bit")))
        report = refresh(mem)
    assert report.mode == "full" and "a flipped bit" in report.reason
    assert _index(repo)[1] != gen


def test_a_bug_reading_the_manifest_is_not_taken_for_a_missing_one(
    template: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No manifest means "build the index"; an error in our own code reading
    it must not mean that (it would rebuild the index on every query)."""
    repo = _copy(template, tmp_path)
    root, gen, _manifest = _index(repo)

    def broken(fields: dict[str, Any]) -> str:
        raise TypeError("a bug, not damage")

    monkeypatch.setattr(sidecar_manifest, "checksum", broken)
    with pytest.raises(TypeError, match="a bug"):
        read_manifest(root)
    with pytest.raises(TypeError, match="a bug"):
        IndexView.open(repo)
    monkeypatch.undo()
    assert _index(repo)[1] == gen  # no rebuild happened


def test_a_file_instead_of_the_embedding_cache_when_memory_moved(
    template: dict[str, Any], tmp_path: Path
) -> None:
    """The refresh then needs the cache (for the new event's vector)."""
    repo = _copy(template, tmp_path)
    root, _gen, _manifest = _index(repo)
    shutil.rmtree(root / "embeddings")
    (root / "embeddings").write_bytes(b"not a directory\n")
    with Memory.open(repo) as mem:
        extra = mem.note("the ibis wades in the shallows")
    code, out, err = run_cli(repo, "search", "ibis shallows", "--mode", "vector", "--json")
    assert code == 0, err
    assert json.loads(out)["hits"][0]["id"] == extra.id
    assert (root / "embeddings").is_dir()
    _sound(repo)


# a refresh rewriting files while a query opens the index ---------------------------------
SLOW_REFRESH = """
import sys
from gitmem.index.refresh import refresh
from gitmem.memory.api import Memory
from gitmem.storage.locate import locate

def progress(stage, done, total):
    if stage == "embeddings":  # the full text is updated in place; tables not yet
        print("paused", flush=True)
        sys.stdin.readline()

with Memory.open(sys.argv[1]) as mem:
    print(refresh(mem, progress=progress).mode, flush=True)
"""


def test_a_refresh_in_progress_is_not_taken_for_damage(
    template: dict[str, Any], tmp_path: Path
) -> None:
    repo = _copy(template, tmp_path)
    with Memory.open(repo) as mem:
        extra = mem.note("ibis wades in the shallows")
    builder = subprocess.Popen(
        [sys.executable, "-c", SLOW_REFRESH, str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert builder.stdin is not None and builder.stdout is not None
    try:
        assert builder.stdout.readline().strip() == "paused"
        # The manifest is the previous one, the full text already the next one.
        _root, gen, manifest = _index(repo)
        with pytest.raises(IndexDamagedError):
            check_generation(gen, manifest)
        stdin = builder.stdin

        def resume() -> None:
            stdin.write("go\n")
            stdin.flush()

        threading.Timer(1.0, resume).start()
        with IndexView.open(repo, wait=0.1) as view:
            assert view.report is not None and view.report.mode == "none", view.report
            assert view.manifest.generation == gen.name  # the same generation: no rebuild
            assert extra.id in [e.id for e in view.events()]
    finally:
        builder.stdin.close()
        assert builder.wait(timeout=60) == 0
    assert builder.stdout.read().strip() == "incremental"


# a refresh killed before its manifest write --------------------------------------------------
def test_files_written_by_a_refresh_that_died_are_not_damage(
    template: dict[str, Any], tmp_path: Path
) -> None:
    repo = _copy(template, tmp_path)
    root, _gen, _manifest = _index(repo)
    saved = (root / "manifest.json").read_bytes()
    with Memory.open(repo) as mem:
        mem.note("ibis wades in the shallows")
        assert refresh(mem).mode == "incremental"
        (root / "manifest.json").write_bytes(saved)  # died before this write
        assert refresh(mem).mode == "incremental"  # redone, not rebuilt
    _sound(repo)


# redaction: the index's copy goes at once ------------------------------------------------------
SECRET = "quokkapassword"


def _secret_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    with Memory.open(repo) as mem:
        mem.note("the deploy key rotates monthly")
        target = mem.note(f"the staging password is {SECRET}", tags=["creds"])
    code, _out, err = run_cli(repo, "index")
    assert code == 0, err
    assert _files_with_secret(repo)  # the index really held it
    return repo, target.id


def _files_with_secret(repo: Path) -> list[str]:
    root = index_root(locate(repo))
    needles = {SECRET.encode(), *(t.encode() for t in analyze(SECRET))}
    found = []
    for directory, _dirs, names in os.walk(root):
        for name in names:
            data = (Path(directory) / name).read_bytes()
            if any(n in data for n in needles):
                found.append(str(Path(directory) / name))
    return found


@pytest.mark.parametrize("purge", [False, True])
def test_redact_removes_the_text_from_the_index_before_any_query(
    tmp_path: Path, purge: bool
) -> None:
    repo, target = _secret_repo(tmp_path)
    code, out, err = run_cli(
        repo, "redact", target, "--reason", "leaked", "--json", *(["--purge"] if purge else [])
    )
    assert code == 0, err
    assert json.loads(out)["index_redacted"] == 1
    assert _files_with_secret(repo) == []
    _sound(repo)


def test_gc_removes_text_redacted_elsewhere_from_the_index(tmp_path: Path) -> None:
    """A redaction the index has not seen yet (written through the library,
    as one fetched by sync would be) leaves it with 'git edda gc'."""
    repo, target = _secret_repo(tmp_path)
    with Memory.open(repo) as mem:
        mem.redact(target, "leaked")
    assert _files_with_secret(repo)
    code, out, err = run_cli(repo, "gc", "--json")
    assert code == 0, err
    assert json.loads(out)["index_redacted"] == 1
    assert _files_with_secret(repo) == []
    _sound(repo)


def test_redact_without_an_index_builds_none(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        target = mem.note(f"the staging password is {SECRET}")
    code, out, err = run_cli(repo, "redact", target.id, "--reason", "leaked", "--json")
    assert code == 0, err
    assert "index_redacted" not in json.loads(out)
    assert not index_root(locate(repo)).exists()
