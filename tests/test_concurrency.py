"""Concurrent writers in separate processes: nothing lost, nothing duplicated.

Workers are real Python processes started together (they wait on stdin for a
"go" line after their imports so their appends really overlap). Each prints an
event id only after the append or capture returned: the printed ids are the
acknowledged events, and every one must be in git exactly once afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import fsck, git, init_repo, raw_id_counts

from gitmem.memory.api import Memory

MAIN_REF = "refs/edda/branches/main"

BARRIER = r"""
import os, sys, time

def wait_for_go(path):
    while not os.path.exists(path):
        time.sleep(0.005)
"""

APPEND_WORKER = (
    BARRIER
    + r"""
from gitmem.memory.api import Memory

go, repo, tag, count, branch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with Memory.open(repo) as mem:
    wait_for_go(go)
    for i in range(count):
        text = f"{tag} {i}"
        if branch == "-":
            event = mem.note(text)
        else:
            event = mem.append("note", {"text": text}, branch=branch)
        print(event.id, flush=True)
"""
)

# Calls capture() as gitmem-capture's main does, in a loop: one process per
# worker rather than per call, so the captures overlap the appends as densely
# as possible (the capture process itself is under test in test_locks and
# boundary/test_hostile_events).
CAPTURE_WORKER = (
    BARRIER
    + r"""
import json
from gitmem.capture.main import capture

go, repo, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
wait_for_go(go)
for i in range(count):
    if i % 5 == 4:  # every fifth call spools a batch of two
        payload = json.dumps([
            {"type": "note", "body": {"text": f"{tag} {i}a"}},
            {"type": "note", "body": {"text": f"{tag} {i}b"}},
        ])
    else:
        payload = json.dumps({"type": "note", "body": {"text": f"{tag} {i}"}})
    for event_id in capture(payload, repo):
        print(event_id, flush=True)
"""
)


class Workers:
    """Worker processes held at a start barrier (a file that appears on ``go``)."""

    def __init__(self, tmp_path: Path) -> None:
        self.go = tmp_path / "go"
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, script: str, *args: object) -> None:
        self.procs.append(
            subprocess.Popen(
                [sys.executable, "-c", script, str(self.go), *map(str, args)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )

    def run(self, timeout: float = 120) -> list[list[str]]:
        """Release the barrier, wait for every worker, return each one's printed ids."""
        self.go.touch()
        try:
            return run_all(self.procs, timeout)
        finally:
            for proc in self.procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def run_all(procs: list[subprocess.Popen[str]], timeout: float) -> list[list[str]]:
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"worker failed ({proc.returncode}): {out[-500:]} {err}"
        ids = out.split()
        assert all(len(i) == 32 for i in ids), out[-500:]
        outputs.append(ids)
    return outputs


def stale_ref_locks(repo: Path) -> list[str]:
    return [str(p) for p in (repo / ".git" / "refs").rglob("*.lock")]


