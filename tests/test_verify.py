"""``verify``: every kind of damage to the store is reported, never raised.

Damage is done the way it happens in the wild: bytes overwritten on disk, or
objects and refs rewritten with git plumbing (pygit2), never by calling
gitmem's own writers.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest
from conftest import cli, make_repo
from hypothesis import given
from hypothesis import strategies as st

from gitmem.memory.api import Memory
from gitmem.records import canonical, layout
from gitmem.storage.envelope import seal

BACKENDS = ["libgit2", "git-cli"]


def loose_object(repo: Path, oid: str) -> Path:
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), f"{oid} is not a loose object"
    return path


def overwrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)  # git writes objects read-only
    path.write_bytes(data)


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text
        assert 'File "' not in text


def located(repo: Path) -> list[Any]:
    with Memory.open(repo) as mem:
        return list(mem.ledger.envelopes())


def partitions(pg: pygit2.Repository, store: str | pygit2.Oid) -> dict[str, pygit2.Commit]:
    """The payload store's partitions (name -> snapshot commit), read with pygit2."""
    entries = list(pg[store].tree)
    return {e.name: pg[e.id] for e in entries if e.filemode == pygit2.GIT_FILEMODE_COMMIT}


def payload_commit(pg: pygit2.Repository) -> pygit2.Commit:
    """The newest partition of the payload store (the tests' events are all in it)."""
    parts = partitions(pg, pg.references[layout.PAYLOAD_REF].target)
    return parts[max(parts)]


