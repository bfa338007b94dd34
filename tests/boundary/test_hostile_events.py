"""A corpus of hostile events, run through every way into memory.

Each case is an input an attacker, a buggy hook or a confused user could
send: wrong types in any field, branch names git refuses, reserved markers,
times far in the future or the past, sizes and nestings meant to exhaust
memory or the stack. Each goes through capture (in-process and as the real
``gitmem-capture`` process), import (as a sealed event in a bundle) and pull
(as forged objects on a bare remote built here), and each must end either in
a one-line usage error with the right exit code and nothing written, or in
acceptance. Afterwards every reader still works on the store, ``git fsck
--full --strict`` is clean, and every acknowledged id is there.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import capture_process, fsck, git, init_repo, make_repo, run_cli, store_snapshots
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.capture.main import capture
from gitmem.errors import ExitCode, GitmemError, UsageError
from gitmem.memory.bundle import BUNDLE_FORMAT, BUNDLE_VERSION
from gitmem.records import canonical, layout
from gitmem.storage import clock
from gitmem.storage.envelope import seal
from gitmem.storage.objects import ObjectBatch

NOW = clock.wall_us()
DAY = 86_400_000_000
GHP = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
SECRET_MARK = "[REDACTED:"


# -- the corpus ------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One capture input: ``ok`` is None when it must be accepted, else a
    fragment of the one-line error it must produce (exit 2)."""

    name: str
    event: Any  # the JSON object (or raw text, when ``raw``)
    ok: str | None = None
    raw: bool = False


def note(**fields: Any) -> dict[str, Any]:
    return {"type": "note", "body": {"text": "x"}, **fields}


BAD_TYPES: list[tuple[str, Any]] = [
    ("int", 5),
    ("object", {}),
    ("list", []),
    ("bool", True),
    ("float", 1.5),
    ("list of str", ["a"]),
]
BAD_BRANCHES = [
    "a..b", "a b", "a:b", "a~1", "x@{1}", "end.", "a*", "a\\b", "foo.lock", ".hidden",
    "..", "@", "HEAD", "-x", "/a", "a/", "a//b", "a\x00b", "a\tb", "a?b", "a[b", "a^b",
    "a/.b", "a/b.lock", "\x7f", "a\nb", "x" * 300,
]  # fmt: skip
GOOD_BRANCHES = ["feature/x", "ünïcödé", "a%b", "a.b", "x@y", "release-1.2", "a/b/c"]