@pytest.mark.slow
def test_eight_processes_append_2000_events_to_one_branch(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    # fsync only matters when the machine loses power; the lock and the CAS ref
    # updates under test behave the same without it, and 2,000 appends with ~10
    # fsyncs each would dominate the runtime. The other tests here keep it on.
    git(repo, "config", "edda.fsync", "false")
    workers, per_worker = 8, 250
    pool = Workers(tmp_path)
    for w in range(workers):
        pool.start(APPEND_WORKER, repo, f"w{w}", per_worker, "-")
    printed = pool.run(timeout=180)

    acknowledged = [i for ids in printed for i in ids]
    assert [len(ids) for ids in printed] == [per_worker] * workers
    assert len(set(acknowledged)) == workers * per_worker == 2000

    with Memory.open(repo) as mem:
        events = mem.events()
        assert len(events) == 2000
        assert {e.id for e in events} == set(acknowledged)
        assert all(e.ref == MAIN_REF for e in events)
        texts = Counter(e.field("text") for e in events)
        expected = {f"w{w} {i}" for w in range(workers) for i in range(per_worker)}
        assert set(texts) == expected
        assert max(texts.values()) == 1
        # each worker's own events keep its order in the chain's total order
        for w, ids in enumerate(printed):
            mine = [e.id for e in events if e.field("text").startswith(f"w{w} ")]
            assert mine == ids
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
        assert report.events == 2000

    counts = raw_id_counts(repo)
    assert set(counts) == set(acknowledged)
    assert max(counts.values()) == 1
    # every append is its own commit on one linear chain
    assert git(repo, "rev-list", "--count", MAIN_REF).strip() == "2000"
    assert git(repo, "rev-list", "--count", "--merges", MAIN_REF).strip() == "0"
    assert stale_ref_locks(repo) == []
    fsck(repo)


def test_spool_captures_mixed_with_in_process_appends(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    capturers, captures_each = 4, 50
    appenders, appends_each = 2, 120
    workers = Workers(tmp_path)
    for w in range(capturers):
        workers.start(CAPTURE_WORKER, repo, f"c{w}", captures_each)
    for w in range(appenders):
        workers.start(APPEND_WORKER, repo, f"a{w}", appends_each, "-")
    printed = workers.run(timeout=180)

    captured = [i for ids in printed[:capturers] for i in ids]
    appended = [i for ids in printed[capturers:] for i in ids]
    # 50 calls each, every fifth a batch of two
    assert [len(ids) for ids in printed[:capturers]] == [captures_each + captures_each // 5] * 4
    assert [len(ids) for ids in printed[capturers:]] == [appends_each] * appenders
    acknowledged = captured + appended
    assert len(set(acknowledged)) == len(acknowledged)

    with Memory.open(repo) as mem:
        events = mem.events()  # flushes whatever the appenders did not
        assert {e.id for e in events} == set(acknowledged)
        texts = Counter(e.field("text") for e in events)
        assert max(texts.values()) == 1
        assert len(texts) == len(acknowledged)
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
        assert report.warnings == []
    spool = repo / ".git" / "edda" / "spool"
    assert sorted(p.name for p in spool.glob("*.json")) == []
    assert not (spool / "bad").exists()

    counts = raw_id_counts(repo)
    assert set(counts) == set(acknowledged)
    assert max(counts.values()) == 1
    assert stale_ref_locks(repo) == []
    fsck(repo)


def test_concurrent_appends_to_two_branches_lose_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "branch", "x")
    branches = ["x", "y", "x", "y"]  # y has no git branch: memory does not need one
    per_worker = 100
    workers = Workers(tmp_path)
    for w, branch in enumerate(branches):
        workers.start(APPEND_WORKER, repo, f"{branch}{w}", per_worker, branch)
    printed = workers.run()

    by_branch: dict[str, set[str]] = {"x": set(), "y": set()}
    for branch, ids in zip(branches, printed, strict=True):
        assert len(ids) == per_worker
        by_branch[branch] |= set(ids)
    assert len(by_branch["x"]) == len(by_branch["y"]) == 2 * per_worker

    with Memory.open(repo) as mem:
        for branch in ("x", "y"):
            events = mem.events(branch=branch)
            assert {e.id for e in events} == by_branch[branch]
            assert all(e.ref == f"refs/edda/branches/{branch}" for e in events)
            assert all(e.field("text").startswith(branch) for e in events)
        assert mem.events(branch="main") == []
        assert len(mem.events(all_branches=True)) == 4 * per_worker
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems[:5]]
        # every payload made it into the shared payload store
        assert report.payloads == 4 * per_worker

    counts = raw_id_counts(repo)
    assert set(counts) == by_branch["x"] | by_branch["y"]
    assert max(counts.values()) == 1
    for branch, fork_commits in (("x", 1), ("y", 0)):  # git branch x forks from main
        ref = f"refs/edda/branches/{branch}"
        expected = 2 * per_worker + fork_commits
        assert git(repo, "rev-list", "--count", ref).strip() == str(expected)
    # the code branch x was not touched
    assert git(repo, "rev-parse", "x").strip() == git(repo, "rev-parse", "main").strip()
    fsck(repo)
