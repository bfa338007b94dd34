"""The capture spool: durable hook-path writes, flushing, quarantine and journal recovery.

Every capture here runs either as a real ``python -m gitmem.capture.main`` process or
through ``capture()`` in-process; every flush is a real ``Memory`` read on a real repo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import git, init_repo, raw_id_counts

from gitmem.capture.main import capture
from gitmem.memory.api import Memory

MAIN_REF = "refs/edda/branches/main"
HEAVY_MODULES = (
    "pygit2",
    "msgspec",
    "pyarrow",
    "usearch",
    "numpy",
    "tree_sitter",
    "onnxruntime",
    "cyclopts",
)


# helpers ---------------------------------------------------------------------------
def run_capture(
    repo: Path, stdin: str, *extra: str, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``gitmem-capture`` as a real process, run in ``repo``."""
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "gitmem.capture.main", *extra],
        input=stdin,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )


def spool_dir(repo: Path) -> Path:
    return repo / ".git" / "edda" / "spool"


def spool_files(repo: Path) -> list[Path]:
    directory = spool_dir(repo)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name != "flush-journal.json")


def memory_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/edda/").split()


def note_json(text: str, **extra: object) -> str:
    return json.dumps({"type": "note", "body": {"text": text}, **extra})


# capture through a real process ----------------------------------------------------
def test_capture_process_spools_durably_before_any_flush(repo: Path) -> None:
    proc = run_capture(repo, note_json("spooled from a hook"))
    assert proc.returncode == 0, proc.stderr
    ids = proc.stdout.split()
    assert len(ids) == 1 and len(ids[0]) == 32

    # Acknowledged means on disk in its final place: one complete spool file, no
    # temporary left over, and nothing committed into git yet.
    files = spool_files(repo)
    assert len(files) == 1
    data = json.loads(files[0].read_bytes())
    assert [item["envelope"]["id"] for item in data["events"]] == ids
    assert data["events"][0]["body"] == {"text": "spooled from a hook"}
    tmp = spool_dir(repo) / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    assert memory_refs(repo) == []

    with Memory.open(repo) as mem:
        events = mem.events()
        assert [e.id for e in events] == ids
        assert events[0].body == {"text": "spooled from a hook"}
        assert events[0].ref == MAIN_REF
    assert spool_files(repo) == []
    assert MAIN_REF in memory_refs(repo)
    assert raw_id_counts(repo) == Counter({ids[0]: 1})


def test_capture_honours_dash_C(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "elsewhere")
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main", "-C", str(repo)],
        input=note_json("via -C"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(spool_files(repo)) == 1
    with Memory.open(repo) as mem:
        assert [e.field("text") for e in mem.events()] == ["via -C"]


@pytest.mark.parametrize("shape", ["array", "lines"])
def test_batch_capture(repo: Path, shape: str) -> None:
    items = [{"type": "note", "body": {"text": f"batch {i}"}} for i in range(3)] + [
        {"type": "decision", "body": {"key": "db", "value": "sqlite"}}
    ]
    stdin = json.dumps(items) if shape == "array" else "\n".join(json.dumps(i) for i in items)
    proc = run_capture(repo, stdin)
    assert proc.returncode == 0, proc.stderr
    ids = proc.stdout.split()
    assert len(ids) == 4 and len(set(ids)) == 4

    files = spool_files(repo)
    assert len(files) == 1, "one capture call writes one spool file"
    spooled = [item["envelope"]["id"] for item in json.loads(files[0].read_bytes())["events"]]
    assert spooled == ids

    with Memory.open(repo) as mem:
        events = mem.events()
    assert sorted(e.id for e in events) == sorted(ids)
    by_id = {e.id: e for e in events}
    assert [by_id[i].field("text") for i in ids[:3]] == ["batch 0", "batch 1", "batch 2"]
    assert by_id[ids[3]].type == "decision"
    # events captured together keep their order
    assert [e.id for e in sorted(events, key=lambda e: e.order_key)] == ids
    assert raw_id_counts(repo) == Counter(dict.fromkeys(ids, 1))


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param("this is not json {", id="not-json"),
        pytest.param('{"type": "bogus", "body": {"text": "x"}}', id="unknown-type"),
        pytest.param('{"type": "note", "body": {"tags": ["x"]}}', id="missing-field"),
        pytest.param('{"type": "note", "body": {"text": "x", "ratio": 0.5}}', id="float"),
        pytest.param(
            '[{"type": "note", "body": {"text": "good"}},'
            ' {"type": "note", "body": {"text": "bad", "n": 1.5}}]',
            id="float-in-second-of-batch",
        ),
        pytest.param('{"type": "note", "body": {"text": "x"}, "colour": "red"}', id="extra-field"),
        pytest.param("", id="empty"),
    ],
)
def test_bad_input_is_rejected_without_a_spool_file(repo: Path, stdin: str) -> None:
    proc = run_capture(repo, stdin)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gitmem-capture: ")
    assert "Traceback" not in proc.stderr
    assert spool_files(repo) == []
    tmp = spool_dir(repo) / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    with Memory.open(repo) as mem:
        assert mem.events(all_branches=True) == []