def rewrite_payload_store(repo: Path, changes: dict[str, bytes | None]) -> None:
    """Replace the payload store by one with ``changes`` (path -> blob bytes,
    None removes) behind gitmem's back: in the partition that holds the path,
    else the newest."""
    pg = pygit2.Repository(str(repo))
    parts = partitions(pg, pg.references[layout.PAYLOAD_REF].target)
    indexes: dict[str, pygit2.Index] = {}
    for path, data in changes.items():
        holder = next((n for n, c in parts.items() if path in c.tree), max(parts))
        if holder not in indexes:
            indexes[holder] = pygit2.Index()
            indexes[holder].read_tree(parts[holder].tree)
        if data is None:
            indexes[holder].remove(path)
        else:
            entry = pygit2.IndexEntry(path, pg.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
            indexes[holder].add(entry)
    commits = {name: commit.id for name, commit in parts.items()}
    for name, index in indexes.items():
        old = parts[name]
        tree = index.write_tree(pg)
        commits[name] = pg.create_commit(None, old.author, old.committer, old.message, tree, [])
        pg.references.create(layout.partition_ref(name), commits[name], force=True)
    builder = pg.TreeBuilder()
    for name, oid in commits.items():
        builder.insert(name, oid, pygit2.GIT_FILEMODE_COMMIT)
    store = pg[pg.references[layout.PAYLOAD_REF].target]
    new = pg.create_commit(None, store.author, store.committer, store.message, builder.write(), [])
    pg.references.create(layout.PAYLOAD_REF, new, force=True)


def rewrite_envelope(repo: Path, ref: str, event_id: str, mutate: Callable[[dict], None]) -> str:
    """Rewrite the chain of ``ref`` with ``event_id``'s envelope changed by ``mutate``
    (its ``id`` left as it was). Returns the new blob id."""
    pg = pygit2.Repository(str(repo))
    chain = []  # tip first
    oid = pg.references[ref].target
    while True:
        commit = pg[oid]
        chain.append(commit)
        events = pg[commit.tree[layout.EVENTS_DIR].id]
        hit = [e for e in events if json.loads(pg[e.id].data)["id"] == event_id]
        if hit:
            break
        assert len(commit.parent_ids) == 1, "event not found in the first-parent chain"
        oid = commit.parent_ids[0]
    target = chain[-1]
    envelope = json.loads(pg[hit[0].id].data)
    mutate(envelope)
    blob = pg.create_blob(canonical.encode(envelope))
    events_builder = pg.TreeBuilder(events)
    events_builder.insert(hit[0].name, blob, pygit2.GIT_FILEMODE_BLOB)
    root_builder = pg.TreeBuilder(target.tree)
    root_builder.insert(layout.EVENTS_DIR, events_builder.write(), pygit2.GIT_FILEMODE_TREE)
    parent = pg.create_commit(
        None, target.author, target.committer, target.message, root_builder.write(),
        list(target.parent_ids),
    )  # fmt: skip
    for commit in reversed(chain[:-1]):
        parent = pg.create_commit(
            None, commit.author, commit.committer, commit.message, commit.tree_id, [parent]
        )
    pg.references.create(ref, parent, force=True)
    return str(blob)


@pytest.fixture
def chain_repo(tmp_path: Path) -> Path:
    """Three commits on main's memory (a batch of 3 notes, then 2 single notes), one on b1."""
    repo = make_repo(tmp_path / "repo", events=4, branches=2)
    with Memory.open(repo) as mem:
        mem.note("fourth note", tags=["x"])
        mem.note("fifth note")
    return repo


# clean stores ------------------------------------------------------------------------


def test_clean_store_verifies(chain_repo: Path) -> None:
    with Memory.open(chain_repo) as mem:
        big = mem.note("B" * (layout.ATTACHMENT_MIN_BYTES + 10))
        target = mem.note("to be redacted")
        mem.redact(target.id, "test")
        mem.append("note", {"text": "detached"}, branch=None)
        report = mem.verify()
    assert report.ok, report.problems
    assert report.problems == []
    assert report.refs == 3  # main, b1, detached
    assert report.events == 10
    assert report.redacted == 1
    assert report.payloads == 9
    assert big.body is not None

    code, out, err = cli(chain_repo, "verify")
    assert code == 0, out + err
    assert out.splitlines()[-1] == "ok"
    assert "problem" not in out
    assert err == ""


def test_empty_repository_verifies(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "empty")
    with Memory.open(repo) as mem:
        report = mem.verify()
    assert report.ok
    assert (report.refs, report.events) == (0, 0)
    code, out, _ = cli(repo, "verify")
    assert code == 0
    assert out.strip().endswith("ok")


# objects damaged on disk -------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_corrupted_envelope_object_is_reported(
    chain_repo: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = next(loc for loc in located(chain_repo) if loc.envelope["type"] == "note")
    overwrite(loose_object(chain_repo, victim.blob), b"\x00this is not a zlib stream" * 4)

    with Memory.open(chain_repo, backend=backend) as mem:
        report = mem.verify()
    assert not report.ok
    hits = [p for p in report.problems if p.object == victim.blob]
    assert hits, report.problems
    assert hits[0].ref == victim.ref
    assert hits[0].commit == victim.commit

    monkeypatch.setenv("GITMEM_BACKEND", backend)
    code, out, err = cli(chain_repo, "verify")
    assert code == 4, out + err
    assert victim.blob in out
    assert "problem found" in out or "problems found" in out
    no_traceback(out, err)

    code, out, err = cli(chain_repo, "verify", "--json")
    assert code == 4
    data = json.loads(out)
    assert data["ok"] is False
    assert any(p.get("object") == victim.blob for p in data["problems"])
    no_traceback(out, err)


def test_object_whose_bytes_do_not_match_its_hash_is_reported(chain_repo: Path) -> None:
    """A well-formed loose object whose content no longer hashes to its name."""
    victim = located(chain_repo)[0]
    forged = canonical.encode({"v": 1, "forged": True})
    overwrite(
        loose_object(chain_repo, victim.blob),
        zlib.compress(b"blob %d\x00" % len(forged) + forged),
    )
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    assert {p.object for p in report.problems} == {victim.blob}
    code, out, err = cli(chain_repo, "verify")
    assert code == 4
    assert victim.blob in out
    no_traceback(out, err)


@pytest.mark.parametrize("backend", BACKENDS)
def test_envelope_object_swapped_for_another_envelope_is_reported(
    chain_repo: Path, backend: str
) -> None:
    """The bytes on disk are a perfectly valid envelope, just not the one the tree names:
    only checking the object's hash can tell (an event would silently vanish)."""
    locs = located(chain_repo)
    victim = next(loc for loc in locs if loc.ref == layout.branch_ref("b1"))
    donor = next(loc for loc in locs if loc.ref == layout.branch_ref("main"))
    with Memory.open(chain_repo) as mem:
        data = mem.backend.read_blob(donor.blob)
    overwrite(
        loose_object(chain_repo, victim.blob), zlib.compress(b"blob %d\x00" % len(data) + data)
    )
    with Memory.open(chain_repo, backend=backend) as mem:
        report = mem.verify()
    assert not report.ok
    assert victim.blob in {p.object for p in report.problems}


def test_corrupted_payload_blob_is_reported(chain_repo: Path) -> None:
    victim = located(chain_repo)[0]
    pg = pygit2.Repository(str(chain_repo))
    blob = str(payload_commit(pg).tree[layout.payload_path(victim.envelope["id"])].id)
    overwrite(loose_object(chain_repo, blob), b"garbage" * 8)
    del pg

    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    problems = [p for p in report.problems if p.event == victim.envelope["id"]]
    assert len(problems) == 1, report.problems
    assert problems[0].field == "payload"
    assert blob in str(problems[0])
    code, out, err = cli(chain_repo, "verify")
    assert code == 4
    assert victim.envelope["id"] in out
    no_traceback(out, err)


@pytest.mark.parametrize("which", ["root tree", "fan-out tree", "commit"])
def test_corrupted_payload_store_object_is_reported(chain_repo: Path, which: str) -> None:
    """Damage to the payload snapshot's own trees or commit must be reported, not raised."""
    with Memory.open(chain_repo) as mem:
        mem.note("L" * (layout.ATTACHMENT_MIN_BYTES + 1))  # gives the store a b/ tree too
    pg = pygit2.Repository(str(chain_repo))
    commit = payload_commit(pg)
    oid = {
        "root tree": str(commit.tree_id),
        "fan-out tree": str(commit.tree["p"].id),
        "commit": str(commit.id),
    }[which]
    del pg
    overwrite(loose_object(chain_repo, oid), b"\x00not zlib\x00" * 5)

    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    assert not report.ok
    assert any(oid in str(p) for p in report.problems), report.problems
    code, out, err = cli(chain_repo, "verify")
    assert code == 4, out + err
    assert oid in out
    no_traceback(out, err)


# payloads rewritten with plumbing -----------------------------------------------------


def test_payload_that_does_not_match_its_digest_is_reported(chain_repo: Path) -> None:
    victim = next(loc for loc in located(chain_repo) if loc.ref.endswith("/main"))
    eid = victim.envelope["id"]
    with Memory.open(chain_repo) as mem:
        original = mem.get(eid).body
    assert original is not None
    altered = dict(original, text=original["text"].upper())
    assert len(canonical.encode(altered)) == victim.envelope["payload"]["size"]
    rewrite_payload_store(chain_repo, {layout.payload_path(eid): canonical.encode(altered)})

    with Memory.open(chain_repo) as mem:
        # readers never hand out forged text: they say what is wrong instead
        event = mem.get(eid)
        assert event.body is None and not event.redacted
        assert event.problem == "payload does not match its envelope"
        assert event.summary() == "[payload does not match its envelope]"
        report = mem.verify()
    assert [(p.event, p.field) for p in report.problems] == [(eid, "payload.digest")]
    problem = report.problems[0]
    assert problem.ref == victim.ref
    pg = pygit2.Repository(str(chain_repo))
    assert problem.object == str(payload_commit(pg).tree[layout.payload_path(eid)].id)

    code, out, err = cli(chain_repo, "verify", "--json")
    assert code == 4
    data = json.loads(out)
    assert data["ok"] is False
    [entry] = data["problems"]
    assert entry["event"] == eid
    assert entry["field"] == "payload.digest"
    assert entry["object"] == problem.object
    assert "digest" in entry["message"]
    no_traceback(out, err)


def test_payload_of_different_size_is_reported(chain_repo: Path) -> None:
    victim = located(chain_repo)[0]
    eid = victim.envelope["id"]
    rewrite_payload_store(
        chain_repo, {layout.payload_path(eid): canonical.encode({"text": "something longer"})}
    )
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    fields = sorted(p.field for p in report.problems if p.event == eid)
    assert fields == ["payload.digest", "payload.size"]


def test_missing_payload_is_reported(chain_repo: Path) -> None:
    victim = located(chain_repo)[-1]
    eid = victim.envelope["id"]
    rewrite_payload_store(chain_repo, {layout.payload_path(eid): None})

    with Memory.open(chain_repo) as mem:
        event = mem.get(eid)
        assert event.body is None and not event.redacted
        report = mem.verify()
    assert [(p.event, p.field) for p in report.problems] == [(eid, "payload")]
    assert "missing" in report.problems[0].message
    code, out, err = cli(chain_repo, "verify")
    assert code == 4
    assert eid in out
    no_traceback(out, err)
    code, out, _ = cli(chain_repo, "show", eid)
    assert code == 0
    assert "payload missing" in out


def test_missing_attachment_is_reported(chain_repo: Path) -> None:
    text = "A" * (layout.ATTACHMENT_MIN_BYTES + 5)
    with Memory.open(chain_repo) as mem:
        event = mem.note(text)
    sha = canonical.sha256_hex(text.encode())
    rewrite_payload_store(chain_repo, {layout.attachment_path(sha): None})
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    assert [(p.event, p.field) for p in report.problems] == [(event.id, "payload")]
    assert sha in report.problems[0].message


def test_attachment_with_wrong_bytes_is_reported(chain_repo: Path) -> None:
    text = "A" * (layout.ATTACHMENT_MIN_BYTES + 5)
    with Memory.open(chain_repo) as mem:
        event = mem.note(text)
    sha = canonical.sha256_hex(text.encode())
    rewrite_payload_store(chain_repo, {layout.attachment_path(sha): b"B" * len(text)})
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    fields = {p.field for p in report.problems}
    assert layout.attachment_path(sha) in fields  # the attachment's name is its SHA-256
    assert (event.id, "payload.digest") in {(p.event, p.field) for p in report.problems}


def test_redaction_whose_payload_is_still_present_is_reported(chain_repo: Path) -> None:
    victim = located(chain_repo)[0]
    eid = victim.envelope["id"]
    with Memory.open(chain_repo) as mem:
        body = mem.get(eid).body
        mem.redact(eid, "leak")
    assert body is not None
    rewrite_payload_store(chain_repo, {layout.payload_path(eid): canonical.encode(body)})
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    assert [(p.event, p.field) for p in report.problems] == [(eid, "payload")]
    assert "redacted" in report.problems[0].message


# envelopes rewritten with plumbing ------------------------------------------------------


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda env: env.update(time=env["time"] + 1), id="time"),
        pytest.param(lambda env: env.update(type="decision"), id="type"),
        pytest.param(lambda env: env["scope"].update(user="mallory@example.com"), id="scope"),
        pytest.param(lambda env: env["payload"].update(size=env["payload"]["size"] + 1), id="size"),
    ],
)
def test_envelope_whose_id_does_not_rederive_is_reported(
    chain_repo: Path, mutate: Callable[[dict], None]
) -> None:
    # The first batch on main is the oldest commit: rewriting it rewrites the whole chain.
    ref = layout.branch_ref("main")
    victim = next(loc for loc in located(chain_repo) if loc.ref == ref)
    eid = victim.envelope["id"]
    with Memory.open(chain_repo) as mem:
        before = [e.id for e in mem.events()]
        assert mem.verify().ok
    blob = rewrite_envelope(chain_repo, ref, eid, mutate)

    with Memory.open(chain_repo) as mem:
        assert [e.id for e in mem.events()] == before  # still readable
        report = mem.verify()
    assert [(p.event, p.field, p.object) for p in report.problems] == [(eid, "id", blob)]
    assert report.problems[0].ref == ref

    code, out, err = cli(chain_repo, "verify", "--json")
    assert code == 4
    [problem] = json.loads(out)["problems"]
    assert problem["event"] == eid
    assert problem["field"] == "id"
    assert problem["object"] == blob
    assert problem["ref"] == ref
    no_traceback(out, err)


