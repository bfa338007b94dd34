"""Export and import bundles: byte-identical round trips, conflicts, tampering,
redactions travelling with the bundle, Parquet."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from conftest import cli, git, init_repo, payload_files, scratch_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_records import BODIES, UNICODE_SAMPLES

from gitmem.errors import ConflictError, UsageError
from gitmem.memory.api import Memory
from gitmem.memory.bundle import export_json, import_bundle, parse_bundle
from gitmem.memory.event import Event
from gitmem.records import canonical, layout
from gitmem.storage.eventchain import Sealed

# None is the detached-HEAD chain; "feature/x" needs escaping in the ref name.
BRANCHES = ["main", "b1", "feature/x", "fix/ünïcode", None]
APPENDABLE = sorted(t for t in BODIES if t != "redaction")  # redactions come from redact()
# Large texts are stored as attachments; only two of them, so events often share one.
BIG_TEXTS = [
    f"{name} " + "".join(f"{i:05d} 長い行 🐘\n" for i in range(700)) for name in ("big-a", "big-b")
]


@st.composite
def store_plans(draw: st.DrawFn) -> tuple[list[tuple[str, dict[str, Any], Any, Any]], list[int]]:
    """Events to append (type, body, branch, agent) and which of them to redact."""
    count = draw(st.integers(min_value=1, max_value=10))
    plans = []
    for _ in range(count):
        event_type = draw(st.sampled_from([*APPENDABLE, "big note"]))
        if event_type == "big note":
            event_type, body = "note", {"text": draw(st.sampled_from(BIG_TEXTS))}
        else:
            body = draw(BODIES[event_type])
        plans.append(
            (
                event_type,
                body,
                draw(st.sampled_from(BRANCHES)),
                draw(st.none() | st.sampled_from(["claude", "エージェント🤖"])),
            )
        )
    redact = draw(st.sets(st.integers(min_value=0, max_value=count - 1), max_size=3))
    return plans, sorted(redact)


def build_store(repo: Path, plans: list[Any], redact: list[int]) -> list[Event]:
    with Memory.open(repo) as mem:
        written = [
            mem.append(event_type, body, branch=branch, agent=agent)
            for event_type, body, branch, agent in plans
        ]
        for index in redact:
            mem.redact(written[index].id, f"redacted #{index} — 理由")
    return written


def export_bytes(repo: Path) -> bytes:
    with Memory.open(repo) as mem:
        return export_json(mem.events(all_branches=True))


def edda_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/edda/")


def bundle_lines(data: bytes) -> list[dict[str, Any]]:
    return json.loads(data)["events"]


def make_bundle(entries: list[dict[str, Any]]) -> bytes:
    """A bundle in export's own layout, from entries (body/envelope/redacted)."""
    events = [
        Event(e["envelope"], e["body"], "refs/edda/x", "0" * 40, e["redacted"]) for e in entries
    ]
    return export_json(events)


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, list[Event]]:
    """A store with notes on two branches, a decision and one redacted note."""
    repo = init_repo(tmp_path / "src")
    with Memory.open(repo) as mem:
        events = [
            mem.note("first note", tags=["a"]),
            mem.note("note on b1 — 分支", branch="b1"),
            mem.decide("db", "postgres", reason="mature"),
            mem.note("secret-ish text to redact"),
        ]
        mem.redact(events[3].id, "leak")
    return repo, events


# round trips -----------------------------------------------------------------------------


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(store_plans())
def test_export_import_export_is_byte_identical(plan: Any) -> None:
    plans, redact = plan
    with tempfile.TemporaryDirectory() as tmp:
        src = scratch_repo(Path(tmp) / "src")
        written = build_store(src, plans, redact)
        first = export_bytes(src)
        assert export_bytes(src) == first  # deterministic
        doc = json.loads(first)
        assert doc["format"] == "gitmem-bundle"
        assert len(doc["events"]) == len(written) + len(redact)
        assert [e["redacted"] for e in doc["events"]].count(True) == len(redact)

        dst = scratch_repo(Path(tmp) / "dst")
        with Memory.open(dst) as mem:
            result = import_bundle(mem, first)
        assert result.imported == len(doc["events"])
        # the redacted events arrive without their text: nothing here loses any
        assert (result.redactions_applied, result.redacts) == (0, [])
        second = export_bytes(dst)
        assert second == first
        with Memory.open(dst) as mem:
            for index, event in enumerate(written):
                got = mem.get(event.id)
                assert got.branch == event.branch
                if index in redact:
                    assert got.redacted and got.body is None
                else:
                    assert got.body == event.body
            report = mem.verify()
        # Random ratify/pin targets are fine; only redactions are checked against their targets.
        assert report.ok, report.problems


