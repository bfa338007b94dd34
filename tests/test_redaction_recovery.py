"""Redaction is two ref updates; a crash between them is finished by redacting again."""

from __future__ import annotations

from conftest import make_repo

from gitmem.memory.api import Memory
from gitmem.storage.eventchain import Sealed


def test_redacting_again_finishes_an_interrupted_redaction(tmp_path):
    """A crash after the redaction event landed but before the payload left."""
    repo = make_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        target = mem.note("secret-ish text")
        envelope, body = mem.sealer.seal(
            [
                __import__("gitmem.capture.sealer", fromlist=["Draft"]).Draft(
                    "redaction", {"target": target.id, "reason": "r"}
                )
            ]
        )[0]
        with mem.ledger.locked():
            mem.ledger.commit([Sealed(envelope, body)])  # event only: the "crash" skips step 3
    with Memory.open(repo) as mem:
        report = mem.verify()
        assert not report.ok and "redact it again" in str(report.problems[0])
        again = mem.redact(target.id, "again")
        assert again.id == envelope["id"]
        assert mem.verify().ok


def test_redact_while_a_capture_is_spooled_does_not_deadlock(tmp_path):
    """redact() holds the writer lock and reads memory, which flushes the spool
    and takes the lock again: the lock must be re-entrant within a thread."""
    import time

    from gitmem.capture.main import capture
    from gitmem.storage.lock import writer_lock

    repo = make_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        target = mem.note("to redact")
        captured = capture('{"type": "note", "body": {"text": "spooled"}}', str(repo))
        started = time.monotonic()
        with mem.ledger.locked():
            redaction = mem.redact(target.id, "test")  # flushes the spool inside the lock
        assert time.monotonic() - started < 10
        assert redaction.field("target") == target.id
        assert mem.get(captured[0]).body == {"text": "spooled"}
    with writer_lock(tmp_path / "state"), writer_lock(tmp_path / "state"):
        pass  # nested use in one thread
