"""Crash safety: writers killed with SIGKILL at random and at chosen points.

A writer process prints an event id only after the append or capture returned,
so every printed id is acknowledged and must survive the kill: present exactly
once, with its payload, after the next ``Memory`` read (which flushes the spool
and finishes or undoes whatever the killed writer left behind).

Two kinds of kill:

* random: 50 writers (in-process appends, spool captures, flushes of a
  pre-filled spool) killed at a seeded random point: a short delay after a
  number of acknowledged events (none, for some flushes). What is checked is
  correctness (nothing acknowledged is lost, nothing is committed twice, the
  chain verifies), never how much a writer got done in a given time, which a
  loaded machine changes;
* exact: ``strace`` delivers SIGKILL on the n-th ``rename``/``unlink``/``link``
  system call of a flush or an append, for every n, so each step of a ref
  transaction and of the spool journal is hit deterministically.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import fsck, git, init_repo, raw_id_counts

from gitmem.capture.main import capture
from gitmem.memory.api import Memory

ID = re.compile(r"^[0-9a-f]{32}$")

WRITER = r"""
import json, sys

kind, repo, tag = sys.argv[1], sys.argv[2], sys.argv[3]
from gitmem.capture.main import capture
from gitmem.memory.api import Memory


def ack(ids):
    sys.stdout.write("".join(f"{i}\n" for i in ids))
    sys.stdout.flush()


def branch(i):
    return "side" if i % 3 == 0 else "main"


def payload(i):
    if i % 4 == 3:  # a batch of three in one spool file
        return json.dumps([
            {"type": "note", "body": {"text": f"{tag} {i}.{k}"}, "branch": branch(i)}
            for k in range(3)
        ])
    return json.dumps({"type": "note", "body": {"text": f"{tag} {i}"}, "branch": branch(i)})


ack(["ready"])
i = 0
if kind == "append":
    mem = Memory.open(repo)
    while True:
        event = mem.append("note", {"text": f"{tag} {i}"}, branch=branch(i))
        ack([event.id])
        i += 1
elif kind == "capture":
    while True:
        ack(capture(payload(i), repo))
        i += 1
elif kind == "flush":
    while True:
        with Memory.open(repo) as mem:
            mem.flush()
        for _ in range(4):
            ack(capture(payload(i), repo))
            i += 1
"""


# helpers -------------------------------------------------------------------------------


def spool_dir(repo: Path) -> Path:
    return repo / ".git" / "edda" / "spool"


def pending(repo: Path) -> list[str]:
    directory = spool_dir(repo)
    if not directory.is_dir():
        return []
    return sorted(
        p.name
        for p in directory.glob("*.json")
        if p.is_file() and not p.name.startswith(".") and p.name != "flush-journal.json"
    )


def ref_locks(repo: Path) -> list[Path]:
    return sorted((repo / ".git" / "refs").rglob("*.lock"))


def check_after_crash(repo: Path, acknowledged: dict[str, str]) -> dict[str, object]:
    """Open the memory (which flushes) and check every acknowledged id."""
    with Memory.open(repo) as mem:
        found = {e.id: e for e in mem.events(all_branches=True)}
        missing = sorted(i for i in acknowledged if i not in found)
        assert not missing, f"acknowledged events lost: {missing[:5]} ({len(missing)})"
        no_body = sorted(i for i in acknowledged if found[i].body is None)
        assert not no_body, f"acknowledged events without payload: {no_body[:5]}"
        for event_id, text in list(acknowledged.items())[-20:]:
            got = mem.get(event_id)
            assert got.id == event_id
            if text:
                assert got.field("text") == text
        assert pending(repo) == [], "a read left spool files behind"
        assert not (spool_dir(repo) / "flush-journal.json").exists()
    counts = raw_id_counts(repo)
    twice = sorted(i for i, n in counts.items() if n > 1)
    assert not twice, f"events committed twice: {twice[:5]}"
    assert set(counts) == set(found)
    assert not (spool_dir(repo) / "bad").exists(), "a crash left an unreadable spool file"
    return found


def prefill(repo: Path, tag: str, files: int) -> dict[str, str]:
    """Spool ``files`` capture files (some batches, two branches); all acknowledged."""
    acked: dict[str, str] = {}
    for i in range(files):
        count = 3 if i % 5 == 4 else 1
        items = [
            {
                "type": "note",
                "body": {"text": f"{tag} {i}.{k}"},
                "branch": "side" if i % 2 else "main",
            }
            for k in range(count)
        ]
        ids = capture(json.dumps(items), str(repo))
        acked.update({event_id: f"{tag} {i}.{k}" for k, event_id in enumerate(ids)})
    return acked


def run_and_kill(
    repo: Path, kind: str, tag: str, *, after_acks: int, delay: float
) -> tuple[list[str], str]:
    """Start a writer, wait until it acknowledged ``after_acks`` events, let it
    work ``delay`` s more, SIGKILL it.

    Waiting for acknowledgements rather than for a time makes the kill land
    after the same amount of work however loaded the machine is. Returns the
    ids it acknowledged and its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, str(repo), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stdout = proc.stdout
    lines: list[bytes] = []
    arrived = threading.Condition()

    def read() -> None:
        for line in stdout:
            with arrived:
                lines.append(line)
                arrived.notify()
        with arrived:  # end of output: the writer is gone
            arrived.notify()

    try:
        first = stdout.readline()
        assert first == b"ready\n", (first, proc.stderr.read().decode()[-2000:])
        reader = threading.Thread(target=read)
        reader.start()
        with arrived:
            # A writer that acknowledges nothing for a minute is stuck, not slow.
            arrived.wait_for(lambda: len(lines) >= after_acks or proc.poll() is not None, 60)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        reader.join(timeout=30)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the writer must have been running, not dead of an error of its own
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, err[-2000:])
    ids = []
    for line in lines:
        if not line.endswith(b"\n"):
            continue  # cut mid-write: never acknowledged (cannot happen for one write)
        text = line.decode().strip()
        assert ID.match(text), line
        ids.append(text)
    assert len(ids) >= after_acks, (kind, len(ids), after_acks, err[-2000:])
    return ids, err


