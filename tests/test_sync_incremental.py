"""Sync costs what is new, not what the store holds (spec/sync.md, "Incremental
transfer"), and its shortcuts give what the full computation gives:

* a push sends ``refs/edda/store-base/<week>`` (parent: the partition it replaces),
  so git sends only what a new payload snapshot adds, both ways; a redaction's
  push gives it no parent, so no removed bytes stay reachable on the remote,
  and ``gc`` drops a mirrored base before destroying bytes;
* payload stores are compared with git's tree diff: the same answers as
  comparing them entry by entry (libgit2 and git CLI alike);
* a sync that finds nothing moved does not look for code merges again, and
  fork records found incrementally are the ones a full walk finds.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import cli, clone, git, make_remote, object_bytes, payload_blob_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gitmem.branches.detect as detect
from gitmem import Memory
from gitmem.records import layout
from gitmem.storage import heads
from gitmem.storage.backends.gitcli import GitCliBackend
from gitmem.storage.backends.libgit2 import Libgit2Backend
from gitmem.storage.locate import locate
from gitmem.storage.objects import ObjectBatch
from gitmem.storage.payloads import Roots

SECRET = "s3cr3t-incremental-xyz"


def notes(repo: Path, texts: list[str]) -> list[str]:
    with Memory.open(repo) as mem:
        return [mem.note(text).id for text in texts]


def newest_pack_size(git_dir: Path) -> int:
    """Objects in the most recent pack of ``git_dir`` (transfers kept as packs)."""
    packs = sorted((git_dir / "objects" / "pack").glob("*.idx"), key=lambda p: p.stat().st_mtime)
    with open(packs[-1], "rb") as idx:
        listing = subprocess.run(
            ["git", "show-index"], stdin=idx, capture_output=True, check=True, cwd=git_dir
        ).stdout
    return len(listing.splitlines())


def reachable(repo: Path, *refs: str) -> set[str]:
    out = git(repo, "rev-list", "--objects", *refs)
    return {line.split()[0] for line in out.splitlines()}


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = make_remote(tmp_path)
    git(bare, "config", "transfer.unpackLimit", "1")  # every push lands as one pack
    return bare


def partition(repo: Path) -> str:
    """The payload store's one partition (the tests' events are all this week)."""
    (name,) = git(repo, "ls-tree", "--name-only", layout.PAYLOAD_REF).split()
    return name


def test_push_and_fetch_send_only_what_a_snapshot_adds(tmp_path: Path, remote: Path) -> None:
    """With 120 payloads on the remote, one new event travels as a handful of
    objects each way; without the base, git would send (nearly) every payload
    again, because a snapshot has no parent to tell it what the other side has."""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    git(b, "config", "transfer.unpackLimit", "1")
    notes(a, [f"note {i}" for i in range(120)])
    assert cli(a, "sync")[0] == 0
    assert cli(b, "pull")[0] == 0
    week = partition(remote)
    old = git(remote, "rev-parse", layout.partition_ref(week)).strip()
    assert git(remote, "for-each-ref", "refs/edda/store-base") == ""  # a first push has none

    notes(a, ["one more"])
    assert cli(a, "sync")[0] == 0
    new = git(remote, "rev-parse", layout.partition_ref(week)).strip()
    base = git(remote, "rev-parse", layout.partition_base_ref(week)).strip()
    assert git(remote, "log", "-1", "--format=%P", base).split() == [old]
    assert (
        git(remote, "rev-parse", f"{base}^{{tree}}").strip()
        == git(remote, "hash-object", "-t", "tree", "/dev/null").strip()
    )
    # What git would send for the new snapshot on its own: the control.
    assert len(reachable(remote, new, "--not", old)) > 100
    assert newest_pack_size(remote) < 20  # the push: chain commit, event, payload, trees

    assert cli(b, "pull")[0] == 0
    assert newest_pack_size(b / ".git") < 20  # the fetch, through the mirrored base
    with Memory.open(b) as mem:
        assert len(list(mem.events(all_branches=True))) == 121
        assert mem.verify().ok


def test_a_redaction_push_leaves_no_removed_bytes_reachable_on_the_remote(
    tmp_path: Path, remote: Path
) -> None:
    """The base pushed with a redaction has no parent: the snapshot that held
    the payload is reachable from nothing on the remote."""
    a = clone(remote, tmp_path / "a")
    secret_id, _ = notes(a, [f"the token is {SECRET}", "harmless"])
    assert cli(a, "sync")[0] == 0
    notes(a, ["later"])
    assert cli(a, "sync")[0] == 0
    base = git(remote, "rev-parse", layout.partition_base_ref(partition(remote))).strip()
    assert git(remote, "log", "-1", "--format=%P", base).strip()  # it links to the old snapshot
    secret_blob = payload_blob_id(a, layout.payload_path(secret_id))
    assert secret_blob is not None

    with Memory.open(a) as mem:
        mem.redact(secret_id, "leaked token")
    assert cli(a, "sync")[0] == 0
    base = git(remote, "rev-parse", layout.partition_base_ref(partition(remote))).strip()
    assert git(remote, "log", "-1", "--format=%P", base).strip() == ""
    assert secret_blob not in reachable(remote, "--all")


def test_gc_drops_a_mirrored_base_before_destroying_bytes(tmp_path: Path, remote: Path) -> None:
    """B pulled a base whose parent holds a payload B then redacts itself:
    purge removes the mirrored base, so the bytes really go."""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    secret_id, _ = notes(a, [f"the token is {SECRET}", "harmless"])
    assert cli(a, "sync")[0] == 0
    notes(a, ["later"])
    assert cli(a, "sync")[0] == 0
    assert cli(b, "pull")[0] == 0
    mirrored = layout.mirror_ref("origin", layout.partition_base_ref(partition(remote)))
    assert git(b, "for-each-ref", mirrored)  # the base came along, holding the secret
    with Memory.open(b) as mem:
        mem.redact(secret_id, "leaked token")
        mem.purge()
    assert git(b, "for-each-ref", mirrored) == ""
    assert SECRET.encode() not in object_bytes(b)


def test_a_sync_with_nothing_new_does_not_look_for_code_merges(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of two syncs finds nothing moved and skips the detection; a
    code merge afterwards (only code refs move) is still found."""
    a = clone(remote, tmp_path / "a")
    notes(a, ["on main"])
    git(a, "checkout", "-q", "-b", "f1")
    git(a, "commit", "-q", "--allow-empty", "-m", "feature work")
    feature_id = notes(a, ["on f1"])[0]
    git(a, "checkout", "-q", "main")
    assert cli(a, "sync")[0] == 0

    calls: list[list[str]] = []
    real = detect.code_merges

    def counted(memory: object, targets: list[str]) -> list[tuple[str, str]]:
        calls.append(targets)
        return real(memory, targets)  # type: ignore[arg-type]

    monkeypatch.setattr(detect, "code_merges", counted)
    assert cli(a, "sync")[0] == 0
    assert calls == []

    git(a, "merge", "-q", "--no-ff", "-m", "merge f1", "f1")
    code, out, err = cli(a, "sync", "--json")
    assert code == 0, err
    assert len(calls) == 1
    assert [(m["source"], m["into"]) for m in json.loads(out)["code_merges"]] == [("f1", "main")]
    with Memory.open(a) as mem:
        assert feature_id in {e.id for e in mem.events(branch="main", trunk="none")}


