"""Redaction across clones that sync: the bytes really leave every object store.

A redacted payload can be held by more than the local payload store: the
private mirror of a remote's payload store (``refs/edda-remotes/*/payloads``),
reflogs of those refs, packs, and the remote itself. These tests use real
clones of a real bare remote and scan the raw contents of every object with
``git cat-file --batch-all-objects --batch``, so loose, packed and unreachable
objects are all searched.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import (
    cli,
    clone,
    git,
    init_repo,
    make_remote,
    object_bytes,
    payload_blob_id,
    ref_tip,
    run_cli,
    store_snapshots,
)

from gitmem.memory.api import Memory
from gitmem.records import layout

SECRET = "okapi-leak-7f3e91c4"  # distinctive, and nothing the secret scrubber masks
BIG_SECRET = "giraffe-leak-big-52ac"  # inside a text stored as an attachment
PAYLOAD_MIRROR = "refs/edda-remotes/origin/payloads"


# helpers -----------------------------------------------------------------------------
def edda(repo: Path, *args: str) -> str:
    """``git edda ARGS`` in this process; it must succeed. Returns its output."""
    code, out, err = run_cli(repo, *args)
    assert code == 0, (args, code, out, err)
    return out


def edda_json(repo: Path, *args: str) -> dict:
    return json.loads(edda(repo, *args, "--json"))


def note(repo: Path, text: str) -> str:
    return str(edda_json(repo, "note", text)["id"])


def big_text(marker: str) -> str:
    """A text over the attachment threshold: its bytes live in an attachment blob."""
    filler = "".join(f"line {i}: nothing to see here, move along\n" for i in range(300))
    text = f"{marker}\n{filler}{marker}-end"
    assert len(text.encode()) >= layout.ATTACHMENT_MIN_BYTES
    return text


def leaks(repo: Path, *markers: str) -> list[str]:
    """The markers whose bytes are still somewhere in ``repo``'s object store."""
    raw = object_bytes(repo)
    return [m for m in markers if m.encode() in raw]


def remote_leaks(remote: Path, *markers: str) -> list[str]:
    """The same for the bare remote, after it pruned what nothing reaches."""
    git(remote, "gc", "-q", "--prune=now")
    return leaks(remote, *markers)


def payload_blob(repo: Path, event_id: str, ref: str = layout.PAYLOAD_REF) -> str:
    blob = payload_blob_id(repo, layout.payload_path(event_id), ref)
    assert blob is not None
    return blob


def purge_list(repo: Path) -> set[str]:
    path = repo / ".git" / "edda" / "purge-list"
    return set(path.read_text().split()) if path.exists() else set()


def has_object(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo).returncode == 0


def store_holds(repo: Path, marker: str) -> bool:
    """Whether the current payload store (not history) holds ``marker``."""
    snapshots = store_snapshots(repo)
    proc = subprocess.run(["git", "grep", "-q", marker, *snapshots], cwd=repo)
    return bool(snapshots) and proc.returncode == 0


def assert_verified(repo: Path) -> None:
    with Memory.open(repo) as mem:
        report = mem.verify()
        assert report.ok, report.problems
    git(repo, "fsck", "--no-dangling")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


# the whole round trip ----------------------------------------------------------------
@pytest.mark.parametrize("reflogs", ["default", "always"])
def test_redaction_leaves_no_bytes_in_any_clone_nor_the_remote(
    tmp_path: Path, remote: Path, reflogs: str
) -> None:
    """A notes a secret (and a large one, stored as an attachment); A and B sync; A
    redacts both and syncs; B syncs; both gc. No clone and not the remote holds
    either text any more, while a harmless note survives everywhere."""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    if reflogs == "always":  # every ref, mirrors included, keeps a reflog of old values
        for repo in (a, b):
            git(repo, "config", "core.logAllRefUpdates", "always")
    small = note(a, f"the token is {SECRET}")
    big = note(a, big_text(BIG_SECRET))
    keep = note(a, "harmless survivor note")
    edda(a, "sync")
    edda(b, "sync")
    assert leaks(b, SECRET, BIG_SECRET) == [SECRET, BIG_SECRET]

    edda(a, "redact", small, "--reason", "leaked token")
    edda(a, "redact", big, "--reason", "leaked token")
    edda(a, "sync")
    assert edda_json(b, "sync")["payloads_removed"] == 2
    for repo in (a, b):
        result = edda_json(repo, "gc")
        assert result["destroyed"] >= 2, result
        assert result["pending"] == 0, result
        assert leaks(repo, SECRET, BIG_SECRET) == []
        assert purge_list(repo) == set()
        assert "harmless survivor note" in edda(repo, "show", keep)
        assert_verified(repo)
    assert remote_leaks(remote, SECRET, BIG_SECRET) == []
    assert b"harmless survivor note" in object_bytes(remote)