def test_capture_outside_a_repository_fails_cleanly(tmp_path: Path) -> None:
    empty = tmp_path / "not-a-repo"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main"],
        input=note_json("x"),
        cwd=empty,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (empty / ".git").exists()


# the hot path stays light ----------------------------------------------------------
def test_capture_imports_no_heavy_module(repo: Path) -> None:
    script = (
        "import json, sys\n"
        "from gitmem.capture.main import capture\n"
        "ids = capture(sys.stdin.read(), sys.argv[1])\n"
        "print(json.dumps({'ids': ids, 'modules': sorted(sys.modules)}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(repo)],
        input=note_json("light"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["ids"]) == 1
    assert "gitmem.storage.spool" in out["modules"]  # the check sees gitmem's modules
    top = {name.split(".")[0] for name in out["modules"]}
    assert sorted(top & set(HEAVY_MODULES)) == []
    assert len(spool_files(repo)) == 1


def test_capture_process_importtime_shows_no_heavy_module(repo: Path) -> None:
    proc = run_capture(repo, note_json("timed"), python_flags=("-X", "importtime"))
    assert proc.returncode == 0, proc.stderr
    imported = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            imported.add(line.rsplit("|", 1)[1].strip())
    assert "gitmem.storage.spool" in imported  # parsing works
    assert "gitmem.capture.sealer" in imported
    top = {name.split(".")[0] for name in imported}
    assert sorted(top & set(HEAVY_MODULES)) == []
    assert len(proc.stdout.split()) == 1
    assert len(spool_files(repo)) == 1


# secrets -----------------------------------------------------------------------------
def test_secrets_are_masked_before_reaching_disk(repo: Path) -> None:
    github = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    password = "hunter2xyz"
    text = f"deploy with {github} and {aws}; password={password}"
    event = {
        "type": "observation",
        "body": {"kind": "command", "input": text, "result": f"export TOKEN={github}"},
    }
    proc = run_capture(repo, json.dumps(event))
    assert proc.returncode == 0, proc.stderr
    (path,) = spool_files(repo)
    raw = path.read_bytes()
    for secret in (github, aws, password):
        assert secret.encode() not in raw
    assert b"[REDACTED:github-token]" in raw
    assert b"[REDACTED:aws-access-key]" in raw
    assert b"deploy with" in raw  # the rest of the text is kept

    with Memory.open(repo) as mem:
        (stored,) = mem.events()
        body = json.dumps(stored.body)
    for secret in (github, aws, password):
        assert secret not in body
    assert "[REDACTED:" in body


# flushing ----------------------------------------------------------------------------
def test_flush_is_idempotent_and_reads_flush(repo: Path) -> None:
    ids = [capture(note_json(f"n{i}"), str(repo))[0] for i in range(5)]
    assert len(spool_files(repo)) == 5
    with Memory.open(repo) as mem:
        first = mem.flush()
        assert (first.events, first.files) == (5, 5)
        second = mem.flush()
        assert (second.events, second.files) == (0, 0)
        assert sorted(e.id for e in mem.events()) == sorted(ids)
    assert spool_files(repo) == []
    assert raw_id_counts(repo) == Counter(dict.fromkeys(ids, 1))


def test_in_process_append_flushes_spool_first(repo: Path) -> None:
    spooled = capture(note_json("spooled first"), str(repo))[0]
    with Memory.open(repo) as mem:
        appended = mem.note("appended after").id
    assert spool_files(repo) == []
    # the spooled event's commit comes before the appended one in the chain
    log = git(repo, "log", "--format=%s", MAIN_REF).splitlines()
    assert len(log) == 2
    assert spooled[:12] in log[1] and appended[:12] in log[0]


def test_corrupt_spool_file_is_quarantined_and_kept(repo: Path) -> None:
    good = [capture(note_json(f"good {i}"), str(repo))[0] for i in range(2)]
    directory = spool_dir(repo)
    garbage = b'{"v": 1, "events": [ this is torn'
    torn = directory / "00000000000000000001-4242-deadbeef.json"
    torn.write_bytes(garbage)

    # a well-formed file whose body no longer matches its digest
    before = set(spool_files(repo))
    capture(note_json("tampered"), str(repo))
    (tampered_src,) = set(spool_files(repo)) - before
    data = json.loads(tampered_src.read_bytes())
    tampered_id = data["events"][0]["envelope"]["id"]
    data["events"][0]["body"]["text"] = "changed after sealing"
    tampered = directory / "00000000000000000002-4242-cafebabe.json"
    tampered_bytes = json.dumps(data).encode()
    tampered.write_bytes(tampered_bytes)
    tampered_src.unlink()

    with Memory.open(repo) as mem:
        result = mem.flush()
        assert result.events == 2
        assert sorted(Path(p).name for p in result.quarantined) == sorted(
            [torn.name, tampered.name]
        )
        ids = {e.id for e in mem.events(all_branches=True)}
        assert ids == set(good)
        assert tampered_id not in ids

    bad = directory / "bad"
    assert (bad / torn.name).read_bytes() == garbage
    assert (bad / tampered.name).read_bytes() == tampered_bytes
    assert not torn.exists() and not tampered.exists()
    assert spool_files(repo) == []

    with Memory.open(repo) as mem:
        again = mem.flush()  # quarantined files are left alone
        assert again.events == 0 and again.quarantined == []
        report = mem.verify()
    assert report.ok, [str(p) for p in report.problems]
    warned = " ".join(str(w) for w in report.warnings)
    assert torn.name in warned and tampered.name in warned
    assert (bad / torn.name).exists()


# journal recovery ----------------------------------------------------------------------
def write_journal(repo: Path, entries: dict[str, object]) -> None:
    (spool_dir(repo) / "flush-journal.json").write_bytes(
        json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()
    )


@pytest.mark.parametrize("moved_on", [False, True], ids=["tip-is-journal-commit", "ref-moved-on"])
def test_journal_recovery_after_ref_moved_does_not_duplicate(repo: Path, moved_on: bool) -> None:
    """Crash after the ref moved but before the spool files were deleted."""
    ids = capture(json.dumps([{"type": "note", "body": {"text": "once"}}] * 2), str(repo))
    (path,) = spool_files(repo)
    copy = path.read_bytes()
    with Memory.open(repo) as mem:
        assert mem.flush().events == 2
    assert not path.exists()
    landed = git(repo, "rev-parse", MAIN_REF).strip()
    later = []
    if moved_on:
        with Memory.open(repo) as mem:
            later.append(mem.note("after the crashed flush").id)
        assert git(repo, "rev-parse", MAIN_REF).strip() != landed

    # put the world back as the crash left it
    path.write_bytes(copy)
    write_journal(repo, {MAIN_REF: {"commit": landed, "files": [path.name]}})

    with Memory.open(repo) as mem:
        result = mem.flush()
        assert result.recovered == 1
        assert result.events == 0
        assert {e.id for e in mem.events()} == {*ids, *later}
        report = mem.verify()
    assert report.ok, [str(p) for p in report.problems]
    assert not path.exists()
    assert not (spool_dir(repo) / "flush-journal.json").exists()
    assert raw_id_counts(repo) == Counter(dict.fromkeys([*ids, *later], 1))


@pytest.mark.parametrize("kind", ["unreachable-commit", "missing-object", "torn-journal"])
def test_journal_naming_a_commit_that_never_landed(repo: Path, kind: str) -> None:
    """Crash after the journal was written but before the ref moved."""
    with Memory.open(repo) as mem:
        before = mem.note("already there").id
    ids = capture(note_json("spooled, flush crashed"), str(repo))
    (path,) = spool_files(repo)
    if kind == "unreachable-commit":
        tree = git(repo, "mktree", input="").strip()
        commit = git(repo, "commit-tree", tree, "-m", "never landed").strip()
        write_journal(repo, {MAIN_REF: {"commit": commit, "files": [path.name]}})
    elif kind == "missing-object":
        write_journal(repo, {MAIN_REF: {"commit": "1" * 40, "files": [path.name]}})
    else:
        (spool_dir(repo) / "flush-journal.json").write_bytes(b'{"refs/edda/bra')

    with Memory.open(repo) as mem:
        result = mem.flush()
        assert result.recovered == 0
        assert result.events == 1
        assert {e.id for e in mem.events()} == {before, *ids}
        assert mem.flush().events == 0
        report = mem.verify()
    assert report.ok, [str(p) for p in report.problems]
    assert spool_files(repo) == []
    assert not (spool_dir(repo) / "flush-journal.json").exists()
    assert raw_id_counts(repo) == Counter(dict.fromkeys([before, *ids], 1))


def test_journal_for_a_fresh_ref_that_never_landed(repo: Path) -> None:
    """The crashed flush would have created the memory ref: it does not exist yet."""
    ids = capture(note_json("first event ever"), str(repo))
    (path,) = spool_files(repo)
    tree = git(repo, "mktree", input="").strip()
    commit = git(repo, "commit-tree", tree, "-m", "never landed").strip()
    write_journal(repo, {MAIN_REF: {"commit": commit, "files": [path.name]}})
    assert memory_refs(repo) == []
    with Memory.open(repo) as mem:
        assert [e.id for e in mem.events()] == ids
    assert raw_id_counts(repo) == Counter(dict.fromkeys(ids, 1))