# payload stores compared by git's diff ------------------------------------------------
def _store(batch: ObjectBatch, ids: set[str], salt: str) -> str:
    entries: dict[str, list[tuple[str, int, str]]] = {}
    for eid in sorted(ids):
        blob = batch.blob(f'{{"text":"{eid}{salt if eid.startswith("f") else ""}"}}'.encode())
        entries.setdefault(eid[:2], []).append((eid, layout.MODE_BLOB, blob))
    fans = [(fan, layout.MODE_TREE, batch.tree(items)) for fan, items in entries.items()]
    return batch.tree([("p", layout.MODE_TREE, batch.tree(fans))] if fans else [])


hex_ids = st.sets(st.sampled_from([f"{a}{b}{'0' * 30}" for a in "0af" for b in "01"]), max_size=6)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ours=hex_ids, theirs=hex_ids)
def test_store_differences_are_those_of_an_entry_by_entry_comparison(
    tmp_path_factory: pytest.TempPathFactory, ours: set[str], theirs: set[str]
) -> None:
    """missing_payloads and changed_payloads through the tree diff of each
    partition, with both backends, against sets: ids starting with ``f``
    have other bytes in ``theirs`` (a payload altered behind gitmem's back)."""
    repo = tmp_path_factory.mktemp("diff")
    git(repo, "init", "-q")
    batch = ObjectBatch()
    week = {"0": "2026-W01", "1": "2026-W02"}  # by an id's second digit: two partitions

    def store(ids: set[str], salt: str) -> Roots:
        trees = {
            name: _store(batch, {e for e in ids if week[e[1]] == name}, salt)
            for name in sorted({week[e[1]] for e in ids})
        }
        return Roots(salt or "ours", trees, trees)

    ours_store, theirs_store = store(ours, ""), store(theirs, "x")
    batch.write(str(repo / ".git" / "objects"), fsync=False)
    for backend_class in (Libgit2Backend, GitCliBackend):
        with Memory.open(repo) as mem:
            mem.ledger.backend = backend_class(locate(repo))
            missing = dict(mem.ledger.missing_payloads(ours_store, theirs_store))
            changed = set(mem.ledger.changed_payloads(ours_store, theirs_store))
        assert set(missing) == theirs - ours
        assert changed == {e for e in ours & theirs if e.startswith("f")}
        for eid, blob in missing.items():
            tree = theirs_store.trees[week[eid[1]]]
            assert git(repo, "rev-parse", f"{tree}:{layout.payload_path(eid)}").strip() == blob