def test_gc_before_the_redaction_is_pushed(tmp_path: Path, remote: Path) -> None:
    """The sequence of the bug report: note, sync, redact, gc, sync, gc. The first gc
    already destroys the local bytes although the mirror of the remote still had
    them; the sync that pushes the redaction fetches them once more from the
    remote, and the second gc destroys them again."""
    a = clone(remote, tmp_path / "a")
    secret = note(a, f"the token is {SECRET}")
    edda(a, "sync")
    blob = payload_blob(a, secret)
    assert payload_blob(a, secret, PAYLOAD_MIRROR) == blob

    edda(a, "redact", secret, "--reason", "leaked token")
    first = edda_json(a, "gc")
    assert first["destroyed"] == 1, first
    assert leaks(a, SECRET) == []
    assert purge_list(a) == set()
    assert_verified(a)

    edda(a, "sync")
    assert not store_holds(remote, SECRET)
    assert remote_leaks(remote, SECRET) == []
    edda(a, "gc")
    assert leaks(a, SECRET) == []
    assert purge_list(a) == set()
    assert_verified(a)


def test_redact_purge_reports_what_it_destroyed(tmp_path: Path, remote: Path) -> None:
    a = clone(remote, tmp_path / "a")
    secret = note(a, f"the token is {SECRET}")
    edda(a, "sync")
    out = edda(a, "redact", secret, "--reason", "leaked token", "--purge")
    assert "purged 1 object from" in out
    assert leaks(a, SECRET) == []
    edda(a, "sync")
    edda(a, "gc")
    assert leaks(a, SECRET) == []
    assert remote_leaks(remote, SECRET) == []


# a clone that was not there when the redaction happened ------------------------------
def test_stale_clone_drops_the_payload_and_does_not_bring_it_back(
    tmp_path: Path, remote: Path
) -> None:
    """C synced before the redaction and syncs only after it: it drops the payload,
    destroys the bytes at its gc, and the remote never gets the payload back."""
    a = clone(remote, tmp_path / "a")
    c = clone(remote, tmp_path / "c")
    secret = note(a, f"the token is {SECRET}")
    edda(a, "sync")
    edda(c, "sync")
    assert leaks(c, SECRET) == [SECRET]

    edda(a, "redact", secret, "--reason", "leaked token")
    edda(a, "sync")
    note(c, "c keeps working meanwhile")  # C has something of its own to push
    report = edda_json(c, "sync")
    assert report["payloads_removed"] == 1
    assert report["payloads_pushed"]
    result = edda_json(c, "gc")
    assert result["destroyed"] >= 1, result
    assert leaks(c, SECRET) == []
    assert_verified(c)
    assert not store_holds(remote, SECRET)
    assert remote_leaks(remote, SECRET) == []
    edda(a, "sync")
    edda(a, "gc")
    assert leaks(a, SECRET) == []
    assert "c keeps working meanwhile" in edda(a, "log")