def test_every_type_round_trips_through_the_cli(tmp_path: Path) -> None:
    src = init_repo(tmp_path / "src")
    with Memory.open(src) as mem:
        capsule = mem.open_capsule("session", "round trip 🧪")
        decision = mem.decide("lang", "python", agent="claude", capsule=capsule.id)
        mem.ratify(decision.id)
        note = mem.note("😀 note", tags=[], paths=["src/a.py"], branch="feature/x")
        mem.checkpoint(next="ship", rejected=[("rewrite", "too big")], hypotheses=[])
        mem.append("observation", {"kind": "command", "input": "ls", "exit_code": 0})
        mem.append("prompt", {"text": "プロンプト"})
        mem.pin(note.id, expires=2**53)
        mem.unpin(note.id, branch=None)
        for kind in ("learning", "pattern", "mistake"):
            mem.learn(kind, f"{kind} 学习", topic="t")
        mem.link_commit("a" * 40, message="commit")
        mem.append("commit_rewrite", {"kind": "amend", "map": [["a" * 40, "b" * 40]]})
        mem.close_capsule(capsule.id, "done")
        leaked = mem.note("to redact " + "x" * (layout.ATTACHMENT_MIN_BYTES + 1))
        mem.redact(leaked.id, "too big")
        types = {e.type for e in mem.events(all_branches=True)}
    assert types == set(BODIES)

    code, first, err = cli(src, "export")
    assert code == 0, err
    code, again, _ = cli(src, "export")
    assert again == first
    bundle = tmp_path / "bundle.json"
    bundle.write_text(first, encoding="utf-8")
    dst = init_repo(tmp_path / "dst")
    code, out, err = cli(dst, "import", str(bundle))
    assert code == 0, err
    assert f"imported {len(bundle_lines(first.encode()))} events" in out
    code, second, err = cli(dst, "export")
    assert code == 0, err
    assert second == first
    code, out, err = cli(dst, "verify")
    assert code == 0, out + err


