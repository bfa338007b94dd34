"""The current capsule: what ``capsule open`` starts, events recorded while it
is open belong to it, a second open warns, idle capsules are closed."""

from __future__ import annotations

import json
import os
import time

from conftest import capture_process, cli, git, make_repo


def edda(repo, *args):
    code, out, err = cli(repo, *args)
    assert code == 0, err
    return out


def opened(repo, *args):
    return json.loads(edda(repo, "capsule", "open", *args, "--json"))


def logged(repo):
    """Events oldest first."""
    return json.loads(edda(repo, "log", "--reverse", "--json"))["events"]


def capsule_of(entry):
    return entry["envelope"].get("capsule")


def test_events_recorded_while_a_capsule_is_open_belong_to_it(tmp_path):
    repo = make_repo(tmp_path / "repo")
    capsule = opened(repo, "session", "--intent", "fix the flaky test")["id"]
    edda(repo, "note", "the clock is mocked twice")
    edda(repo, "decide", "tests.clock", "freezegun")
    # the real capture hook process (what agent hooks run) too
    proc = capture_process(repo, json.dumps({"type": "note", "body": {"text": "from a hook"}}))
    assert proc.returncode == 0, proc.stderr
    edda(repo, "flush")
    inside = [e for e in logged(repo) if e["envelope"]["type"] != "capsule_open"]
    assert [capsule_of(e) for e in inside] == [capsule] * 3
    listed = json.loads(edda(repo, "capsule", "list", "--json"))["capsules"]
    assert [(c["id"], c["events"], c["open"]) for c in listed] == [(capsule, 3, True)]


def test_after_close_events_belong_to_no_capsule(tmp_path):
    repo = make_repo(tmp_path / "repo")
    capsule = opened(repo, "session")["id"]
    edda(repo, "capsule", "close", capsule, "--summary", "done")
    edda(repo, "note", "afterwards")
    assert capsule_of(logged(repo)[-1]) is None


def test_a_second_open_warns_and_becomes_current(tmp_path):
    repo = make_repo(tmp_path / "repo")
    first = opened(repo, "session", "--intent", "first")["id"]
    code, out, _ = cli(repo, "capsule", "open", "workflow", "--intent", "second")
    assert code == 0
    assert f"warning: capsule {first[:12]} (session: first) is still open" in out
    assert f"git edda capsule close {first[:12]}" in out
    second = opened(repo, "node")
    assert first in second["still_open"]
    edda(repo, "note", "goes to the newest")
    assert capsule_of(logged(repo)[-1]) == second["id"]


def test_idle_capsules_are_closed_with_a_note_saying_so(tmp_path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "edda.capsuleIdle", "1")
    forgotten = opened(repo, "session", "--intent", "forgotten")["id"]
    time.sleep(1.5)
    fresh = opened(repo, "session", "--intent", "new work")
    assert fresh["auto_closed"] == [forgotten] and fresh["still_open"] == []
    states = {c["id"]: c for c in json.loads(edda(repo, "capsule", "list", "--json"))["capsules"]}
    assert not states[forgotten]["open"] and states[fresh["id"]]["open"]
    assert states[forgotten]["summary"].startswith("closed automatically: no events for ")
    assert "(edda.capsuleIdle is 1s)" in states[forgotten]["summary"]


def test_capsule_idle_zero_never_closes_and_a_bad_value_is_refused(tmp_path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "edda.capsuleIdle", "0")
    first = opened(repo, "session")["id"]
    assert first in opened(repo, "session")["still_open"]
    git(repo, "config", "edda.capsuleIdle", "soon")
    code, _, err = cli(repo, "capsule", "open", "session")
    assert code == 2 and "edda.capsuleIdle" in err and "12h" in err


def test_a_capsule_opened_in_a_session_takes_only_that_sessions_events(tmp_path):
    repo = make_repo(tmp_path / "repo")
    capsule = opened(repo, "session", "--session", "alice")["id"]
    edda(repo, "note", "mine", "--session", "alice")
    edda(repo, "note", "someone else's", "--session", "bob")
    by_text = {e["body"]["text"]: capsule_of(e) for e in logged(repo) if e["body"].get("text")}
    assert by_text == {"mine": capsule, "someone else's": None}


