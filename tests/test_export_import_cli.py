"""Export and import as a user meets them on the command line: a bundle from
another branch name, importing twice, files that are not bundles, the
bundle on standard output, and the Parquet export's fixed schema."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, cli, cli_process, git, init_repo, make_repo, payload_blob_id

from gitmem.memory.api import Memory
from gitmem.memory.parquet import parquet_schema
from gitmem.records import layout
from gitmem.storage.ledger import Sealed

READS = "import reads JSON bundles written by 'git edda export'"


def ok(repo: Path, *args: str) -> str:
    code, out, err = cli(repo, *args)
    assert code == 0, f"{args}: exit {code}: {err}"
    assert "Traceback" not in out + err
    return out


def ok_json(repo: Path, *args: str) -> Any:
    return json.loads(ok(repo, *args, "--json"))


def events(repo: Path, *args: str) -> list[Any]:
    """``log`` oldest first, as JSON."""
    return ok_json(repo, "log", "--reverse", *args)["events"]


def edda_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/edda/")


def on_master(path: Path) -> Path:
    """A repository whose only branch (and trunk) is master. (Not main
    renamed: gitmem would follow the rename to main's memory.)"""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "master")
    git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    return path


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle exported from a repository on main: a note and a decision."""
    src = init_repo(tmp_path / "src")
    ok(src, "note", "the flaky test is a timezone bug", "--tag", "ci")
    ok(src, "decide", "db.engine", "postgres", "--reason", "mature")
    path = tmp_path / "main.json"
    ok(src, "export", "--output", str(path))
    return path


# a bundle from main in a repository on master -------------------------------------------


def test_import_onto_another_branch_name_says_where_the_events_are(
    bundle: Path, tmp_path: Path
) -> None:
    dst = on_master(tmp_path / "dst")
    out = ok(dst, "import", str(bundle))
    assert "imported 2 events" in out
    assert "master's memory shows none of the bundle's events" in out
    assert "in the memory of branch main" in out
    assert "git edda log --branch main" in out
    assert f"git edda import {bundle} --onto master" in out
    # what the note explains: master's memory is empty, main's has them
    assert events(dst) == []
    assert len(events(dst, "--branch", "main")) == 2
    result = ok_json(dst, "import", str(bundle))
    assert result["branch"] == "master" and result["branches"] == {"main": 2}
    assert result["visible"] == 0 and result["skipped"] == 2


def test_onto_brings_the_events_to_the_branch(bundle: Path, tmp_path: Path) -> None:
    dst = on_master(tmp_path / "dst")
    out = ok(dst, "import", str(bundle), "--onto", "master")
    assert "memory of main into master: created, +2 events" in out
    assert "shows none" not in out
    assert [e["envelope"]["type"] for e in events(dst)] == ["note", "decision"]
    assert "timezone bug" in ok(dst, "search", "timezone", "--mode", "lexical")
    assert "db.engine" in ok(dst, "context")
    # imported again, without --onto: master shows them now, so no note
    out = ok(dst, "import", str(bundle))
    assert "shows none" not in out
    assert ok_json(dst, "import", str(bundle))["visible"] == 2


def test_onto_after_a_plain_import_merges(bundle: Path, tmp_path: Path) -> None:
    """The note's advice works after the fact: every event is already here,
    and --onto still brings them to master."""
    dst = on_master(tmp_path / "dst")
    ok(dst, "import", str(bundle))
    result = ok_json(dst, "import", str(bundle), "--onto", "master")
    assert result["imported"] == 0 and result["visible"] == 2
    assert [m["source"] for m in result["merged"]] == ["main"]
    assert len(events(dst)) == 2


def test_onto_dry_run_writes_nothing(bundle: Path, tmp_path: Path) -> None:
    dst = on_master(tmp_path / "dst")
    out = ok(dst, "import", str(bundle), "--onto", "master", "--dry-run")
    assert "would import 2 events" in out
    assert "would merge the memory of main into master" in out
    assert "shows none" not in out  # it would show them
    assert edda_refs(dst) == ""
    out = ok(dst, "import", str(bundle), "--dry-run")
    assert "master's memory shows none of the bundle's events" in out
    assert edda_refs(dst) == ""


def test_same_branch_name_needs_no_note(bundle: Path, tmp_path: Path) -> None:
    dst = init_repo(tmp_path / "dst")  # on main, like the bundle
    out = ok(dst, "import", str(bundle))
    assert "shows none" not in out
    assert len(events(dst)) == 2


def test_onto_must_be_a_branch_name(bundle: Path, tmp_path: Path) -> None:
    dst = on_master(tmp_path / "dst")
    code, out, err = cli(dst, "import", str(bundle), "--onto", "a..b")
    assert code == 2, out + err
    assert "--onto" in err and "not a branch name" in err
    assert edda_refs(dst) == ""


# importing the same bundle again ---------------------------------------------------------


def test_redactions_count_only_what_they_remove(tmp_path: Path) -> None:
    src = init_repo(tmp_path / "src")
    with Memory.open(src) as mem:
        secret = mem.note("a secret")
        mem.note("kept")
    before = tmp_path / "before.json"
    ok(src, "export", "--output", str(before))
    with Memory.open(src) as mem:
        mem.redact(secret.id, "leak")
    after = tmp_path / "after.json"
    ok(src, "export", "--output", str(after))

    dst = init_repo(tmp_path / "dst")
    ok(dst, "import", str(before))
    dry = ok(dst, "import", str(after), "--dry-run")
    assert f"would redact {secret.id[:12]}" in dry
    assert "1 redaction to apply" in dry
    out = ok(dst, "import", str(after))
    assert f"redacted {secret.id[:12]}" in out
    assert "1 redaction applied" in out
    with Memory.open(dst) as mem:
        assert mem.get(secret.id).redacted
    for _ in range(2):  # the second time, nothing is removed: nothing is reported
        out = ok(dst, "import", str(after))
        assert "0 redactions applied" in out
        assert "redacted " not in out
        dry = ok(dst, "import", str(after), "--dry-run")
        assert "0 redactions to apply" in dry and "would redact" not in dry
    result = ok_json(dst, "import", str(after))
    assert result["redactions_applied"] == 0 and result["redacts"] == []
    # a fresh repository gets the event without its payload: nothing removed here either
    fresh = init_repo(tmp_path / "fresh")
    assert ok_json(fresh, "import", str(after))["redactions_applied"] == 0
    assert ok_json(fresh, "import", str(after))["redactions_applied"] == 0


def test_a_redaction_left_half_done_counts_when_import_completes_it(tmp_path: Path) -> None:
    """A redaction recorded here whose payload a crash left in the store
    (spec/storage.md §13): importing it again removes the payload, and says so."""
    src = init_repo(tmp_path / "src")
    with Memory.open(src) as mem:
        secret = mem.note("a secret")
    before = tmp_path / "before.json"
    ok(src, "export", "--output", str(before))
    with Memory.open(src) as mem:
        mem.redact(secret.id, "leak")
    after = tmp_path / "after.json"
    ok(src, "export", "--output", str(after))
    redaction = next(
        e for e in json.loads(after.read_bytes())["events"] if e["envelope"]["type"] == "redaction"
    )
    dst = init_repo(tmp_path / "dst")
    ok(dst, "import", str(before))
    with Memory.open(dst) as mem:  # the redaction's event lands, its removal does not
        mem.ledger.commit([Sealed(redaction["envelope"], redaction["body"])])
    assert payload_blob_id(dst, layout.payload_path(secret.id))
    result = ok_json(dst, "import", str(after))
    assert result["redacts"] == [secret.id] and result["redactions_applied"] == 1
    assert result["imported"] == 0  # every event was already here
    assert payload_blob_id(dst, layout.payload_path(secret.id)) is None
    assert ok_json(dst, "import", str(after))["redactions_applied"] == 0


# files that are not bundles --------------------------------------------------------------


def _not_bundles(tmp_path: Path, bundle: Path) -> dict[str, tuple[Path, str]]:
    src = bundle.parent / "src"
    parquet = tmp_path / "memory.parquet"
    ok(src, "export", "--format", "parquet", "--output", str(parquet))
    data = bundle.read_bytes()
    files = {
        "parquet": (parquet, "is a Parquet export, which is for analysis"),
        "binary": (os.urandom(4096), "is binary data"),
        "nul": (b'{"format": "gitmem-bundle"\x00}', "is binary data"),
        "truncated": (data[: len(data) // 2], "ends in the middle of the document"),
        "broken": (b'{"format": "gitmem-bundle",, }', "is not valid JSON"),
        "array": (b"[1, 2, 3]", "is a JSON array, not a gitmem bundle"),
        "object": (b'{"events": []}', 'is a JSON object without "format"'),
        "other format": (b'{"format": "other"}', "\"format\" 'other'"),
        "empty": (b"\n", "is empty"),
        "gzip": (gzip.compress(data), "is gzip-compressed"),
    }
    out: dict[str, tuple[Path, str]] = {}
    for name, (content, says) in files.items():
        if isinstance(content, Path):
            out[name] = (content, says)
            continue
        path = tmp_path / f"{name.replace(' ', '-')}.input"
        path.write_bytes(content)
        out[name] = (path, says)
    return out


NOT_BUNDLES = [
    "parquet",
    "binary",
    "nul",
    "truncated",
    "broken",
    "array",
    "object",
    "other format",
    "empty",
    "gzip",
]


@pytest.mark.parametrize("kind", NOT_BUNDLES)
def test_a_file_that_is_not_a_bundle_is_one_usage_error(
    bundle: Path, tmp_path: Path, kind: str
) -> None:
    path, says = _not_bundles(tmp_path, bundle)[kind]
    dst = init_repo(tmp_path / "dst")
    code, out, err = cli(dst, "import", str(path))
    assert code == 2, out + err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"git edda: error: {path} ")
    assert says in err
    if kind not in ("truncated",):
        assert READS in err or "pass a file written by 'git edda export'" in err
    assert "Traceback" not in err and "codec" not in err
    assert edda_refs(dst) == ""
    # from standard input, named so
    code, _, err = cli(dst, "import", "-", stdin=path.read_bytes())
    assert code == 2 and err.startswith("git edda: error: standard input ")


def test_parquet_import_in_a_real_process(bundle: Path, tmp_path: Path) -> None:
    path, _ = _not_bundles(tmp_path, bundle)["parquet"]
    dst = init_repo(tmp_path / "dst")
    code, out, err = cli_process(dst, "import", str(path), "--json")
    assert code == 2, err
    assert json.loads(out)["error"]["code"] == 2
    assert err == (
        f"git edda: error: {path} is a Parquet export, which is for analysis; {READS}"
        " (hint: write a bundle instead: git edda export --output FILE)\n"
    )


# the bundle on standard output -----------------------------------------------------------


def test_export_json_to_stdout_is_the_bundle_alone(bundle: Path) -> None:
    src = bundle.parent / "src"
    for args in (("export", "--json"), ("--json", "export"), ("export",)):
        code, out, err = cli(src, *args)
        assert code == 0, err
        assert out.encode() == bundle.read_bytes()
        assert json.loads(out)["format"] == "gitmem-bundle"
    # with --output, --json describes what was written
    written = ok_json(src, "export", "--output", str(bundle.parent / "again.json"))
    assert written == {"events": 2, "output": str(bundle.parent / "again.json")}


def test_export_json_pipes_into_a_json_parser(bundle: Path) -> None:
    src = bundle.parent / "src"
    edda = f"{sys.executable} -m gitmem.cli.main"
    parse = f"{sys.executable} -c 'import json,sys; print(len(json.load(sys.stdin)[\"events\"]))'"
    proc = subprocess.run(
        f"set -o pipefail; {edda} export --json | {parse}",
        shell=True,
        executable="/bin/bash",
        cwd=src,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2\n"


@pytest.mark.parametrize("json_flag", [False, True])
def test_export_into_a_closed_pipe_is_quiet_and_fails(tmp_path: Path, json_flag: bool) -> None:
    """Like git: a reader that stops early (| head) ends the export quietly,
    with a non-zero status, not with a traceback or a success."""
    repo = make_repo(tmp_path / "repo", events=600)  # a bundle far larger than a pipe
    args = ["export", *(["--json"] if json_flag else [])]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{"format":'
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert err == b""
    assert not (repo / ".git" / "edda" / "log" / "cli.log").exists()  # no internal error


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_export_to_a_full_disk_is_an_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=2)
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "gitmem.cli.main", "export", "-C", str(repo)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert proc.returncode == 2
    assert "cannot write the bundle to standard output: No space left on device" in proc.stderr


# the Parquet export's fixed schema -------------------------------------------------------


def export_parquet(repo: Path, path: Path) -> pa.Table:
    ok(repo, "export", "--format", "parquet", "--output", str(path))
    return pq.read_table(path)


def test_parquet_schema_does_not_depend_on_the_data(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "bare")  # notes without tags, sessions or capsules
    with Memory.open(bare) as mem:
        mem.note("plain")
    full = init_repo(tmp_path / "full")
    with Memory.open(full) as mem:
        capsule = mem.open_capsule("session", "work", session="s-1", agent="claude")
        mem.note("tagged", tags=["a"], paths=["src/x.py"], session="s-1", capsule=capsule.id)
    empty = init_repo(tmp_path / "empty")
    expected = parquet_schema()
    tables = [export_parquet(r, tmp_path / f"{r.name}.parquet") for r in (bare, full, empty)]
    for table in tables:
        assert table.schema.equals(expected, check_metadata=True), table.schema
    assert tables[2].num_rows == 0
    plain = tables[0].to_pylist()[0]
    assert plain["session"] is None and plain["capsule"] is None
    assert plain["tags"] == [] and plain["paths"] == []
    assert tables[0].schema.field("session").type == pa.string()
    assert tables[0].schema.field("tags").type == pa.list_(pa.field("element", pa.string()))
    assert expected.metadata == {
        b"gitmem.format": b"gitmem-export-parquet",
        b"gitmem.version": b"1",
    }


def test_parquet_columns_hold_the_values(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        capsule = mem.open_capsule("session", "work", session="s-1", agent="claude")
        note = mem.note(
            "tagged", tags=["db", "ci"], paths=["src/x.py"], session="s-1", capsule=capsule.id
        )
        seen = mem.append(
            "observation",
            {"kind": "file_diff", "files": ["a.py", "b.py"]},
            branch="feature",
        )
        secret = mem.note("a secret", tags=["s"], paths=["p"])
        mem.redact(secret.id, "leak")
        events = {e.id: e for e in mem.events(all_branches=True)}
    rows = {r["id"]: r for r in export_parquet(repo, tmp_path / "m.parquet").to_pylist()}
    assert set(rows) == set(events)
    row = rows[note.id]
    assert row["tags"] == ["db", "ci"] and row["paths"] == ["src/x.py"]
    assert row["session"] == "s-1" and row["capsule"] == capsule.id
    assert row["agent"] is None and row["user"] == "test@example.com"
    assert row["repo"] == events[note.id].scope["repo"]
    assert row["branch"] == "main" and row["commit"] == events[note.id].commit
    assert row["time_us"] == note.time
    assert row["time"].timestamp() == pytest.approx(note.time / 1e6)
    assert json.loads(row["body"]) == events[note.id].body
    assert json.loads(row["envelope"]) == events[note.id].envelope
    assert rows[capsule.id]["agent"] == "claude"
    assert rows[seen.id]["paths"] == ["a.py", "b.py"] and rows[seen.id]["branch"] == "feature"
    hidden = rows[secret.id]
    assert hidden["redacted"] is True and hidden["body"] is None
    assert hidden["tags"] == [] and hidden["paths"] == []
    assert hidden["summary"] == "[redacted]"


def test_formats_documents_the_parquet_columns(tmp_path: Path) -> None:
    """formats/export-parquet.v1.json lists exactly the columns a file has
    (test_formats checks the file against the generator)."""
    doc = json.loads((ROOT / "formats" / "export-parquet.v1.json").read_text())
    repo = make_repo(tmp_path / "repo", events=1)
    schema = export_parquet(repo, tmp_path / "m.parquet").schema
    assert [(c["name"], c["type"], c["nullable"]) for c in doc["columns"]] == [
        (f.name, str(f.type), f.nullable) for f in schema
    ]
    assert all(c["description"] for c in doc["columns"])
    assert doc["version"] == int(schema.metadata[b"gitmem.version"])