CASES: list[Case] = [
    # scope values of every wrong type, in every scope field
    *(
        Case(f"{field} is {label}", note(**{field: value}), "is not a")
        for field in ("session", "agent", "capsule", "branch")
        for label, value in BAD_TYPES
    ),
    Case("session null", note(session=None)),
    Case("session empty", note(session="")),
    Case("session too long", note(session="s" * 300), "longer than 256 bytes"),
    Case("session 5 MB", note(session="s" * 5_000_000), "longer than 256 bytes"),
    Case("session newline", note(session="a\nb"), "control character"),
    Case("agent too long", note(agent="a" * 257), "longer than 256 bytes"),
    Case("agent NUL", note(agent="a\x00"), "control character"),
    Case("session secret", note(session=GHP)),  # accepted, masked (checked below)
    Case("agent secret", note(agent="sk-ant-api03-" + "x1Y2" * 20)),
    Case("capsule not an id", note(capsule="c1"), "not a capsule id"),
    Case("capsule upper hex", note(capsule="A" * 32), "not a capsule id"),
    Case("capsule too short", note(capsule="abcd"), "not a capsule id"),
    Case("capsule id", note(capsule="0" * 32)),
    # branch names git refuses, and ones it takes
    *(Case(f"branch {b!r:.30}", note(branch=b), "branch") for b in BAD_BRANCHES),
    *(Case(f"branch {b!r}", note(branch=b)) for b in GOOD_BRANCHES),
    Case("branch null (detached)", note(branch=None)),
    Case("branch secret", note(branch="fix-" + GHP), "looks like a secret"),
    # times
    Case("time now", note(time="now"), "not an integer"),
    Case("time float", note(time=1.5), "not an integer"),
    Case("time true", note(time=True), "not an integer"),
    Case("time float 1e25", note(time=1e25), "not an integer"),
    Case("time 10**25", note(time=10**25), "ahead of this machine's clock"),
    Case("time negative", note(time=-1), "before the year 2000"),
    Case("time zero", note(time=0), "before the year 2000"),
    Case("time 1999", note(time=915_148_800_000_000), "before the year 2000"),
    Case("time year 9000", note(time=221_845_392_000_000_000), "ahead of this machine's clock"),
    Case("time two days ahead", note(time=NOW + 2 * DAY), "ahead of this machine's clock"),
    Case("time an hour ahead", note(time=NOW + DAY // 24)),
    Case("time a year ago", note(time=NOW - 365 * DAY)),
    Case("time 5000 digits", '{"type":"note","body":{"text":"x"},"time":' + "9" * 5000 + "}", "digits", True),
    # types and shapes
    Case("unknown type", {"type": "nope", "body": {}}, "unknown event type"),
    Case("type int", {"type": 5, "body": {}}, "string 'type'"),
    Case("type empty", {"type": "", "body": {}}, "unknown event type"),
    Case("type upper", {"type": "NOTE", "body": {"text": "x"}}, "unknown event type"),
    Case("no type", {"body": {"text": "x"}}, "string 'type'"),
    Case("event is a list", [[1]], "JSON object"),
    Case("event is a string", '"note"', "JSON object", True),
    Case("unknown top-level field", note(extra=1), "unknown event field"),
    Case("unknown field long name", note(**{"x" * 5000: 1}), "unknown event field"),
    Case("empty input", "", "no event", True),
    Case("blank input", "  \n\t ", "no event", True),
    Case("empty list", "[]", "empty", True),
    Case("broken JSON", '{"type": "note", "body": {', "not JSON", True),
    Case("JSON lines, one broken", '{"type":"note","body":{"text":"a"}}\n{"type":', "not JSON", True),
    Case("JSON lines, one invalid", '{"type":"note","body":{"text":"a"}}\n{"type":"note","body":{"text":5}}', "must be a string", True),
    Case("nested 900 deep", '{"type":"note","body":{"text":"x","d":' + "[" * 900 + "]" * 900 + "}}", "nested deeper", True),
    Case("nested 100000 deep", '{"type":"note","body":{"text":"x","d":' + "[" * 100_000 + "]" * 100_000 + "}}", "nested too deeply", True),
    Case("NaN", '{"type":"note","body":{"text":"x","n":NaN}}', "floating-point", True),
    Case("Infinity", '{"type":"note","body":{"text":"x","n":Infinity}}', "floating-point", True),
    # bodies
    Case("body list", {"type": "note", "body": []}, "JSON object"),
    Case("body string", {"type": "note", "body": "x"}, "JSON object"),
    Case("body null", {"type": "note", "body": None}, "JSON object"),
    Case("body int", {"type": "note", "body": 5}, "JSON object"),
    Case("note without text", {"type": "note", "body": {}}, "needs the field"),
    Case("note text int", {"type": "note", "body": {"text": 5}}, "body.text must be a string"),
    Case("note text null", {"type": "note", "body": {"text": None}}, "body.text must be a string"),
    Case("note text list", {"type": "note", "body": {"text": ["a"]}}, "body.text must be a string"),
    Case("tags string", {"type": "note", "body": {"text": "x", "tags": "a"}}, "list of strings"),
    Case("tags of ints", {"type": "note", "body": {"text": "x", "tags": [1]}}, "list of strings"),
    Case("paths of null", {"type": "note", "body": {"text": "x", "paths": [None]}}, "list of strings"),
    Case("float in body", {"type": "note", "body": {"text": "x", "n": 1.5}}, "floating-point"),
    Case("huge int in body", {"type": "note", "body": {"text": "x", "n": 2**70}}, "64-bit range"),
    Case("int64 max in body", {"type": "note", "body": {"text": "x", "n": 2**63 - 1}}),
    Case("attachment marker", {"type": "note", "body": {"text": "x", "a": {"$gitmem-blob": "sha256:" + "0" * 64, "size": 1}}}, "reserved key"),
    Case("attachment marker as body", {"type": "note", "body": {"text": "x", "$gitmem-blob": "sha256:00", "size": 1}}, "reserved key"),
    Case("reserved prefix deep", {"type": "note", "body": {"text": "x", "l": [[{"$gitmem-x": 1}]]}}, "reserved key"),
    Case("dollar key is fine", {"type": "note", "body": {"text": "x", "$ref": "y"}}),
    Case("key 2000 bytes", {"type": "note", "body": {"text": "x", "k" * 2000: 1}}, "key longer"),
    Case("nested 65 deep", {"type": "note", "body": {"text": "x", "d": json.loads("[" * 65 + "]" * 65)}}, "nested deeper"),
    Case("nested 60 deep", {"type": "note", "body": {"text": "x", "d": json.loads("[" * 60 + "]" * 60)}}),
    Case("lone surrogate", '{"type":"note","body":{"text":"a\\ud800b"}}', None, True),
    Case("NUL in text", {"type": "note", "body": {"text": "a\x00b"}}),
    Case("unknown body field", {"type": "note", "body": {"text": "x", "mood": {"a": [1, None, True]}}}),
    Case("secret in body key", {"type": "note", "body": {"text": "x", GHP: "v"}}),
    Case("secret in tag", {"type": "note", "body": {"text": "x", "tags": [GHP]}}),
    Case("secret in path", {"type": "note", "body": {"text": "x", "paths": [f"/tmp/{GHP}"]}}),
    Case("text 1 MB", {"type": "note", "body": {"text": "y" * 1_000_000}}),
    Case("input over the capture limit", '{"type":"note","body":{"text":"' + "z" * (9 * 1024 * 1024) + '"}}', "larger than", True),
    Case("observation kind bad", {"type": "observation", "body": {"kind": "bad"}}, "must be one of"),
    Case("observation exit_code str", {"type": "observation", "body": {"kind": "command", "exit_code": "1"}}, "integer or null"),
    Case("observation exit_code null", {"type": "observation", "body": {"kind": "command", "exit_code": None}}),
    Case("observation files str", {"type": "observation", "body": {"kind": "file_diff", "files": "a.py"}}, "list of strings"),
    Case("decision without value", {"type": "decision", "body": {"key": "k"}}, "needs the field"),
    Case("decision value int", {"type": "decision", "body": {"key": "k", "value": 3}}, "must be a string"),
    Case("decision supersedes int", {"type": "decision", "body": {"key": "k", "value": "v", "supersedes": 1}}, "string or null"),
    Case("capsule_open kind bad", {"type": "capsule_open", "body": {"kind": "x"}}, "must be one of"),
    Case("capsule_open scope_ids bad", {"type": "capsule_open", "body": {"kind": "session", "scope_ids": {"a": 1}}}, "object of strings"),
    Case("pin expires str", {"type": "pin", "body": {"target": "abcd", "expires": "soon"}}, "integer or null"),
    Case("checkpoint rejected bad", {"type": "checkpoint", "body": {"rejected": [{"idea": 5}]}}, "idea, reason"),
    Case("checkpoint rejected str", {"type": "checkpoint", "body": {"rejected": ["x"]}}, "idea, reason"),
    Case("checkpoint empty", {"type": "checkpoint", "body": {}}),
    Case("commit_rewrite map bad", {"type": "commit_rewrite", "body": {"kind": "amend", "map": [[1]]}}, "lists of strings"),
    Case("redaction without reason", {"type": "redaction", "body": {"target": "x"}}, "needs the field"),
    Case("learning topic int", {"type": "learning", "body": {"text": "x", "topic": 1}}, "must be a string"),
    Case("prompt ok", {"type": "prompt", "body": {"text": "do it"}}),
    Case("many events at once", [note() for _ in range(50)]),
]  # fmt: skip


def _text(case: Case) -> str:
    return case.event if case.raw else json.dumps(case.event)


# -- helpers -----------------------------------------------------------------------------
READERS: list[tuple[str, ...]] = [
    ("log", "--json", "--all-branches"),
    ("search", "x", "--all-branches", "--json"),
    ("context", "--budget", "800", "--json"),
    ("status", "--json"),
    ("branches", "--json"),
    ("export",),
    ("verify", "--json"),
]


def readers_work(repo: Path, acknowledged: set[str]) -> None:
    """Every reader exits 0 and every acknowledged event is there (and shows)."""
    for args in READERS:
        code, out, err = run_cli(repo, *args)
        assert code == 0, (args, out[-500:], err)
        assert "Traceback" not in err
    code, out, _ = run_cli(repo, "log", "--json", "--all-branches")
    listed = {e["id"] for e in json.loads(out)["events"]}
    assert acknowledged <= listed, sorted(acknowledged - listed)[:3]
    for eid in sorted(acknowledged)[:5]:
        code, out, err = run_cli(repo, "show", eid[:12])
        assert code == 0, err
    fsck(repo)


def memory_state(repo: Path) -> str:
    return git(repo, "for-each-ref", "refs/edda/")


def spool_files(repo: Path) -> list[str]:
    spool = repo / ".git" / "edda" / "spool"
    return sorted(p.name for p in spool.glob("*.json")) if spool.exists() else []


# -- capture -----------------------------------------------------------------------------
def test_corpus_is_large_and_named_uniquely() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
    assert len(CASES) + len(SEALED_CASES) + len(REMOTE_CASES) >= 150


def test_every_case_through_capture(tmp_path: Path) -> None:
    """In-process capture: each case is acknowledged or refused with a UsageError,
    a refused one writes nothing, and the readers all work afterwards."""
    repo = make_repo(tmp_path / "repo", events=2)
    acknowledged: set[str] = set()
    for case in CASES:
        before = spool_files(repo)
        try:
            ids = capture(_text(case), str(repo))
        except UsageError as exc:
            assert case.ok is not None, f"{case.name}: refused: {exc}"
            assert case.ok in str(exc), f"{case.name}: {exc}"
            assert "\n" not in exc.message, case.name
            assert spool_files(repo) == before, f"{case.name}: refused but spooled"
            continue
        assert case.ok is None, f"{case.name}: accepted, expected {case.ok!r}"
        acknowledged.update(ids)
    readers_work(repo, acknowledged)
    # Secrets outside the body were masked before they reached the envelope.
    _code, out, _ = run_cli(repo, "export")
    assert GHP not in out and "sk-ant-api03" not in out
    assert out.count(SECRET_MARK) >= 4


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.name in {"time 5000 digits", "nested 100000 deep", "body list", "empty list", "branch 'a..b'", "session 5 MB", "input over the capture limit"}],
    ids=lambda c: c.name,
)  # fmt: skip
def test_real_capture_process_gives_one_line_and_exit_2(repo: Path, case: Case) -> None:
    proc = capture_process(repo, _text(case))
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitmem-capture: "), lines
    assert proc.stdout == b""