def test_a_stale_mirror_of_another_remote_is_rewritten(tmp_path: Path, remote: Path) -> None:
    """A second remote that never learned of the redaction: its mirror in A still
    reaches the payload. gc rewrites that mirror without it, and the next sync
    with that remote (a compare-and-swap against what it really holds) pushes
    the redaction there too."""
    other = init_repo(tmp_path / "other.git", bare=True)
    a = clone(remote, tmp_path / "a")
    git(a, "remote", "add", "backup", other.as_uri())
    secret = note(a, f"the token is {SECRET}")
    edda(a, "sync", "origin")
    edda(a, "sync", "backup")
    edda(a, "redact", secret, "--reason", "leaked token")
    edda(a, "sync", "origin")
    stale = ref_tip(a, "refs/edda-remotes/backup/payloads")
    assert payload_blob(a, secret, "refs/edda-remotes/backup/payloads")

    result = edda_json(a, "gc")
    assert result["destroyed"] == 1, result
    assert leaks(a, SECRET) == []
    assert ref_tip(a, "refs/edda-remotes/backup/payloads") != stale
    assert ref_tip(other, layout.PAYLOAD_REF) == stale  # the remote itself is untouched

    report = edda_json(a, "sync", "backup")
    assert report["payloads_pushed"]
    assert ref_tip(other, layout.PAYLOAD_REF) == ref_tip(a, layout.PAYLOAD_REF)
    assert remote_leaks(other, SECRET) == []
    edda(a, "gc")
    assert leaks(a, SECRET) == []
    assert purge_list(a) == set()


# the purge list is kept while anything holds the bytes -------------------------------
def test_the_purge_list_keeps_an_id_while_a_ref_still_reaches_it(tmp_path: Path) -> None:
    """A ref of the user's reaches an old payload snapshot: gc cannot destroy the
    bytes, says so, and keeps the id on the purge list; once the ref is gone
    the next gc destroys them."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    secret = note(repo, f"the token is {SECRET}")
    blob = payload_blob(repo, secret)
    git(repo, "update-ref", "refs/backup/payloads", store_snapshots(repo)[0])
    edda(repo, "redact", secret, "--reason", "leaked token")

    for _ in range(2):  # a second gc must not forget it either
        result = edda_json(repo, "gc")
        assert result["destroyed"] == 0
        assert result["still_referenced"] == 1
        assert result["pending"] == 1
        assert purge_list(repo) == {blob}
        assert leaks(repo, SECRET) == [SECRET]

    git(repo, "update-ref", "-d", "refs/backup/payloads")
    result = edda_json(repo, "gc")
    assert result["destroyed"] == 1
    assert result["pending"] == 0
    assert purge_list(repo) == set()
    assert leaks(repo, SECRET) == []


# redaction and sync at the same time -------------------------------------------------
def _run_all(repo: Path, commands: list[list[str]], results: list[tuple]) -> None:
    for args in commands:
        code, out, err = cli(repo, *args)
        results.append((args, code, out, err))


@pytest.mark.slow
def test_concurrent_redaction_and_sync_leave_nothing(tmp_path: Path, remote: Path) -> None:
    """One process redacts (with --purge) one secret after another while another
    syncs over and over. Whatever the interleaving: every command succeeds, no
    redacted blob still in the object store is missing from the purge list, and
    after a last sync and gc neither clone nor the remote holds any secret."""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    rounds = 10
    markers = [f"{SECRET}-{i}" for i in range(rounds)]
    with Memory.open(a) as mem:
        ids = [mem.note(f"secret number {i}: {m}").id for i, m in enumerate(markers)]
        mem.note("harmless survivor note")
    edda(a, "sync")
    edda(b, "sync")
    blobs = {payload_blob(a, eid) for eid in ids}

    results: list[tuple] = []
    workers = [
        threading.Thread(
            target=_run_all,
            args=(a, [["redact", eid, "--reason", "leak", "--purge"] for eid in ids], results),
        ),
        threading.Thread(target=_run_all, args=(a, [["sync"]] * (rounds + 2), results)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for args, code, out, err in results:
        assert code == 0, (args, code, out, err)

    still_there = {oid for oid in blobs if has_object(a, oid)}
    assert still_there <= purge_list(a), "redacted bytes left on disk with no purge list entry"

    edda(a, "sync")
    edda(b, "sync")
    for repo in (a, b):
        edda(repo, "gc")
        assert leaks(repo, *markers) == []
        assert purge_list(repo) == set()
        assert_verified(repo)
        with Memory.open(repo) as mem:
            assert all(mem.get(eid).redacted for eid in ids)
    assert remote_leaks(remote, *markers) == []
    assert b"harmless survivor note" in object_bytes(remote)