def test_structurally_broken_envelope_is_reported(chain_repo: Path) -> None:
    ref = layout.branch_ref("main")
    victim = next(loc for loc in located(chain_repo) if loc.ref == ref)
    blob = rewrite_envelope(chain_repo, ref, victim.envelope["id"], lambda env: env.pop("time"))
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    fields = {(p.object, p.field) for p in report.problems}
    assert (blob, "time") in fields


def test_resealing_a_stored_envelope_rederives_its_id(chain_repo: Path) -> None:
    """The check is a re-derivation, not a whitelist: a correctly sealed envelope
    written by another tool (here: rewriting an existing one) passes."""
    ref = layout.branch_ref("main")
    victim = next(loc for loc in located(chain_repo) if loc.ref == ref)
    with Memory.open(chain_repo) as mem:
        body = mem.get(victim.envelope["id"]).body
    assert body is not None
    env = victim.envelope
    resealed, _ = seal(
        env["type"],
        body,
        scope=env["scope"],
        time_us=env["time"],
        salt_hex=env["payload"]["salt"],
    )
    assert resealed["id"] == env["id"]


def test_verify_json_lists_problems_with_location_keys(chain_repo: Path) -> None:
    locs = located(chain_repo)
    missing = locs[0].envelope["id"]
    rewrite_payload_store(chain_repo, {layout.payload_path(missing): None})
    ref = layout.branch_ref("main")
    tampered = next(loc for loc in locs if loc.ref == ref and loc.envelope["id"] != missing)
    blob = rewrite_envelope(
        chain_repo, ref, tampered.envelope["id"], lambda env: env.update(time=1)
    )

    code, out, err = cli(chain_repo, "verify", "--json")
    assert code == 4, err
    data = json.loads(out)
    assert set(data) >= {"ok", "refs", "commits", "events", "payloads", "problems", "warnings"}
    assert data["ok"] is False
    keyed = {(p.get("event"), p.get("field")): p for p in data["problems"]}
    assert (missing, "payload") in keyed
    assert keyed[(tampered.envelope["id"], "id")]["object"] == blob
    for problem in data["problems"]:
        assert isinstance(problem["message"], str)
        assert set(problem) <= {"message", "ref", "commit", "object", "event", "field"}
        assert None not in problem.values()
    no_traceback(out, err)


