"""Redaction: the payload leaves the store, the envelope stays, gc destroys the bytes.

Every "no trace" check scans the raw contents of every object in the repository
with the real git CLI (``git cat-file --batch-all-objects --batch``), so loose,
packed and unreachable objects are all searched.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import cli, git, payload_blob_id, payload_files

from gitmem.errors import UsageError
from gitmem.memory.api import Memory
from gitmem.records import canonical, layout

CANARY = "okapi-canary-7f3e91"  # distinctive, and nothing a secret scrubber would mask
BIG_CANARY = "giraffe-canary-big-52ac"
REASON = "pasted by mistake"


def object_bytes(repo: Path) -> bytes:
    """The contents of every object git can find in ``repo`` (reachable or not)."""
    proc = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    return proc.stdout


def big_text(marker: str) -> str:
    """A text well over the 8 KiB attachment threshold containing ``marker``."""
    filler = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(250))
    text = f"{marker}\n{filler}{marker}-end"
    assert len(text.encode()) >= layout.ATTACHMENT_MIN_BYTES
    return text


def payload_paths(repo: Path) -> list[str]:
    out = "\n".join(payload_files(repo))
    return out.split()


def test_redact_removes_payload_and_keeps_envelope(store: Path) -> None:
    with Memory.open(store) as mem:
        capsule = mem.open_capsule("session", "debugging")
        target = mem.note(CANARY, tags=["secret"], capsule=capsule.id)
        keep = mem.note("unrelated note")
    assert layout.payload_path(target.id) in payload_paths(store)

    code, out, err = cli(store, "redact", target.id[:10], "--reason", REASON)
    assert code == 0, err
    assert target.id[:12] in out

    assert layout.payload_path(target.id) not in payload_paths(store)
    assert layout.payload_path(keep.id) in payload_paths(store)
    with Memory.open(store) as mem:
        again = mem.get(target.id)
        assert again.redacted
        assert again.body is None
        assert again.envelope == target.envelope
        assert (again.id, again.type, again.time, again.capsule) == (
            target.id,
            "note",
            target.time,
            capsule.id,
        )
        assert mem.get(keep.id).body == {"text": "unrelated note"}
        assert mem.verify().ok

    code, out, err = cli(store, "show", target.id)
    assert code == 0, err
    assert "[redacted]" in out
    assert CANARY not in out
    code, out, err = cli(store, "log")
    assert code == 0, err
    line = next(row for row in out.splitlines() if row.startswith(target.id[:12]))
    assert "[redacted]" in line
    assert CANARY not in out
    code, out, err = cli(store, "log", "--json")
    assert code == 0, err
    rows = {row["id"]: row for row in json.loads(out)["events"]}
    assert rows[target.id]["redacted"] is True
    assert rows[target.id]["body"] is None
    code, out, err = cli(store, "verify")
    assert code == 0, out + err
    assert out.strip().endswith("ok")


def test_gc_destroys_the_redacted_bytes(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(f"the token is {CANARY}")
        mem.note("still here")
    assert CANARY.encode() in object_bytes(store)

    code, _, err = cli(store, "redact", target.id, "--reason", REASON)
    assert code == 0, err
    # Redaction alone leaves the bytes in the object store until gc.
    assert CANARY.encode() in object_bytes(store)

    code, out, err = cli(store, "gc")
    assert code == 0, err
    assert "destroyed" in out
    raw = object_bytes(store)
    assert CANARY.encode() not in raw
    assert b"still here" in raw
    code, out, err = cli(store, "verify")
    assert code == 0, out + err


def test_redact_purge_destroys_the_bytes_at_once(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(f"{CANARY} in a note")
    code, out, err = cli(store, "redact", target.id, "--reason", REASON, "--purge")
    assert code == 0, err
    assert "purged" in out
    assert CANARY.encode() not in object_bytes(store)
    with Memory.open(store) as mem:
        assert mem.get(target.id).redacted
        assert mem.verify().ok


def test_gc_destroys_bytes_that_were_already_packed(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(CANARY)
        mem.note(big_text("unrelated-big"))
    blob = payload_blob_id(store, layout.payload_path(target.id))
    assert blob is not None
    git(store, "gc", "-q")  # the payload is now in a pack, not a loose object
    assert not (store / ".git" / "objects" / blob[:2] / blob[2:]).exists()
    assert list((store / ".git" / "objects" / "pack").glob("*.pack"))
    with Memory.open(store) as mem:
        mem.redact(target.id, REASON)
        mem.purge()
    raw = object_bytes(store)
    assert CANARY.encode() not in raw
    assert b"unrelated-big" in raw
    with Memory.open(store) as mem:
        assert mem.verify().ok


def test_large_text_attachment_is_destroyed(store: Path) -> None:
    text = big_text(BIG_CANARY)
    with Memory.open(store) as mem:
        target = mem.note(text)
        assert mem.get(target.id).body == {"text": text}
    sha = canonical.sha256_hex(text.encode())
    paths = payload_paths(store)
    assert layout.attachment_path(sha) in paths  # stored as an attachment, not inline
    stored = git(
        store, "cat-file", "-p", str(payload_blob_id(store, layout.payload_path(target.id)))
    )
    assert BIG_CANARY not in stored

    with Memory.open(store) as mem:
        mem.redact(target.id, REASON)
    paths = payload_paths(store)
    assert layout.attachment_path(sha) not in paths
    assert layout.payload_path(target.id) not in paths

    code, out, err = cli(store, "gc")
    assert code == 0, err
    assert "destroyed" in out
    assert BIG_CANARY.encode() not in object_bytes(store)
    with Memory.open(store) as mem:
        assert mem.verify().ok


def test_shared_attachment_survives_until_its_last_user_is_redacted(store: Path) -> None:
    text = big_text(BIG_CANARY)
    sha = canonical.sha256_hex(text.encode())
    with Memory.open(store) as mem:
        first = mem.note(text)
        second = mem.note(text, tags=["copy"])
    assert payload_paths(store).count(layout.attachment_path(sha)) == 1

    with Memory.open(store) as mem:
        mem.redact(first.id, REASON)
        result = mem.purge()
    assert result.destroyed >= 1
    assert layout.attachment_path(sha) in payload_paths(store)
    assert BIG_CANARY.encode() in object_bytes(store)
    with Memory.open(store) as mem:
        assert mem.get(first.id).redacted
        assert mem.get(second.id).body == {"text": text, "tags": ["copy"]}
        report = mem.verify()
        assert report.ok, report.problems
    code, out, err = cli(store, "show", second.id)
    assert code == 0, err
    assert BIG_CANARY in out

    with Memory.open(store) as mem:
        mem.redact(second.id, REASON)
        mem.purge()
    assert layout.attachment_path(sha) not in payload_paths(store)
    assert BIG_CANARY.encode() not in object_bytes(store)


def test_identical_short_bodies_share_a_blob(store: Path) -> None:
    """Two events with the same body share one blob: redacting one must not break the other."""
    with Memory.open(store) as mem:
        first = mem.note(CANARY)
        second = mem.note(CANARY)
        mem.redact(first.id, REASON)
        result = mem.purge()
    assert result.still_referenced == 1
    with Memory.open(store) as mem:
        assert mem.get(second.id).body == {"text": CANARY}
        assert mem.verify().ok


def test_redaction_records_who_and_why(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(CANARY)
    code, out, err = cli(
        store, "redact", target.id, "--reason", "leaked key", "--agent", "cleanup-bot", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["target"] == target.id
    with Memory.open(store) as mem:
        redaction = mem.get(data["redaction"])
        assert redaction.type == "redaction"
        assert redaction.body == {"target": target.id, "reason": "leaked key"}
        assert redaction.scope["agent"] == "cleanup-bot"
        assert redaction.scope["user"] == "test@example.com"
        assert redaction.actor == "cleanup-bot"
        by_user = mem.note("another")
        plain = mem.redact(by_user.id, "not needed")
        assert "agent" not in plain.scope
        assert plain.scope["user"] == "test@example.com"
        assert plain.actor == "test@example.com"


def test_pins_on_redacted_events_are_skipped(store: Path) -> None:
    with Memory.open(store) as mem:
        doomed = mem.note(CANARY)
        kept = mem.note("keep me pinned")
        mem.pin(doomed.id, reason="important")
        mem.pin(kept.id)
        now = kept.time + 10_000_000
        assert {p.target for p in mem.pins(now=now)} == {doomed.id, kept.id}
        mem.redact(doomed.id, REASON)
    with Memory.open(store) as mem:
        pins = mem.pins(now=now)
    assert [p.target for p in pins] == [kept.id]
    assert pins[0].target_event is not None
    assert pins[0].target_event.body == {"text": "keep me pinned"}


def test_redacting_twice_returns_the_same_redaction(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(CANARY)
        first = mem.redact(target.id, REASON)
        second = mem.redact(target.id, "a different reason")
        assert second.id == first.id
        assert second.field("reason") == REASON
    with Memory.open(store) as mem:
        redactions = [e for e in mem.events(all_branches=True) if e.type == "redaction"]
        assert [e.id for e in redactions] == [first.id]
    code, out, err = cli(store, "redact", target.id, "--reason", "third", "--json")
    assert code == 0, err
    assert json.loads(out)["redaction"] == first.id


def test_redacting_a_redaction_is_a_usage_error(store: Path) -> None:
    with Memory.open(store) as mem:
        target = mem.note(CANARY)
        redaction = mem.redact(target.id, REASON)
        with pytest.raises(UsageError):
            mem.redact(redaction.id, "undo")
        with pytest.raises(UsageError):
            mem.redact(mem.note("x").id, "   ")
    code, out, err = cli(store, "redact", redaction.id, "--reason", "undo")
    assert code == 2
    assert "redaction" in err
    assert "Traceback" not in out + err
    with Memory.open(store) as mem:
        assert mem.get(redaction.id).body == {"target": target.id, "reason": REASON}
        assert len([e for e in mem.events() if e.type == "redaction"]) == 1


def test_gc_with_log_all_ref_updates(store: Path) -> None:
    git(store, "config", "core.logAllRefUpdates", "always")
    text = big_text(BIG_CANARY)
    with Memory.open(store) as mem:
        small = mem.note(CANARY)
        big = mem.note(text)
        mem.note("survivor")
    # The setting is live: gitmem's own refs now have reflogs holding old snapshots.
    assert (store / ".git" / "logs" / layout.PAYLOAD_REF).exists()
    with Memory.open(store) as mem:
        mem.redact(small.id, REASON)
        mem.redact(big.id, REASON)
    code, _, err = cli(store, "gc")
    assert code == 0, err
    raw = object_bytes(store)
    assert CANARY.encode() not in raw
    assert BIG_CANARY.encode() not in raw
    assert b"survivor" in raw
    with Memory.open(store) as mem:
        assert mem.verify().ok


def test_gc_keeps_the_users_own_recovery_data(store: Path) -> None:
    (store / "work.txt").write_text("user-recovery-canary: precious uncommitted idea\n")
    git(store, "add", "work.txt")
    git(store, "commit", "-q", "-m", "precious work")
    precious = git(store, "rev-parse", "HEAD").strip()
    git(store, "reset", "-q", "--hard", "HEAD~1")  # now only in the reflogs
    assert precious in git(store, "reflog", "--format=%H")
    dangling = git(store, "hash-object", "-w", "--stdin", input="dangling-user-blob\n").strip()

    with Memory.open(store) as mem:
        target = mem.note(CANARY)
    code, _, err = cli(store, "redact", target.id, "--reason", REASON, "--purge")
    assert code == 0, err
    code, _, err = cli(store, "gc")
    assert code == 0, err

    assert CANARY.encode() not in object_bytes(store)
    assert git(store, "cat-file", "-t", precious).strip() == "commit"
    assert "user-recovery-canary" in git(store, "show", f"{precious}:work.txt")
    assert precious in git(store, "reflog", "--format=%H")
    assert git(store, "cat-file", "-p", dangling) == "dangling-user-blob\n"
    git(store, "fsck", "--no-dangling")


def test_a_redaction_reads_no_other_events_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redacting finds its target by the envelopes alone: it read every event
    with its body first (4.9 GB and 145 s at a million events). A prefix that
    is someone else's too is still refused, and redacting again still returns
    the first redaction."""
    from conftest import scratch_repo

    from gitmem.capture.sealer import Draft
    from gitmem.errors import AmbiguousIdError
    from gitmem.storage.payloads import PayloadStore

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        written = mem.append_many([Draft("note", {"text": f"note {i}"}) for i in range(200)])
    target = written[123]
    bodies: list[str] = []
    body = PayloadStore.body

    def counted(
        self: PayloadStore, tree: object, event_id: str, *args: object, **kw: object
    ) -> object:
        bodies.append(event_id)
        return body(self, tree, event_id, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(PayloadStore, "body", counted)
    with Memory.open(repo) as mem:
        redaction = mem.redact(target.id[:12], "leak")
        assert redaction.field("target") == target.id
        assert len(bodies) <= 2  # the target's, at most, and the redaction's own
        again = mem.redact(target.id, "twice")
        assert again.id == redaction.id
        shared = next(
            (a.id[:4] for a in written for b in written if a.id != b.id and a.id[:4] == b.id[:4]),
            None,
        )
        if shared is not None:
            with pytest.raises(AmbiguousIdError):
                mem.redact(shared, "which one?")
    monkeypatch.undo()
    with Memory.open(repo) as mem:
        assert mem.get(target.id).redacted
