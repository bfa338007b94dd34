"""The validation rules themselves: they agree with git, with the msgspec
Structs, and keep the clock and the hook path bounded."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import capture_process, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.capture.main import capture
from gitmem.capture.prepare import TRUNCATION_MARKER
from gitmem.records.types import BODY_TYPES
from gitmem.records.validate import INT_MAX, INT_MIN, body_problems, branch_problem
from gitmem.storage import clock

NAMES = [
    "main", "feature/x", "a.b", "x@y", "a%b", "ünï", "release-1.2", "a/b/c", "a_b", "A", "1",
    "a..b", "a b", "a:b", "a~1", "x@{1}", "end.", "a*", "a\\b", "foo.lock", ".hidden", "..",
    "-x", "/a", "a/", "a//b", "a\tb", "a?b", "a[b", "a^b", "a/.b", "a/b.lock", "\x7f",
    "a.lock/b", "a@{b", "a/./b", "a.", ".", "a]b", "a{b", "a}b", "a'b", 'a"b', "a#b",
    "a!b", "é/ü", "x/y.z", "lock", ".lock", "a..", "@{", "a@",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_branch_rules_agree_with_git(name: str, tmp_path: Path) -> None:
    # ("@" alone is left out: outside the ref rules, --branch expands it to HEAD's branch.)
    proc = subprocess.run(
        ["git", "check-ref-format", "--branch", name], capture_output=True, cwd=tmp_path
    )
    git_ok = proc.returncode == 0
    assert (branch_problem(name) is None) == git_ok, (name, branch_problem(name))


# Values of every JSON kind, integers within what any reader takes.
scalars = st.none() | st.booleans() | st.integers(INT_MIN, INT_MAX) | st.text(max_size=5)
values = st.recursive(
    scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=6,
)


def _bodies(event_type: str) -> st.SearchStrategy[dict[str, Any]]:
    fields = sorted(BODY_TYPES[event_type].__struct_fields__)
    plausible = {
        "kind": st.sampled_from(["tool_call", "session", "command", "x"]),
        "rejected": st.lists(
            st.fixed_dictionaries({"idea": values}, optional={"reason": values}), max_size=2
        ),
        "map": st.lists(st.lists(values, max_size=2), max_size=2),
    }
    return st.fixed_dictionaries(
        {}, optional={f: st.one_of(values, plausible.get(f, values)) for f in fields}
    )


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(BODY_TYPES)).flatmap(lambda t: st.tuples(st.just(t), _bodies(t))))
def test_body_rules_agree_with_the_structs(case: tuple[str, dict[str, Any]]) -> None:
    """The stdlib table the hot path checks with accepts exactly what msgspec
    accepts (so formats/, generated from the Structs, describes it too)."""
    event_type, body = case
    try:
        msgspec.convert(body, BODY_TYPES[event_type])
        struct_ok = True
    except msgspec.ValidationError:
        struct_ok = False
    assert (body_problems(event_type, body) == []) == struct_ok, (event_type, body)


def test_far_future_clock_file_is_not_followed(tmp_path: Path) -> None:
    state = tmp_path / "edda"
    state.mkdir()
    (state / clock.CLOCK_FILE).write_text(f"{1_900_000_000_000_000:020d}\n")  # 2030
    first = clock.tick(state)
    assert abs(first - clock.wall_us()) < 60_000_000
    # a received event cannot drag it past the allowed skew either
    clock.observe(state, 10**19)
    later = clock.tick(state)
    assert later <= clock.wall_us() + clock.DEFAULT_SKEW_US


def test_far_future_clock_file_does_not_date_new_notes(repo: Path) -> None:
    (repo / ".git" / "edda").mkdir(exist_ok=True)
    (repo / ".git" / "edda" / "clock").write_text(f"{1_900_000_000_000_000:020d}\n")
    code, _, err = run_cli(repo, "note", "written now")
    assert code == 0, err
    code, out, _ = run_cli(repo, "log", "--json")
    newest = max(e["envelope"]["time"] for e in json.loads(out)["events"])
    assert newest < clock.wall_us() + 60_000_000


def test_secret_in_gitmem_session_is_masked(repo: Path) -> None:
    token = "ghp_" + "Zq9" * 12
    env = {
        **os.environ,
        "GITMEM_SESSION": f"sess-{token}",
        "GITMEM_AGENT": f"xoxb-{'1' * 12}-{'2' * 12}-{'a' * 24}",
    }
    proc = capture_process(repo, b'{"type": "note", "body": {"text": "x"}}', env=env)
    assert proc.returncode == 0, proc.stderr
    _, out, _ = run_cli(repo, "export")
    assert token not in out and "xoxb-1" not in out
    assert "[REDACTED:" in out


def test_a_huge_field_costs_little_and_is_truncated_with_the_marker(repo: Path) -> None:
    text = ("word " * 1_400_000)[:7_000_000]
    started = time.monotonic()
    (event_id,) = capture(json.dumps({"type": "note", "body": {"text": text}}), str(repo))
    took = time.monotonic() - started
    assert took < 5, took  # a 50 MB line took 64 s before the scrub window
    code, out, _ = run_cli(repo, "show", event_id[:12], "--json")
    stored = json.loads(out)["body"]["text"] if code == 0 else ""
    assert len(stored.encode()) < 256 * 1024 + 100
    marker = TRUNCATION_MARKER.split("{")[0]
    assert marker in stored
    removed = int(stored.rsplit("truncated ", 1)[1].split()[0])
    assert removed == len(text.encode()) - len(stored.split(marker)[0].encode())


ENVELOPE_CHANGES = [
    {},
    {"v": 0},
    {"id": "A" * 32},
    {"type": "Note"},
    {"type": "a" * 65},
    {"time": 5},
    {"time": 10**18},
    {"capsule": "zz"},
    {"capsule": "0" * 32},
    {"payload": {"digest": "sha256:00", "salt": "ab" * 16, "size": 1}},
    {"payload": {"digest": "sha256:" + "0" * 64, "salt": "AB" * 16, "size": 1}},
    {"payload": {"digest": "sha256:" + "0" * 64, "salt": "ab" * 16, "size": 2**30}},
    {"scope": {"session": "a\nb"}},
    {"scope": {"session": "s" * 300}},
    {"scope": {"agent": "ok"}},
]


@pytest.mark.parametrize("change", ENVELOPE_CHANGES, ids=str)
def test_envelope_schema_agrees_with_the_hot_path_rules(change: dict[str, Any]) -> None:
    """formats/envelope.v1.schema.json (from the Struct) and validate.py agree
    on every rule a schema can express (the id is re-derived so only the
    change itself can be wrong)."""
    from gitmem.records import canonical
    from gitmem.records.types import Envelope
    from gitmem.records.validate import envelope_problems
    from gitmem.storage.envelope import seal

    env, _ = seal("note", {"text": "x"}, scope={"branch": "main"}, time_us=clock.wall_us())
    env.update(change)
    env.pop("id")
    env["id"] = change.get("id") or canonical.event_id(env)
    try:
        msgspec.convert(env, Envelope)
        schema_ok = True
    except msgspec.ValidationError:
        schema_ok = False
    rules_ok = not [p for p in envelope_problems(env) if "does not match" not in p]
    assert schema_ok == rules_ok, (change, envelope_problems(env))