def test_binary_stdin_is_a_usage_error(repo: Path) -> None:
    proc = capture_process(repo, b"\xff\xfe\x00garbage\x80")
    assert proc.returncode == ExitCode.USAGE and b"not UTF-8" in proc.stderr


# -- import ------------------------------------------------------------------------------
def sealed(body: dict[str, Any] | None = None, **envelope_changes: Any) -> dict[str, Any]:
    """A bundle entry: a valid sealed note, then ``envelope_changes`` applied
    and the id re-derived, so only the change itself is wrong."""
    body = {"text": "imported"} if body is None else body
    env, _ = seal("note", body, scope={"branch": "main"}, time_us=NOW - DAY)
    for key, value in envelope_changes.items():
        target = env
        *path, last = key.split("__")
        for part in path:
            target = target[part]
        target[last] = value
    env.pop("id")
    try:
        env["id"] = canonical.event_id(env)
    except (ValueError, TypeError):
        env["id"] = "0" * 32
    return {"body": body, "envelope": env, "redacted": False}


def resealed(body: Any, event_type: str = "note") -> dict[str, Any]:
    """A bundle entry whose digest honestly covers a hostile ``body``."""
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    salt = "ab" * 16
    env = {
        "v": 1,
        "type": event_type,
        "time": NOW - DAY,
        "scope": {"branch": "main"},
        "payload": {
            "digest": canonical.payload_digest(salt, data),
            "salt": salt,
            "size": len(data),
        },
    }
    env["id"] = canonical.event_id(env)
    return {"body": body, "envelope": env, "redacted": False}