# incremental: only what is new since the last clean verification --------------------------
def test_incremental_checks_only_what_is_new(chain_repo: Path) -> None:
    with Memory.open(chain_repo) as mem:
        first = mem.verify(incremental=True)  # no record yet: everything
        assert first.ok and first.mode == "full" and first.fallback
        assert first.events == len(located(chain_repo))
        again = mem.verify(incremental=True)
        assert again.ok and again.mode == "incremental" and not again.fallback
        assert (again.commits, again.events, again.payloads) == (0, 0, 0)
        mem.note("sixth note")
        mem.append_many([])  # nothing
        mem.note("seventh note", branch="b1")
        report = mem.verify(incremental=True)
        assert report.ok and report.mode == "incremental"
        assert (report.commits, report.events, report.payloads) == (2, 2, 2)
        assert mem.verify().events == len(located(chain_repo))  # a full one still sees all


def test_incremental_finds_damage_in_new_events(chain_repo: Path) -> None:
    with Memory.open(chain_repo) as mem:
        assert mem.verify().ok
        new = mem.note("a note whose payload is then tampered with")
    rewrite_payload_store(
        chain_repo, {layout.payload_path(new.id): canonical.encode({"text": "something else"})}
    )
    with Memory.open(chain_repo) as mem:
        report = mem.verify(incremental=True)
        assert report.mode == "incremental"
        assert {p.event for p in report.problems} == {new.id}
        assert any("digest" in p.message for p in report.problems)
        # a verification that found problems is not recorded: they are found again
        assert {p.event for p in mem.verify(incremental=True).problems} == {new.id}


