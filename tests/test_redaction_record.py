"""The record of redaction targets (gitmem.storage.redactions): read once,
then only the commits added since; never trusted past a rewound chain."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
from conftest import git, make_repo

from gitmem import Memory
from gitmem.records import layout
from gitmem.storage import redactions


def targets(mem: Memory) -> set[str]:
    return mem.ledger.redaction_targets([mem.ledger.payload_roots()])


def test_targets_follow_new_redactions_and_rewinds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=3)
    record = repo / ".git" / "edda" / redactions.RECORD
    with Memory.open(repo) as mem:
        first = mem.note("first secret")
        second = mem.note("second secret")
        assert targets(mem) == set()
        assert record.is_file()
        mem.redact(first.id, "leaked")
        assert targets(mem) == {first.id}  # read from the commits added since
        data = json.loads(record.read_text())
        assert list(data["events"].values()) == [first.id]
        git(repo, "branch", "side")
        mem.fork("side")
        mem.redact(second.id, "leaked too", branch="side")
        assert targets(mem) == {first.id, second.id}  # a new chain
        side = mem.backend.read_ref(layout.branch_ref("side"))
        assert side is not None
        before = mem.backend.read_commit(side).parents[0]
    # the side chain rewound past its redaction: it no longer counts
    pygit2.Repository(str(repo)).references.create(layout.branch_ref("side"), before, force=True)
    with Memory.open(repo) as mem:
        assert targets(mem) == {first.id}
    record.write_text("{not json")  # damage costs a full read, nothing else
    with Memory.open(repo) as mem:
        assert targets(mem) == {first.id}
        assert json.loads(record.read_text())["version"] == redactions.VERSION