SEALED_CASES: list[tuple[str, Any, str | None]] = [
    ("scope.session int", lambda: sealed(scope__session=5), "scope.session"),
    ("scope.session object", lambda: sealed(scope__session={}), "scope.session"),
    ("scope.agent list", lambda: sealed(scope__agent=[]), "scope.agent"),
    ("scope.user int", lambda: sealed(scope__user=7), "scope.user"),
    ("scope.branch int", lambda: sealed(scope__branch=7), "scope.branch"),
    # Rules only new events must meet (time after 2000, git branch names,
    # capsule ids) are not applied to memory that exists already: an older
    # gitmem may have written it, and it breaks no reader.
    # (but an imported event lands on the chain its branch names: that one
    # must be a branch git accepts)
    ("scope.branch a..b", lambda: sealed(scope__branch="a..b"), "scope.branch"),
    ("scope.branch foo.lock", lambda: sealed(scope__branch="foo.lock"), "scope.branch"),
    ("scope.branch newline", lambda: sealed(scope__branch="a\nb"), "scope.branch"),
    ("scope.session line separator", lambda: sealed(scope__session="a\u2028b"), "scope.session"),
    ("time 1990 kept", lambda: sealed(time=631_152_000_000_000), None),
    ("scope.session 5 MB", lambda: sealed(scope__session="s" * 5_000_000), "scope.session"),
    ("scope unknown key ok", lambda: sealed(scope__team="core"), None),
    ("scope bad key", lambda: sealed(scope__Team="core"), "malformed key"),
    ("capsule list", lambda: sealed(capsule=["a"]), "capsule"),
    ("capsule not hex kept", lambda: sealed(capsule="zz"), None),
    ("capsule empty", lambda: sealed(capsule=""), "capsule"),
    ("time float", lambda: sealed(time=1.5), "time"),
    ("time true", lambda: sealed(time=True), "time"),
    ("time 10**25", lambda: sealed(time=10**25), "ahead"),
    ("time negative", lambda: sealed(time=-5), "before 1970"),
    ("time year 9000", lambda: sealed(time=221_845_392_000_000_000), "ahead"),
    ("time two days ahead", lambda: sealed(time=NOW + 2 * DAY), "ahead"),
    ("v zero", lambda: sealed(v=0), "'v'"),
    ("type with space", lambda: sealed(type="a b"), "type"),
    ("unknown type kept", lambda: sealed(type="future_kind"), None),
    ("payload size 1 GB", lambda: sealed(payload__size=2**30), "payload.size"),
    ("payload digest not hex", lambda: sealed(payload__digest="sha256:" + "z" * 64), "digest"),
    ("payload salt short", lambda: sealed(payload__salt="ab"), "salt"),
    ("body altered", lambda: dict(sealed(), body={"text": "forged"}), "does not match"),
    ("body null, not redacted", lambda: dict(sealed(), body=None), "has no body"),
    ("body a list", lambda: dict(sealed(), body=[1]), "not a JSON object"),
    ("body text int, honest digest", lambda: resealed({"text": 5}), "body.text"),
    ("body reserved marker, honest digest", lambda: resealed({"text": "x", "a": {"$gitmem-blob": "sha256:" + "0" * 64, "size": 3}}), "reserved key"),
    ("body nested 200, honest digest", lambda: resealed({"text": "x", "d": json.loads("[" * 200 + "]" * 200)}), "nested deeper"),
    ("unknown envelope field with float", lambda: sealed(extra=1.5), "floating-point"),
    ("unknown envelope field ok", lambda: sealed(extra={"a": 1}), None),
]  # fmt: skip