def test_incremental_falls_back_when_old_memory_changed(chain_repo: Path) -> None:
    """An old event's payload altered, a chain rewound, or a damaged record:
    only a full verification can be sound, and it finds what changed."""
    with Memory.open(chain_repo) as mem:
        assert mem.verify().ok
    old = located(chain_repo)[0].envelope["id"]
    rewrite_payload_store(
        chain_repo, {layout.payload_path(old): canonical.encode({"text": "forged"})}
    )
    with Memory.open(chain_repo) as mem:
        report = mem.verify(incremental=True)
        assert report.mode == "full" and "changed" in report.fallback
        assert {p.event for p in report.problems} == {old}

    repo = make_repo(chain_repo.parent / "rewound", events=3)
    with Memory.open(repo) as mem:
        mem.note("a note the rewind drops")
        assert mem.verify().ok
        ref = layout.branch_ref("main")
        tip = mem.backend.read_ref(ref)
        assert tip is not None
        parent = mem.backend.read_commit(tip).parents[0]
    pygit2.Repository(str(repo)).references.create(ref, parent, force=True)
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
        assert report.mode == "full" and "descends" in report.fallback and report.ok

    record = repo / ".git" / "edda" / "verify" / "ids.u64"
    record.write_bytes(record.read_bytes()[:-1] + b"\x00")
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
        assert report.mode == "full" and "no record" in report.fallback