# fork records -------------------------------------------------------------------------
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.sampled_from(["main", "f1", "merge f1", "merge main"]), max_size=7))
def test_remembered_fork_records_match_a_full_walk(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """After any sequence of writes and memory merges, the fork found through
    forks.json (incrementally where a chain grew) is the one a full walk finds."""
    repo = tmp_path_factory.mktemp("forks")
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    git(repo, "branch", "f1")
    with Memory.open(repo) as mem:
        mem.note("start", branch="main")
        mem.note("feature", branch="f1")
    for i, step in enumerate(["main", *steps]):
        if step.startswith("merge"):
            source = step.split()[1]
            into = "main" if source == "f1" else "f1"
            cli(repo, "merge", source, "--into", into)
        else:
            with Memory.open(repo) as mem:
                mem.note(f"step {i}", branch=step)
        with Memory.open(repo) as mem:
            forks = detect._Forks(mem)
            for ref, tip in mem.ledger.memory_refs().items():
                branch = layout.branch_of_ref(ref)
                assert branch is not None
                full = heads.find_fork(mem.backend, tip, branch)
                assert forks.code(tip, branch) == (None if full is None else full[1])
            forks.save()


def test_a_pull_advances_the_redaction_record_to_what_a_full_read_finds(
    tmp_path: Path, remote: Path
) -> None:
    """The record a pull advances from the envelopes it checked (without
    reading the new commits again) equals the one a full read builds."""
    from gitmem.storage import redactions

    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    secret_id, _ = notes(a, [f"the token is {SECRET}", "harmless"])
    assert cli(a, "sync")[0] == 0
    assert cli(b, "pull")[0] == 0
    with Memory.open(a) as mem:
        mem.redact(secret_id, "leaked token")
    notes(a, ["after the redaction"])
    assert cli(a, "sync")[0] == 0
    assert cli(b, "pull")[0] == 0

    record = tmp_path / "b" / ".git" / "edda" / redactions.RECORD
    advanced = json.loads(record.read_text())
    with Memory.open(b) as mem:
        assert advanced["tips"] == mem.ledger.memory_refs()
        record.unlink()
        tips, events = redactions.redaction_events(mem.ledger)
        assert mem.ledger.redaction_targets([mem.ledger.payload_roots()]) == {secret_id}
    assert tips == advanced["tips"]
    assert set(events) == set(advanced["events"]) and len(events) == 1