# random kills ------------------------------------------------------------------------------
@pytest.mark.slow
def test_fifty_random_kills_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "branch", "side")
    rng = random.Random(20240521)
    kinds = ("append", "capture", "flush")
    acknowledged: dict[str, str] = {}  # id -> text ("" when not tracked)
    acked_by_kind: Counter[str] = Counter()
    seen: Counter[str] = Counter()  # what the kills left behind, for the failure message

    for run in range(50):
        kind = kinds[run % 3]
        if kind == "flush":
            # Killed in the flush of this pre-filled spool (~0.2 s) or in one
            # of the small flushes that follow every four captures.
            acknowledged.update(prefill(repo, f"pre{run}", 25))
            after_acks = rng.choice([0, rng.randint(1, 16)])
            delay = rng.uniform(0.0, 0.3 if after_acks == 0 else 0.06)
        else:
            # Killed inside one of the next few appends (~15 ms each) or
            # captures (~4 ms each), after some acknowledged ones.
            after_acks, delay = rng.randint(1, 10), rng.uniform(0.0, 0.05)
        ids, _ = run_and_kill(repo, kind, f"r{run}", after_acks=after_acks, delay=delay)
        assert len(set(ids)) == len(ids)
        assert not set(ids) & set(acknowledged)
        acknowledged.update(dict.fromkeys(ids, ""))
        acked_by_kind[kind] += len(ids)

        if (spool_dir(repo) / "flush-journal.json").exists():
            seen["journal left"] += 1
        if ref_locks(repo):
            seen["ref locks left"] += 1
        if pending(repo):
            seen["spool files left"] += 1
        if run % 2:
            # Half the time the next writer comes "later": leftover ref locks
            # are aged past the 2 s stale limit. The other half exercise the
            # real wait for a lock to become stale (a kill inside a ref
            # transaction is common: objects are written with the refs locked).
            age_stale_locks(repo)
        try:
            check_after_crash(repo, acknowledged)
        except AssertionError as exc:
            raise AssertionError(
                f"run {run} ({kind}): {exc}; acked {dict(acked_by_kind)}, {dict(seen)}"
            ) from exc

    with Memory.open(repo) as mem:
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
        assert report.events >= len(acknowledged)
        assert {e.id for e in mem.events(all_branches=True)} >= set(acknowledged)
    fsck(repo)