def test_incremental_falls_back_on_a_record_from_another_clone(tmp_path: Path) -> None:
    """A record copied from another repository names tips this one never had:
    a full verification, said why, never an internal error."""
    import shutil

    one = make_repo(tmp_path / "one", events=3)
    other = make_repo(tmp_path / "other", events=4)
    with Memory.open(one) as mem:
        assert mem.verify().ok
    shutil.copytree(one / ".git" / "edda" / "verify", other / ".git" / "edda" / "verify")
    with Memory.open(other) as mem:
        report = mem.verify(incremental=True)
        assert report.ok and report.mode == "full"
        assert "not in this repository" in report.fallback


def test_incremental_checks_a_redaction_of_an_old_event(chain_repo: Path) -> None:
    with Memory.open(chain_repo) as mem:
        assert mem.verify().ok
        target = mem.note("a secret, later redacted")
        assert mem.verify(incremental=True).ok
        mem.redact(target.id, "leaked")
        report = mem.verify(incremental=True)
        assert report.ok and report.mode == "incremental" and report.redacted == 1
    # the payload comes back (a store rewritten behind gitmem's back)
    rewrite_payload_store(
        chain_repo, {layout.payload_path(target.id): canonical.encode({"text": "again"})}
    )
    with Memory.open(chain_repo) as mem:
        report = mem.verify(incremental=True)
        assert not report.ok
        assert any("still in the store" in p.message for p in report.problems)


def test_cli_verify_incremental(chain_repo: Path) -> None:
    code, out, err = cli(chain_repo, "verify", "--incremental")
    assert code == 0, err
    assert "checked everything: no record" in out
    code, out, err = cli(chain_repo, "verify", "--incremental", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "incremental" and data["commits"] == 0 and data["fallback"] is None


@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=50),
    st.lists(st.integers(0, 2**64 - 1), max_size=20),
)
def test_merged_ids_are_the_sorted_union(old: list[int], new: list[int]) -> None:
    from array import array

    from gitmem.memory import verified

    a = array("Q", sorted(set(old)))
    got = verified.merged(a, array("Q", sorted(set(new))))
    assert got.typecode == "Q"
    assert got.tolist() == sorted(set(old) | set(new))
    assert verified.keys([f"{k:016x}" + "0" * 16 for k in new]).tolist() == sorted(set(new))


# incremental, at a size where new payloads land in directories that exist -------------------
# A store of 1,500 events fills nearly all 256 fan-out directories, so new events' payloads
# go into directories that only gained them: the path that reads the new directory alone.


@pytest.fixture(scope="module")
def crowded_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import pack_objects, scratch_repo

    from gitmem.capture.sealer import Draft

    repo = scratch_repo(tmp_path_factory.mktemp("crowded") / "repo")
    with Memory.open(repo) as mem:
        mem.append_many(
            [Draft("note", {"text": f"old note {i}"}, branch="main") for i in range(1500)]
        )
        assert mem.verify().ok
    return pack_objects(repo)