def test_gitmem_capsule_overrides_and_a_malformed_one_is_ignored(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    capsule = opened(repo, "session")["id"]
    edda(repo, "capsule", "close", capsule)
    monkeypatch.setenv("GITMEM_CAPSULE", capsule)
    edda(repo, "note", "through the environment")
    assert capsule_of(logged(repo)[-1]) == capsule
    monkeypatch.setenv("GITMEM_CAPSULE", "not-an-id")
    edda(repo, "note", "still recorded")
    last = logged(repo)[-1]
    assert last["body"]["text"] == "still recorded" and capsule_of(last) is None
    assert os.environ["GITMEM_CAPSULE"] == "not-an-id"


def test_a_forgotten_open_capsule_leaves_the_context_pack(tmp_path):
    repo = make_repo(tmp_path / "repo")
    capsule = opened(repo, "session", "--intent", "the forgotten one")["id"]
    edda(repo, "note", "work inside it")
    pack = edda(repo, "context")
    assert f"## Open capsule\n- [{capsule[:12]}] session capsule" in pack
    git(repo, "config", "edda.capsuleIdle", "1")
    time.sleep(1.5)
    pack = edda(repo, "context")
    assert "## Open capsule" not in pack  # idle: no longer shown as being worked on
    assert "the forgotten one" in pack  # still in the history of recent sessions
    edda(repo, "note", "back at it")  # new activity in the capsule brings it back
    assert "## Open capsule" in edda(repo, "context")


def test_a_capsules_events_are_read_from_the_newest_commits_back(tmp_path, monkeypatch):
    """What SessionEnd summarises: the capsule's events on every branch, as a
    filter over every event gives them, but read only from the commits at
    least as new as the capsule's opening (the whole store took minutes and
    gigabytes at a million events)."""
    from gitmem.capture.sealer import Draft
    from gitmem.memory.api import Memory
    from gitmem.memory.query import EventFilter
    from gitmem.storage.eventchain import ChainReader

    repo = make_repo(tmp_path / "repo")
    hour = 3_600_000_000
    now = int(time.time() * 1_000_000)
    with Memory.open(repo) as mem:
        for i in range(40):  # older history, a commit each
            mem.append_many([Draft("note", {"text": f"old {i}"}, time=now - 5 * hour + i * 1000)])
        capsule = mem.open_capsule("session", "the work").id
        first = mem.note("in the capsule", capsule=capsule)
        mem.note("beside it, in no capsule")
    git(repo, "switch", "-q", "-c", "feature")
    with Memory.open(repo) as mem:
        mem.note("on feature, in the capsule", capsule=capsule)
        secret = mem.note("a secret, in the capsule", capsule=capsule)
        mem.redact(secret.id, "leak")
        mem.close_capsule(capsule, "done", closed=False)
    with Memory.open(repo) as mem:
        expected = mem.events(EventFilter(capsules=[capsule]), all_branches=True)
    read: list[str] = []
    envelopes = ChainReader.commit_envelopes

    def counted(self, commit, info):
        read.append(commit)
        return envelopes(self, commit, info)

    monkeypatch.setattr(ChainReader, "commit_envelopes", counted)
    with Memory.open(repo) as mem:
        found = mem.capsule_events(capsule)
    assert [(e.id, e.redacted, e.body) for e in found] == [
        (e.id, e.redacted, e.body) for e in expected
    ]
    assert {first.id, secret.id, capsule} <= {e.id for e in found}
    assert any(e.type == "capsule_close" for e in found)
    assert len(read) <= 10  # not the 40 older commits


def test_a_capsule_parent_is_found_by_its_id_prefix(tmp_path):
    import pytest

    from gitmem.app import record
    from gitmem.errors import NotFoundError

    repo = make_repo(tmp_path / "repo", events=5)
    parent = record.open_capsule(repo, "workflow", intent="the whole job").event
    child = record.open_capsule(repo, "node", intent="one step", parent=parent.id[:10]).event
    assert child.field("parent") == parent.id
    with pytest.raises(NotFoundError):
        record.open_capsule(repo, "node", parent="ffffffffff")


def test_closing_idle_capsules_reads_no_event_but_through_the_index(tmp_path, monkeypatch):
    """Opening a capsule (every agent session does) closes idle ones; it took
    each one's opening by id through memory's reader, every event with its
    body (minutes at a million events), and takes it from the index now."""
    from gitmem.app import record
    from gitmem.memory.api import Memory

    repo = make_repo(tmp_path / "repo", events=3)
    git(repo, "config", "edda.capsuleIdle", "1")
    forgotten = record.open_capsule(repo, "session", intent="forgotten").event
    loads: list[int] = []
    load = Memory._load

    def counted(self):
        loads.append(1)
        return load(self)

    monkeypatch.setattr(Memory, "_load", counted)
    later = forgotten.time + 5_000_000
    opened = record.open_capsule(repo, "session", intent="new work", now=later)
    assert [e.field("capsule") for e in opened.auto_closed] == [forgotten.id]
    assert loads == []