# exact kill points ---------------------------------------------------------------------------
def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=getpid", "true"],
        capture_output=True,
    )
    return proc.returncode == 0


needs_strace = pytest.mark.skipif(not _strace_works(), reason="needs a working strace (ptrace)")

FLUSH_ONCE = r"""
import sys
from gitmem.memory.api import Memory
with Memory.open(sys.argv[1]) as mem:
    mem.flush()
"""

APPEND_ONCE = r"""
import sys
from gitmem.memory.api import Memory
with Memory.open(sys.argv[1]) as mem:
    event = mem.append("note", {"text": sys.argv[2]}, branch=sys.argv[3])
    print(event.id, flush=True)
"""


def kill_at(syscall: str, n: int, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` and SIGKILL it on entry to its n-th ``syscall`` (before it runs)."""
    return subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            os.devnull,
            "-e",
            f"trace={syscall}",
            "-e",
            f"inject={syscall}:signal=SIGKILL:when={n}",
            sys.executable,
            "-c",
            script,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def age_stale_locks(repo: Path) -> None:
    """Make leftover ref locks look as old as they would be after a real crash
    (the library removes only locks older than 2 s), so the test need not sleep."""
    old = time.time() - 10
    for lock in ref_locks(repo):
        os.utime(lock, (old, old))


def _seeded_repo(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    git(repo, "branch", "side")
    with Memory.open(repo) as mem:  # both memory refs exist: updates go through rename
        mem.append("note", {"text": "seed main"}, branch="main")
        mem.append("note", {"text": "seed side"}, branch="side")
    return repo


@needs_strace
@pytest.mark.parametrize("syscall", ["rename", "unlink"])
def test_flush_killed_at_every_step(tmp_path: Path, syscall: str) -> None:
    repo = _seeded_repo(tmp_path)
    acknowledged: dict[str, str] = {}
    completed = False
    for n in range(1, 40):
        acked = prefill(repo, f"{syscall}{n}", 3)
        # one file spanning both branches: a partly landed transaction must
        # keep exactly the events of the ref that did not move
        both = [
            {"type": "note", "body": {"text": f"{syscall}{n} both main"}, "branch": "main"},
            {"type": "note", "body": {"text": f"{syscall}{n} both side"}, "branch": "side"},
        ]
        ids = capture(json.dumps(both), str(repo))
        acked.update(zip(ids, [b["body"]["text"] for b in both], strict=True))
        acknowledged.update(acked)

        proc = kill_at(syscall, n, FLUSH_ONCE, str(repo))
        if proc.returncode == 0:
            completed = True  # fewer than n such calls: every step has been hit
            check_after_crash(repo, acknowledged)
            break
        assert proc.returncode == -signal.SIGKILL or proc.returncode == 128 + 9, proc.stderr
        age_stale_locks(repo)
        check_after_crash(repo, acknowledged)
    assert completed, "the flush never completed: raise the step limit"
    assert n > 2, f"only {n - 1} {syscall} calls were interrupted"
    with Memory.open(repo) as mem:
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
    fsck(repo)


@needs_strace
@pytest.mark.parametrize("syscall", ["rename", "link"])
def test_append_killed_at_every_step(tmp_path: Path, syscall: str) -> None:
    repo = _seeded_repo(tmp_path)
    acknowledged: dict[str, str] = {}
    completed = False
    for n in range(1, 40):
        text = f"append {syscall} {n}"
        proc = kill_at(syscall, n, APPEND_ONCE, str(repo), text, "side" if n % 2 else "main")
        if proc.returncode == 0:
            (event_id,) = proc.stdout.split()
            acknowledged[event_id] = text
            completed = True
            check_after_crash(repo, acknowledged)
            break
        assert proc.stdout == "", "killed before returning: nothing acknowledged"
        age_stale_locks(repo)
        found = check_after_crash(repo, acknowledged)
        # an append killed half-way is all or nothing: if its event is in a
        # chain, its payload is too (the payload store lands first)
        for event in found.values():
            assert event.body is not None, (n, event.id)
    assert completed, "the append never completed: raise the step limit"
    assert n > 2, f"only {n - 1} {syscall} calls were interrupted"
    with Memory.open(repo) as mem:
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
    fsck(repo)