@pytest.fixture
def crowded(crowded_base: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """A verified copy of the crowded store with 20 new notes: (repo, the new
    ids whose payload went into a directory that held payloads before)."""
    import shutil

    from gitmem.capture.sealer import Draft

    repo = tmp_path / "repo"
    shutil.copytree(crowded_base, repo, symlinks=True)
    pg = pygit2.Repository(str(repo))
    before = {e.name for e in payload_commit(pg).tree["p"]}
    with Memory.open(repo) as mem:
        new = mem.append_many(
            [Draft("note", {"text": f"new note {i}"}, branch="main") for i in range(20)]
        )
    shared = [e.id for e in new if e.id[:2] in before]
    assert len(shared) >= 10
    return repo, shared


def fanout(repo: Path, commit: str | pygit2.Oid, name: str) -> str:
    """Fan-out directory ``name`` of the newest partition of store ``commit``."""
    pg = pygit2.Repository(str(repo))
    parts = partitions(pg, commit)
    return str(parts[max(parts)].tree["p"][name].id)


def test_a_directory_that_only_gained_payloads_is_read_on_its_new_side(
    crowded: tuple[Path, list[str]],
) -> None:
    """Each such directory's new entries, proved without reading its old
    version, are exactly what git's comparison of the two finds."""
    from gitmem.memory import verified

    repo, shared = crowded
    with Memory.open(repo) as mem:
        record = verified.read(mem.location)
        assert record is not None and record.payloads is not None
        tip = mem.backend.read_ref(layout.PAYLOAD_REF)
        assert tip is not None
        for name in sorted({eid[:2] for eid in shared}):
            old, new = fanout(repo, record.payloads, name), fanout(repo, tip, name)
            ids = [eid for eid in shared if eid[:2] == name]
            gained = verified._gained(mem.backend, old, new, ids)
            expected = [(c.path, c.new) for c in mem.backend.diff_trees(old, new)]
            assert gained is not None and sorted(gained) == sorted(expected)
            assert {eid for eid, _ in gained} == set(ids)
            # a directory that gained anything else is left to git's comparison
            assert verified._gained(mem.backend, old, new, ids[1:]) is None
        report = mem.verify(incremental=True)
        assert report.ok and report.mode == "incremental" and not report.warnings
        assert (report.events, report.payloads) == (20, 20)


def test_incremental_finds_a_forged_payload_of_a_new_event(
    crowded: tuple[Path, list[str]],
) -> None:
    repo, shared = crowded
    victim = shared[0]
    rewrite_payload_store(repo, {layout.payload_path(victim): canonical.encode({"text": "x"})})
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
    assert report.mode == "incremental"
    assert {p.event for p in report.problems} == {victim}
    assert "payload.digest" in {p.field for p in report.problems}


def test_incremental_finds_a_missing_payload_of_a_new_event(
    crowded: tuple[Path, list[str]],
) -> None:
    repo, shared = crowded
    gone = shared[:3]
    rewrite_payload_store(repo, {layout.payload_path(eid): None for eid in gone})
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
    assert report.mode == "incremental"
    assert {p.event for p in report.problems} == set(gone)
    assert all("missing" in p.message for p in report.problems)


def test_incremental_finds_a_forged_envelope_of_a_new_event(
    crowded: tuple[Path, list[str]],
) -> None:
    repo, shared = crowded
    victim = shared[0]
    rewrite_envelope(repo, layout.branch_ref("main"), victim, lambda e: e.update(kind="forged"))
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
    assert report.mode == "incremental" and report.commits == 1
    assert victim in {p.event for p in report.problems}


def test_incremental_warns_of_a_payload_without_an_event_beside_new_ones(
    crowded: tuple[Path, list[str]],
) -> None:
    repo, shared = crowded
    stray = shared[0][:2] + "f" * 30
    rewrite_payload_store(repo, {layout.payload_path(stray): canonical.encode({"text": "stray"})})
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
    assert report.ok and report.mode == "incremental"
    assert [w.event for w in report.warnings] == [stray]


def test_incremental_sees_an_old_payload_changed_beside_new_ones(
    crowded: tuple[Path, list[str]],
) -> None:
    """An old event's payload forged in a directory that also gained a new
    one: the directory is not old plus new, so it is compared whole, and the
    change sends the verification back to everything."""
    repo, shared = crowded
    pg = pygit2.Repository(str(repo))
    directory = payload_commit(pg).tree["p"][shared[0][:2]]
    old = next(e.name for e in pg[directory.id] if e.name not in shared)
    rewrite_payload_store(repo, {layout.payload_path(old): canonical.encode({"text": "forged"})})
    with Memory.open(repo) as mem:
        report = mem.verify(incremental=True)
    assert report.mode == "full" and "changed" in report.fallback
    assert {p.event for p in report.problems} == {old}


@pytest.mark.parametrize("backend", BACKENDS)
def test_incremental_reports_a_new_directory_whose_bytes_do_not_match_its_id(
    crowded: tuple[Path, list[str]], backend: str
) -> None:
    """The new directory read as bytes is hash-checked like any object: one
    whose bytes were swapped on disk is reported, not trusted."""
    from gitmem.memory import verified

    repo, shared = crowded
    name = shared[0][:2]
    pg = pygit2.Repository(str(repo))
    tip = pg.references[layout.PAYLOAD_REF].target
    new = fanout(repo, tip, name)
    with Memory.open(repo) as mem:
        record = verified.read(mem.location)
        assert record is not None and record.payloads is not None
    old_bytes = pg.odb.read(fanout(repo, record.payloads, name))[1]
    overwrite(loose_object(repo, new), zlib.compress(b"tree %d\x00" % len(old_bytes) + old_bytes))
    with Memory.open(repo, backend=backend) as mem:
        report = mem.verify(incremental=True)
    assert not report.ok
    assert any("payload store unreadable" in p.message for p in report.problems)


def test_a_directory_out_of_order_is_left_to_git(crowded: tuple[Path, list[str]]) -> None:
    """New entries must fall in order among their neighbours, and every
    entry must be a payload file: else git's comparison decides."""
    from gitmem.memory import verified

    repo, shared = crowded
    pg = pygit2.Repository(str(repo))
    with Memory.open(repo) as mem:
        record = verified.read(mem.location)
        assert record is not None and record.payloads is not None
        name = shared[0][:2]
        old_id = fanout(repo, record.payloads, name)
        new = pg.odb.read(fanout(repo, pg.references[layout.PAYLOAD_REF].target, name))[1]
        size = 7 + 32 + 1 + 20
        entries = [new[i : i + size] for i in range(0, len(new), size)]
        added = next(e for e in entries if e[7:39] == shared[0].encode())
        moved = [e for e in entries if e != added]
        # a place where it is out of order: last unless it sorts last, then first
        at = len(moved) if added < moved[-1] else 0
        unsorted = b"".join([*moved[:at], added, *moved[at:]])
        odd = str(pg.odb.write(pygit2.enums.ObjectType.TREE, unsorted))
        assert verified._gained(mem.backend, old_id, odd, [shared[0]]) is None
        executable = new.replace(b"100644 " + shared[0].encode(), b"100755 " + shared[0].encode())
        odd = str(pg.odb.write(pygit2.enums.ObjectType.TREE, executable))
        assert verified._gained(mem.backend, old_id, odd, [shared[0]]) is None


@pytest.mark.parametrize("listable", [True, False], ids=["listed", "by path"])
def test_a_full_verification_reports_the_same_whether_or_not_the_store_lists(
    chain_repo: Path, listable: bool
) -> None:
    """A full verification finds payloads through a listing of the store; an
    entry of another shape in ``p/`` stops the listing, and payloads are
    then looked up by path. Either way the same problems: a forged payload,
    a missing one, a redacted one still there."""
    events = located(chain_repo)
    forged, missing, kept = (e.envelope["id"] for e in events[:3])
    with Memory.open(chain_repo) as mem:
        body = mem.get(kept).body
        mem.redact(kept, "leak")
    assert body is not None
    changes: dict[str, bytes | None] = {
        layout.payload_path(forged): canonical.encode({"text": "forged"}),
        layout.payload_path(missing): None,
        layout.payload_path(kept): canonical.encode(body),
    }
    if not listable:
        changes[f"p/{forged[:2]}/not-a-payload"] = b"odd"
    rewrite_payload_store(chain_repo, changes)
    with Memory.open(chain_repo) as mem:
        report = mem.verify()
    found = sorted((p.event or "", p.field or "") for p in report.problems)
    assert found == sorted(
        [(forged, "payload.size"), (forged, "payload.digest"), (missing, "payload"),
         (kept, "payload")]
    )  # fmt: skip
    messages = {p.event: p.message for p in report.problems if p.field == "payload"}
    assert "missing" in messages[missing] and "redacted" in messages[kept]
    assert report.redacted == 1
    odd = [w for w in report.warnings if w.event == "not-a-payload"]
    assert len(odd) == (0 if listable else 1)