def bundle_bytes(entries: list[dict[str, Any]]) -> bytes:
    doc = {"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "events": entries}
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def test_every_sealed_case_through_import(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=2)
    acknowledged: set[str] = set()
    for name, make, expected in SEALED_CASES:
        entry = make()
        path = tmp_path / "in.json"
        path.write_bytes(bundle_bytes([entry]))
        before = memory_state(repo)
        code, out, err = run_cli(repo, "import", str(path), "--json")
        if expected is None:
            assert code == 0, (name, err)
            acknowledged.add(entry["envelope"]["id"])
            continue
        assert code == ExitCode.USAGE, (name, code, out, err)
        assert expected in err, (name, err)
        assert len(err.strip().splitlines()) == 1, (name, err)
        assert memory_state(repo) == before, name
    readers_work(repo, acknowledged)


@pytest.mark.parametrize(
    "data",
    [
        b'{"format":"gitmem-bundle","version":1,"events":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"format":"gitmem-bundle","version":1,"events":[' + b"9" * 5000 + b"]}",
        b'{"format":"gitmem-bundle","version":true,"events":[]}',
        b'{"format":"gitmem-bundle","version":1,"events":[5]}',
        b"\xff\xfe",
    ],
    ids=["deep", "5000 digits", "version bool", "event not object", "not utf-8"],
)
def test_hostile_bundle_documents(repo: Path, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "b.json"
    path.write_bytes(data)
    code, _, err = run_cli(repo, "import", str(path))
    assert code == ExitCode.USAGE, err
    assert len(err.strip().splitlines()) == 1


def test_import_reports_redactions_of_existing_events_first(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", events=2)
    code, out, _ = run_cli(src, "log", "--json")
    victim = json.loads(out)["events"][0]["id"]
    dst = tmp_path / "dst"
    git(tmp_path, "clone", "-q", str(src), str(dst))
    bundle = tmp_path / "b.json"
    code, out, _ = run_cli(src, "export", "--output", str(bundle))
    assert run_cli(dst, "import", str(bundle))[0] == 0
    run_cli(src, "redact", victim, "--reason", "leak")
    run_cli(src, "export", "--output", str(bundle))
    code, out, err = run_cli(dst, "import", str(bundle), "--dry-run")
    assert code == 0 and f"would redact {victim[:12]}" in out, out + err
    code, out, _ = run_cli(dst, "log", "--json")
    assert any(e["id"] == victim and e["body"] for e in json.loads(out)["events"])  # not yet
    code, out, _ = run_cli(dst, "import", str(bundle))
    assert f"redacted {victim[:12]}" in out and "1 redaction applied" in out
    code, out, _ = run_cli(dst, "import", str(bundle))
    assert "0 redactions applied" in out  # nothing left to remove the second time


# -- pull from a hostile remote ------------------------------------------------------------
def write_objects(repo: Path, batch: ObjectBatch) -> None:
    batch.write(str(repo / "objects"), fsync=False)


def forge_remote(
    path: Path,
    envelopes: list[bytes],
    payloads: dict[str, bytes],
    *,
    payload_tree: list[tuple[str, int, str]] | None = None,
    extra_root: list[tuple[str, int, str]] = (),  # type: ignore[assignment]
    message: str | None = None,
    ref: str = "refs/edda/branches/main",
) -> Path:
    """A bare remote whose memory is exactly these raw objects."""
    init_repo(path, bare=True)
    batch = ObjectBatch()
    entries = [
        (layout.entry_name(i), layout.MODE_BLOB, batch.blob(e)) for i, e in enumerate(envelopes)
    ]
    root = batch.tree([(layout.EVENTS_DIR, layout.MODE_TREE, batch.tree(entries)), *extra_root])
    msg = (
        message
        or f"{len(envelopes)} events on main\n\nEdda-Format: 1\nEdda-Events: {len(envelopes)}\n"
    )
    commit = batch.commit(root, [], msg, NOW // 1_000_000)
    if payload_tree is None:
        fans: dict[str, list[tuple[str, int, str]]] = {}
        for eid, data in payloads.items():
            fans.setdefault(eid[:2], []).append((eid, layout.MODE_BLOB, batch.blob(data)))
        p = batch.tree(
            [(fan, layout.MODE_TREE, batch.tree(items)) for fan, items in sorted(fans.items())]
        )
        payload_tree = [("p", layout.MODE_TREE, p)] if fans else []
    store = batch.commit(
        batch.tree(payload_tree), [], "gitmem payload store\n\nEdda-Format: 1\n", 0
    )
    write_objects(path, batch)
    git(path, "update-ref", ref, commit)
    git(path, "update-ref", layout.PAYLOAD_REF, store)
    return path


def envelope_bytes(entry: dict[str, Any]) -> bytes:
    return json.dumps(
        entry["envelope"], sort_keys=True, ensure_ascii=False, separators=(",", ":")
    ).encode()


def body_bytes(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _good() -> dict[str, Any]:
    return sealed({"text": "from the remote"})


def _remote_case(name: str, tmp: Path) -> Path:
    good = _good()
    eid = good["envelope"]["id"]
    env = envelope_bytes(good)
    ok_payloads = {eid: body_bytes(good["body"])}
    if name == "forged payload":
        return forge_remote(tmp, [env], {eid: body_bytes({"text": "FORGED TEXT!!!!"})})
    if name == "payload not utf-8":
        return forge_remote(tmp, [env], {eid: b'{"text":"\xff\xfe"}'})
    if name == "payload not json":
        return forge_remote(tmp, [env], {eid: b"not json"})
    if name == "payload store p is a blob":
        batch = ObjectBatch()
        blob = batch.blob(b"x")
        init_repo(tmp, bare=True)
        write_objects(tmp, batch)
        return forge_remote(tmp, [env], {}, payload_tree=[("p", layout.MODE_BLOB, blob)])
    if name == "event without payload":
        return forge_remote(tmp, [env], {})
    if name == "duplicated envelope":
        return forge_remote(tmp, [env, env], ok_payloads)
    if name == "session is an int":
        bad = sealed(scope__session=5)
        return forge_remote(
            tmp, [envelope_bytes(bad)], {bad["envelope"]["id"]: body_bytes(bad["body"])}
        )
    if name == "time far in the future":
        bad = sealed(time=221_845_392_000_000_000)
        return forge_remote(
            tmp, [envelope_bytes(bad)], {bad["envelope"]["id"]: body_bytes(bad["body"])}
        )
    if name == "reserved marker, honest digest":
        bad = resealed({"text": "x", "a": {"$gitmem-blob": "sha256:" + "0" * 64, "size": 3}})
        return forge_remote(
            tmp, [envelope_bytes(bad)], {bad["envelope"]["id"]: body_bytes(bad["body"])}
        )
    if name == "envelope not canonical":
        return forge_remote(tmp, [env + b" "], ok_payloads)
    if name == "code commit as chain tip":
        remote = init_repo(tmp, bare=True)
        work = init_repo(tmp.parent / (tmp.name + "-work"))
        (work / "code.py").write_text("print('hi')\n")
        git(work, "add", "code.py")
        git(work, "commit", "-qm", "code")
        git(work, "push", "-q", str(remote), "HEAD:refs/edda/branches/main")
        return remote
    if name == "chain ref at a blob":
        remote = forge_remote(tmp, [env], ok_payloads)
        blob = git(remote, "hash-object", "-w", "--stdin", input="x").strip()
        git(remote, "update-ref", "refs/edda/branches/other", blob)
        return remote
    if name == "branch ref not a valid name":
        return forge_remote(tmp, [env], ok_payloads, ref="refs/edda/branches/x%2F")
    if name == "tree holds more than events":
        batch = ObjectBatch()
        extra = batch.tree([("a.txt", layout.MODE_BLOB, batch.blob(b"x"))])
        init_repo(tmp, bare=True)
        write_objects(tmp, batch)
        return forge_remote(tmp, [env], ok_payloads, extra_root=[("src", layout.MODE_TREE, extra)])
    if name == "format trailer unreadable":
        return forge_remote(
            tmp, [env], ok_payloads, message="x\n\nEdda-Format: x\nEdda-Events: 1\n"
        )
    if name == "count trailer lies":
        return forge_remote(
            tmp, [env], ok_payloads, message="x\n\nEdda-Format: 1\nEdda-Events: 7\n"
        )
    raise AssertionError(name)


REMOTE_CASES = [
    "forged payload",
    "payload not utf-8",
    "payload not json",
    "payload store p is a blob",
    "event without payload",
    "duplicated envelope",
    "session is an int",
    "time far in the future",
    "reserved marker, honest digest",
    "envelope not canonical",
    "code commit as chain tip",
    "chain ref at a blob",
    "branch ref not a valid name",
    "tree holds more than events",
    "count trailer lies",
    "format trailer unreadable",
]


@pytest.mark.parametrize("name", REMOTE_CASES)
def test_pull_refuses_hostile_remote_and_changes_nothing(tmp_path: Path, name: str) -> None:
    remote = _remote_case(name, tmp_path / "remote.git")
    repo = make_repo(tmp_path / "repo", events=3)
    git(repo, "remote", "add", "origin", str(remote))
    before = memory_state(repo)
    code, out, err = run_cli(repo, "pull", "origin")
    assert code == ExitCode.VERIFY_FAILED, (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "refused memory from origin" in err, err
    assert "FORGED" not in out + err
    assert memory_state(repo) == before
    code, out, _ = run_cli(repo, "log", "--json")
    readers_work(repo, {e["id"] for e in json.loads(out)["events"]})
    # and it stays refused: a second pull does not half-apply anything either
    assert run_cli(repo, "pull", "origin")[0] == ExitCode.VERIFY_FAILED
    assert memory_state(repo) == before


def pull_entries(tmp_path: Path, *entries: dict[str, Any]) -> tuple[Path, int, str]:
    """A repository with one note that pulls a remote holding exactly these
    bundle entries: (repo, exit code, stderr)."""
    remote = forge_remote(
        tmp_path / "remote.git",
        [envelope_bytes(e) for e in entries],
        {e["envelope"]["id"]: body_bytes(e["body"]) for e in entries},
    )
    repo = make_repo(tmp_path / "repo", events=1)
    git(repo, "remote", "add", "origin", str(remote))
    code, _, err = run_cli(repo, "pull", "origin")
    return repo, code, err


def test_pull_of_a_sound_remote_still_works(tmp_path: Path) -> None:
    good = _good()
    repo, code, err = pull_entries(tmp_path, good)
    assert code == 0, err
    code, out, _ = run_cli(repo, "show", good["envelope"]["id"][:12])
    assert "from the remote" in out


def test_reader_says_payload_does_not_match_instead_of_printing_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=1)
    code, out, _ = run_cli(repo, "log", "--json")
    eid = json.loads(out)["events"][0]["id"]
    # swap the stored body for other bytes of the same size, behind gitmem's back
    tree = git(repo, "rev-parse", f"{store_snapshots(repo)[0]}^{{tree}}").strip()
    path = layout.payload_path(eid)
    original = git(repo, "cat-file", "-p", f"{tree}:{path}")
    forged = original.replace("note 0", "FAKE 0")
    assert forged != original and len(forged) == len(original)
    blob = git(repo, "hash-object", "-w", "--stdin", input=forged).strip()
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "idx")}
    subprocess.run(["git", "read-tree", tree], cwd=repo, env=env, check=True)
    subprocess.run(
        ["git", "update-index", "--cacheinfo", f"100644,{blob},{path}"],
        cwd=repo,
        env=env,
        check=True,
    )
    new_tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    commit = git(
        repo, "commit-tree", new_tree, "-m", "gitmem payload store\n\nEdda-Format: 1"
    ).strip()
    git(repo, "update-ref", layout.PAYLOAD_REF, commit)
    for rebuild in (False, True):
        if rebuild:
            assert run_cli(repo, "index", "--rebuild")[0] == 0
        for args in (("show", eid[:12]), ("log",), ("search", "FAKE"), ("export",)):
            code, out, err = run_cli(repo, *args)
            assert code == 0 and "FAKE" not in out, (args, out, err)
        # nor the text it had before: the store no longer vouches for it
        _, out, _ = run_cli(repo, "search", "note", "--json")
        assert eid not in out
        _, out, _ = run_cli(repo, "show", eid[:12])
        assert "note 0" not in out and "payload missing" in out, out
    from gitmem.memory.api import Memory

    with Memory.open(repo) as mem:
        event = mem.get(eid)
    assert event.body is None and event.problem == "payload does not match its envelope"
    code, out, _ = run_cli(repo, "verify")
    assert code == ExitCode.VERIFY_FAILED and "does not match" in out


# -- property: arbitrary JSON for gitmem-capture ---------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
events = st.fixed_dictionaries(
    {"type": st.sampled_from(["note", "decision", "observation", "pin", "checkpoint", "x", 5])},
    optional={
        "body": json_values,
        "session": json_values,
        "agent": json_values,
        "capsule": json_values,
        "branch": st.one_of(json_values, st.sampled_from(["main", "a..b", "feat/x", "x.lock"])),
        "time": st.one_of(json_values, st.integers(NOW - 10 * DAY, NOW + 3 * DAY)),
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(events, min_size=1, max_size=3))
def test_arbitrary_json_is_accepted_whole_or_refused_cleanly(repo: Path, batch: list[Any]) -> None:
    text = json.dumps(batch)
    before = spool_files(repo)
    try:
        ids = capture(text, str(repo))
    except GitmemError as exc:
        assert isinstance(exc, UsageError), exc
        assert spool_files(repo) == before
        return
    assert len(ids) == len(batch)
    code, out, err = run_cli(repo, "log", "--json", "--all-branches")
    assert code == 0, err
    assert set(ids) <= {e["id"] for e in json.loads(out)["events"]}
    assert run_cli(repo, "status")[0] == 0


def test_fuzzed_store_passes_every_reader_and_fsck(repo: Path) -> None:
    """The property above checks each batch quickly; this runs the whole reader
    set and fsck over a store built from a fixed sample of accepted inputs."""
    acknowledged: set[str] = set()
    for batch in [
        [
            {
                "type": "note",
                "body": {"text": "ü", "": {"": [None, True, -(2**63)]}},
                "session": "s",
                "branch": "feat/ü",
            }
        ],
        [
            {
                "type": "decision",
                "body": {"key": "k", "value": "v", "x": {}},
                "agent": "a",
                "time": NOW - 1,
            }
        ],
        [{"type": "observation", "body": {"kind": "error", "exit_code": None}, "branch": None}],
        [{"type": "checkpoint", "body": {"rejected": [{"idea": "i"}]}}],
    ]:
        acknowledged.update(capture(json.dumps(batch), str(repo)))
    readers_work(repo, acknowledged)


def test_memory_written_before_these_rules_stays_readable(tmp_path: Path) -> None:
    """A store an older gitmem let a bad value into (session 5, agent an object,
    capsule a list) is read by every reader, and verify names the problem."""
    from gitmem.memory.api import Memory
    from gitmem.storage.eventchain import Sealed

    repo = make_repo(tmp_path / "repo", events=2)
    body = {"text": "legacy"}
    env, _ = seal("note", body, scope={"branch": "main"}, time_us=NOW)
    env["scope"].update(session=5, agent={"a": 1})
    env["capsule"] = ["x"]
    env.pop("id")
    env["id"] = canonical.event_id(env)
    with Memory.open(repo) as mem, mem.ledger.locked():
        mem.ledger.commit([Sealed(env, body)])
    for args in [*READERS[:-1], ("show", env["id"][:12]), ("ask",), ("pins",), ("capsule", "list")]:
        code, out, err = run_cli(repo, *args)
        assert code == 0, (args, err)
    code, out, _ = run_cli(repo, "verify")
    assert code == ExitCode.VERIFY_FAILED and "scope.session" in out


def test_pull_accepts_what_an_older_gitmem_wrote(tmp_path: Path) -> None:
    """Rules only new events must meet do not refuse existing memory: a time
    before 2000 and a capsule that is not an event id arrive, and verify warns."""
    old = sealed({"text": "from an older gitmem"}, time=631_152_000_000_000, capsule="abc")
    repo, code, err = pull_entries(tmp_path, old)
    assert code == 0, err
    code, out, _ = run_cli(repo, "log", "--json")
    assert old["envelope"]["id"] in out
    readers_work(repo, {old["envelope"]["id"]})
    code, out, _ = run_cli(repo, "verify", "--json")
    report = json.loads(out)
    assert code == 0 and any("before today's rules" in w["message"] for w in report["warnings"])