def test_export_is_deterministic_json(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, events = source
    code, first, err = cli(repo, "export")
    assert code == 0, err
    code, second, _ = cli(repo, "export")
    assert first == second
    out = tmp_path / "out.json"
    code, _, err = cli(repo, "export", "--output", str(out))
    assert code == 0, err
    assert out.read_bytes() == first.encode()
    doc = json.loads(first)
    assert doc["format"] == "gitmem-bundle" and doc["version"] == 1
    entries = doc["events"]
    assert len(entries) == 5  # four events and the redaction
    keys = [(e["envelope"]["time"], e["envelope"]["id"]) for e in entries]
    assert keys == sorted(keys)
    by_id = {e["envelope"]["id"]: e for e in entries}
    assert by_id[events[3].id] == {
        "body": None,
        "envelope": events[3].envelope,
        "redacted": True,
    }
    assert b"secret-ish" not in first.encode()
    # one event per line, every line canonical
    lines = first.splitlines()
    assert len(lines) == len(entries) + 2
    for line in lines[1:-1]:
        assert canonical.is_canonical(line.rstrip(",").encode())
    # --branch limits the export
    code, only_b1, _ = cli(repo, "export", "--branch", "b1")
    assert [e["envelope"]["id"] for e in json.loads(only_b1)["events"]] == [events[1].id]


def test_empty_store_exports_an_empty_bundle(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "empty")
    code, out, err = cli(repo, "export")
    assert code == 0, err
    assert json.loads(out) == {"format": "gitmem-bundle", "version": 1, "events": []}
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        assert import_bundle(mem, out.encode()).imported == 0
    assert edda_refs(dst) == ""


# conflicts --------------------------------------------------------------------------------


def test_skip_keeps_local_events(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, _ = source
    data = export_bytes(repo)
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        assert import_bundle(mem, data).imported == 5
    refs = edda_refs(dst)
    bundle = tmp_path / "b.json"
    bundle.write_bytes(data)
    code, out, err = cli(dst, "import", str(bundle), "--on-conflict", "skip", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["imported"], result["skipped"]) == (0, 5)
    assert len(result["conflicts"]) == 5
    assert edda_refs(dst) == refs
    assert export_bytes(dst) == data


def test_overwrite_restores_missing_payloads(
    source: tuple[Path, list[Event]], tmp_path: Path
) -> None:
    repo, events = source
    full = export_bytes(repo)
    entries = bundle_lines(full)
    hollow = [
        dict(e, body=None) if e["envelope"]["id"] == events[0].id else e for e in entries
    ]  # the first note arrives without its payload (not redacted)
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        # a bundle may not carry an event without its body unless it redacts it ...
        with pytest.raises(UsageError, match="has no body and the bundle does not redact it"):
            import_bundle(mem, make_bundle(hollow))
        assert not edda_refs(dst)
        # ... but a store damaged some other way can lack one: commit it so by hand
        redacted = {e["envelope"]["id"] for e in entries if e["body"] is None}
        with mem.ledger.locked():
            mem.ledger.commit(
                [
                    Sealed(
                        e["envelope"], None if e["envelope"]["id"] == events[0].id else e["body"]
                    )
                    for e in entries
                    if e["envelope"]["id"] not in redacted
                ]
            )
        import_bundle(mem, full)  # brings the redacted event and its redaction
    with Memory.open(dst) as mem:
        lost = mem.get(events[0].id)
        assert lost.body is None and not lost.redacted
        assert [(p.event, p.field) for p in mem.verify().problems] == [(events[0].id, "payload")]
        skipped = import_bundle(mem, full, strategy="skip")
        assert (skipped.skipped, skipped.overwritten) == (5, 0)
        assert mem.get(events[0].id).body is None

    bundle = tmp_path / "full.json"
    bundle.write_bytes(full)
    code, out, err = cli(dst, "import", str(bundle), "--on-conflict", "overwrite", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["imported"], result["overwritten"]) == (0, 1)
    with Memory.open(dst) as mem:
        assert mem.get(events[0].id).body == {"text": "first note", "tags": ["a"]}
        assert mem.get(events[3].id).redacted  # overwrite never brings back a redacted body
        assert mem.verify().ok
    assert export_bytes(dst) == full

    # not even from a bundle that carries the genuine body and leaves out the redaction
    with Memory.open(repo) as mem:
        genuine = mem.ledger.body(mem.ledger.payload_roots(), events[3].id)
    assert genuine is None  # the source no longer has it either: rebuild it from the event
    body = {"text": "secret-ish text to redact"}
    env = events[3].envelope
    assert (
        canonical.payload_digest(env["payload"]["salt"], canonical.encode(body))
        == (env["payload"]["digest"])
    )
    forged = [
        {"body": body, "envelope": env, "redacted": False}
        if e["envelope"]["id"] == events[3].id
        else e
        for e in entries
        if e["envelope"]["type"] != "redaction"
    ]
    with Memory.open(dst) as mem:
        result = import_bundle(mem, make_bundle(forged), strategy="overwrite")
        assert result.overwritten == 0
        assert mem.get(events[3].id).redacted
    paths = payload_files(dst)
    assert layout.payload_path(events[3].id) not in paths


def test_error_strategy_imports_nothing(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, _ = source
    old = export_bytes(repo)
    with Memory.open(repo) as mem:
        mem.note("a newer note that is not in the destination yet")
    new = export_bytes(repo)
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        import_bundle(mem, old)
        before = edda_refs(dst)
        with pytest.raises(ConflictError):
            import_bundle(mem, new, strategy="error")
    assert edda_refs(dst) == before

    bundle = tmp_path / "new.json"
    bundle.write_bytes(new)
    code, out, err = cli(dst, "import", str(bundle), "--on-conflict", "error")
    assert code == 5, out + err
    assert "already exists" in err
    assert "Traceback" not in out + err
    assert edda_refs(dst) == before
    assert export_bytes(dst) == old
    code, _, err = cli(dst, "import", str(bundle), "--on-conflict", "skip")
    assert code == 0, err
    assert export_bytes(dst) == new


def test_error_strategy_without_conflicts_imports(
    source: tuple[Path, list[Event]], tmp_path: Path
) -> None:
    repo, _ = source
    bundle = tmp_path / "b.json"
    bundle.write_bytes(export_bytes(repo))
    dst = init_repo(tmp_path / "dst")
    code, _, err = cli(dst, "import", str(bundle), "--on-conflict", "error")
    assert code == 0, err
    assert export_bytes(dst) == bundle.read_bytes()


def test_dry_run_changes_nothing(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, _ = source
    bundle = tmp_path / "b.json"
    bundle.write_bytes(export_bytes(repo))
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        mem.note("local")
    before = edda_refs(dst)
    objects_before = git(dst, "count-objects", "-v")
    code, out, err = cli(dst, "import", str(bundle), "--dry-run")
    assert code == 0, err
    assert "would import 5 events" in out
    code, out, err = cli(dst, "import", str(bundle), "--dry-run", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["dry_run"] is True and result["imported"] == 5
    assert edda_refs(dst) == before
    assert git(dst, "count-objects", "-v") == objects_before
    with Memory.open(dst) as mem:
        assert [e.field("text") for e in mem.events(all_branches=True)] == ["local"]


def test_unknown_strategy_is_a_usage_error(source: tuple[Path, list[Event]]) -> None:
    repo, _ = source
    with Memory.open(repo) as mem, pytest.raises(UsageError):
        import_bundle(mem, export_bytes(repo), strategy="merge")


# damaged bundles -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    ["body text", "body extra field", "envelope time", "envelope digest", "not json", "format"],
)
def test_altered_bundle_is_rejected(
    source: tuple[Path, list[Event]], tmp_path: Path, damage: str
) -> None:
    repo, events = source
    data = export_bytes(repo)
    entries = bundle_lines(data)
    target = next(e for e in entries if e["envelope"]["id"] == events[0].id)
    if damage == "body text":
        altered = data.replace(b'"first note"', b'"first nose"')
    elif damage == "body extra field":
        target["body"]["injected"] = True
        altered = make_bundle(entries)
    elif damage == "envelope time":
        target["envelope"]["time"] += 1
        altered = make_bundle(entries)
    elif damage == "envelope digest":
        digest = target["envelope"]["payload"]["digest"]
        target["envelope"]["payload"]["digest"] = digest[:-1] + ("0" if digest[-1] != "0" else "1")
        altered = make_bundle(entries)
    elif damage == "not json":
        altered = data[:-10]
    else:
        altered = data.replace(b"gitmem-bundle", b"other-bundle!")
    assert altered != data

    dst = init_repo(tmp_path / "dst")
    with pytest.raises(UsageError):
        parse_bundle(altered)
    bundle = tmp_path / "altered.json"
    bundle.write_bytes(altered)
    code, out, err = cli(dst, "import", str(bundle))
    assert code == 2, out + err
    assert "error" in err
    assert "Traceback" not in out + err
    if damage.startswith("body"):
        assert "does not match its envelope" in err and events[0].id[:12] in err
    if damage == "envelope time":
        assert "'id'" in err
    assert edda_refs(dst) == ""


def test_bundle_from_stdin(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, _ = source
    data = export_bytes(repo)
    dst = init_repo(tmp_path / "dst")
    code, _, err = cli(dst, "import", "-", stdin=data)
    assert code == 0, err
    assert export_bytes(dst) == data


# redactions travel ---------------------------------------------------------------------


def test_imported_redaction_removes_the_local_payload(tmp_path: Path) -> None:
    canary = "wombat-canary-3141"
    big = canary + "\n" + "payload line\n" * 800
    src = init_repo(tmp_path / "src")
    with Memory.open(src) as mem:
        small = mem.note(canary)
        large = mem.note(big)
        kept = mem.note("stays")
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        import_bundle(mem, export_bytes(src))
        assert mem.get(small.id).body == {"text": canary}
        assert mem.get(large.id).body == {"text": big}

    with Memory.open(src) as mem:
        mem.redact(small.id, "leak")
        mem.redact(large.id, "leak")
    bundle = tmp_path / "redacted.json"
    bundle.write_bytes(export_bytes(src))
    assert canary.encode() not in bundle.read_bytes()

    code, out, err = cli(dst, "import", str(bundle), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["imported"] == 2  # the two redaction events
    assert result["redactions_applied"] == 2
    paths = payload_files(dst)
    assert layout.payload_path(small.id) not in paths
    assert layout.payload_path(large.id) not in paths
    assert not [p for p in paths if p.startswith("b/")]
    with Memory.open(dst) as mem:
        assert mem.get(small.id).redacted and mem.get(small.id).body is None
        assert mem.get(large.id).redacted
        assert mem.get(kept.id).body == {"text": "stays"}
        assert mem.verify().ok
    assert export_bytes(dst) == bundle.read_bytes()

    code, _, err = cli(dst, "gc")
    assert code == 0, err
    raw = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=dst,
        capture_output=True,
        check=True,
    ).stdout
    assert canary.encode() not in raw
    assert b"stays" in raw


def test_redacted_event_imports_without_payload(
    source: tuple[Path, list[Event]], tmp_path: Path
) -> None:
    repo, events = source
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        import_bundle(mem, export_bytes(repo))
    paths = payload_files(dst)
    assert layout.payload_path(events[3].id) not in paths
    assert layout.payload_path(events[0].id) in paths
    # even a bundle that (wrongly) carries the body of a redacted event does not restore it
    entries = bundle_lines(export_bytes(repo))
    for entry in entries:
        if entry["envelope"]["id"] == events[3].id:
            entry["body"] = {"text": "secret-ish text to redact"}
            entry["redacted"] = False
    other = init_repo(tmp_path / "other")
    with Memory.open(other) as mem:
        import_bundle(mem, make_bundle(entries))
        assert mem.get(events[3].id).redacted
    paths = payload_files(other)
    assert layout.payload_path(events[3].id) not in paths


# parquet -------------------------------------------------------------------------------

PARQUET_COLUMNS = [
    "id",
    "type",
    "time",
    "time_us",
    "branch",
    "commit",
    "session",
    "agent",
    "user",
    "repo",
    "capsule",
    "tags",
    "paths",
    "redacted",
    "summary",
    "body",
    "envelope",
]


def test_parquet_export(source: tuple[Path, list[Event]], tmp_path: Path) -> None:
    repo, events = source
    path = tmp_path / "memory.parquet"
    code, out, err = cli(repo, "export", "--format", "parquet", "--output", str(path))
    assert code == 0, err
    assert "wrote 5 events" in out
    table = pq.read_table(path)
    assert table.num_rows == 5
    assert table.column_names == PARQUET_COLUMNS
    rows = table.to_pylist()
    with Memory.open(repo) as mem:
        expected = mem.events(all_branches=True)
    assert [r["id"] for r in rows] == [e.id for e in expected]
    for row, event in zip(rows, expected, strict=True):
        assert row["type"] == event.type
        assert row["time_us"] == event.time
        assert row["branch"] == event.branch == event.scope.get("branch")
        assert row["commit"] == event.commit
        assert row["tags"] == (event.field("tags") or [])
        assert row["redacted"] == event.redacted
        assert json.loads(row["envelope"]) == event.envelope
        assert (None if row["body"] is None else json.loads(row["body"])) == event.body
        assert row["time"].timestamp() == pytest.approx(event.time / 1e6)
        assert row["user"] == "test@example.com"
    by_id = {r["id"]: r for r in rows}
    assert by_id[events[3].id]["body"] is None
    assert by_id[events[3].id]["summary"] == "[redacted]"
    assert by_id[events[1].id]["branch"] == "b1"


def test_parquet_needs_an_output_file(source: tuple[Path, list[Event]]) -> None:
    repo, _ = source
    code, out, err = cli(repo, "export", "--format", "parquet")
    assert code == 2, out
    assert "--output" in err


def test_unicode_samples_survive_a_round_trip(tmp_path: Path) -> None:
    src = init_repo(tmp_path / "src")
    with Memory.open(src) as mem:
        for sample in UNICODE_SAMPLES:
            mem.append("note", {"text": sample or "-", "tags": [sample]})
    data = export_bytes(src)
    dst = init_repo(tmp_path / "dst")
    with Memory.open(dst) as mem:
        import_bundle(mem, data)
        texts = [e.field("tags") for e in mem.events()]
    assert texts == [[s] for s in UNICODE_SAMPLES]
    assert export_bytes(dst) == data


def test_branch_export_carries_redactions_made_on_other_branches(tmp_path: Path) -> None:
    """A branch's bundle imports even when its redacted event was redacted
    from another branch: the redaction travels with it."""
    repo = init_repo(tmp_path / "src")
    with Memory.open(repo) as mem:
        secret = mem.note("a secret on main")
    git(repo, "switch", "-q", "-c", "feature")
    with Memory.open(repo) as mem:
        mem.redact(secret.id, "leak")  # recorded on feature
    git(repo, "switch", "-q", "main")
    bundle = tmp_path / "main.json"
    code, _, err = cli(repo, "export", "--branch", "main", "--output", str(bundle))
    assert code == 0, err
    dst = init_repo(tmp_path / "dst")
    code, _, err = cli(dst, "import", str(bundle))
    assert code == 0, err
    with Memory.open(dst) as mem:
        assert mem.get(secret.id).redacted


@pytest.mark.parametrize("follow", ["decisions", "all", "none"])
def test_what_a_branch_shows_is_found_from_envelopes_as_events_gives_it(
    tmp_path: Path, follow: str
) -> None:
    """``Memory.visible`` (an import's ``visible`` count) is the ids the
    branch's ``events()`` shows: its own chain, a fork's source for a branch
    without memory yet, and what it follows of the trunk."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.followTrunk", follow)
    with Memory.open(repo) as mem:
        mem.note("on main before the fork")
    git(repo, "switch", "-q", "-c", "feature")
    with Memory.open(repo) as mem:
        mem.note("on feature")
    git(repo, "switch", "-q", "main")
    with Memory.open(repo) as mem:
        mem.note("on main after the fork")
        mem.decide("db", "postgres", reason="on main after the fork")
        everything = {e.id for e in mem.events(all_branches=True)}
    git(repo, "branch", "fresh", "feature")  # no memory of its own yet
    for branch in ("main", "feature", "fresh"):
        git(repo, "switch", "-q", branch)
        with Memory.open(repo) as mem:
            shown = {e.id for e in mem.events()}
        with Memory.open(repo) as mem:
            assert mem.visible(everything) == shown, branch


def test_an_import_reads_no_body_but_its_own_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Import looks up its bundle's events by their envelopes: it read every
    event with its body first (minutes and gigabytes at a million events)."""
    from gitmem.capture.sealer import Draft
    from gitmem.storage.payloads import PayloadStore

    source = scratch_repo(tmp_path / "source")
    with Memory.open(source) as mem:
        mem.append_many([Draft("note", {"text": f"shared {i}"}) for i in range(3)])
        data = export_json(mem.events(all_branches=True))
    target = scratch_repo(tmp_path / "target")
    with Memory.open(target) as mem:
        mem.append_many([Draft("note", {"text": f"local {i}"}) for i in range(100)])
        import_bundle(mem, data)
    bodies: list[str] = []
    body = PayloadStore.body

    def counted(self: PayloadStore, tree: Any, event_id: str, *args: Any, **kw: Any) -> Any:
        bodies.append(event_id)
        return body(self, tree, event_id, *args, **kw)

    monkeypatch.setattr(PayloadStore, "body", counted)
    with Memory.open(target) as mem:
        again = import_bundle(mem, data, strategy="overwrite")
    assert again.imported == 0 and again.skipped == 3 and again.visible == 3
    assert len(bodies) <= 3  # the bundle's own, for --on-conflict overwrite
