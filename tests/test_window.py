"""The two branch windows agree: :class:`ListWindow` (the store, plain lists)
and :class:`IndexWindow` (the index) give the same answer to every
:class:`~gitmem.memory.window.BranchWindow` method.

Context packs and ``ask`` read every source through its window, so this is
what makes a pack the same whether it was built from the store or the index.
Each example writes a small random store through ``Memory`` (several event
types, scope sessions and none, session capsules without a session, paths,
pins of hidden events, closes naming a redacted event, commit links naming a
session, redactions, events on a second branch), then asks both windows the
same questions for the current branch, the other branch and all branches.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import git, init_repo
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gitmem.capture.sealer import Draft
from gitmem.index.view import IndexView
from gitmem.index.window import IndexWindow
from gitmem.memory.api import Memory
from gitmem.memory.event import Event
from gitmem.memory.listwindow import ListSource, ListWindow
from gitmem.memory.window import BranchWindow, SessionWindow

HOUR = 3_600_000_000
T0 = 1_709_251_200_000_000  # 2024-03-01T00:00Z
TYPES = (
    "note",
    "decision",
    "ratify",
    "learning",
    "mistake",
    "checkpoint",
    "capsule_open",
    "capsule_close",
    "pin",
    "unpin",
    "commit_link",
    "redaction",
)
SESSIONS = (None, "", "s0", "s1", "s2")
PATHS = ((), ("src/",), ("src/a.py",), ("docs/x.md",), ("*.py",))

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "note",
                "note",
                "decide",
                "ratify",
                "learn",
                "checkpoint",
                "capsule",
                "close",
                "in_capsule",
                "pin",
                "unpin",
                "link",
                "redact",
                "elsewhere",
            ]
        ),
        st.integers(0, 7),
        st.sampled_from(SESSIONS),
        st.integers(0, 30),  # hours since the previous event
    ),
    min_size=1,
    max_size=30,
)


@contextmanager
def random_store(ops: list[tuple[str, int, str | None, int]]) -> Iterator[Path]:
    """A repository whose memory the ops wrote (branch ``b1`` forked from main)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        init_repo(repo)
        git(repo, "config", "edda.fsync", "false")
        git(repo, "branch", "b1")
        with Memory.open(repo) as mem:
            written: list[Event] = []
            opened: list[Event] = []
            time = T0
            for op, n, session, gap in ops:
                time += gap * HOUR + 1

                def put(
                    kind: str,
                    body: dict[str, Any],
                    session: str | None = session,
                    time: int = time,
                    **more: Any,
                ) -> Event:
                    event = mem.append_many([Draft(kind, body, session, time=time, **more)])[0]
                    written.append(event)
                    return event

                paths = ["src/a.py", "src/b/c.py", "docs/"][: n % 4]
                if op == "note":
                    put("note", {"text": f"note {n}", "paths": paths})
                elif op == "decide":
                    put(
                        "decision",
                        {"key": f"k{n % 3}", "value": f"v{n}", "paths": paths},
                        agent="claude" if n % 2 else None,
                    )
                elif op == "ratify" and any(w.type == "decision" for w in written):
                    decisions = [w for w in written if w.type == "decision"]
                    put("ratify", {"target": decisions[n % len(decisions)].id})
                elif op == "learn":
                    put(["learning", "mistake"][n % 2], {"text": f"lesson {n}", "paths": paths})
                elif op == "checkpoint":
                    put("checkpoint", {"summary": f"checkpoint {n}"})
                elif op == "capsule":
                    kind = ["session", "workflow"][n % 2]
                    opened.append(put("capsule_open", {"kind": kind, "intent": f"goal {n}"}))
                elif op == "close" and opened:
                    capsule = opened[n % len(opened)]
                    body: dict[str, Any] = {"capsule": capsule.id, "summary": f"done {n}"}
                    if written and n % 2:  # a close naming an event (maybe one redacted later)
                        body["target"] = written[n % len(written)].id
                    put("capsule_close", body, capsule=capsule.id)
                elif op == "in_capsule" and opened:
                    put("note", {"text": f"inside {n}"}, capsule=opened[n % len(opened)].id)
                elif op in ("pin", "unpin") and written:
                    target = written[n % len(written)]
                    name = target.id
                    if op == "pin" and target.type == "capsule_open" and n % 2:
                        name = "summary:" + target.id
                    put(op, {"target": name})
                elif op == "link":
                    put("commit_link", {"sha": f"{n:040x}", "session": f"s{n % 3}"})
                elif op == "redact" and written:
                    target = written[n % len(written)]
                    if target.type != "redaction" and not mem.get(target.id).redacted:
                        mem.redact(target.id, "test", time=time)
                elif op == "elsewhere":
                    put("note", {"text": f"on b1 {n}", "paths": paths}, branch="b1")
        yield repo


def shape(events: list[Event]) -> list[tuple[str, Any, bool]]:
    """What both windows must agree on for an event (where it was read from may differ)."""
    return [(e.id, e.body, e.redacted) for e in events]


def session_shape(found: SessionWindow) -> Any:
    return (
        [(s.key, s.count, s.first, s.last, shape(list(s.tail))) for s in found.recent],
        found.older,
    )


def answers(window: BranchWindow, ids: list[str]) -> dict[str, Any]:
    """Every window method, asked a spread of questions."""
    out: dict[str, Any] = {}
    for types in ((), ("note",), ("pin", "unpin", "capsule_open", "capsule_close"), TYPES):
        out[f"of_types{types}"] = shape(window.of_types(types))
    for kind in ("checkpoint", "decision", "note"):
        for count in (0, 1, 3):
            out[f"newest{kind}{count}"] = shape(window.newest(kind, count))
    for chosen in ([], ids[::3], [*ids, "f" * 32]):
        out[f"by_ids{chosen}"] = shape(window.by_ids(chosen))
    for paths in PATHS:
        for types in (("learning", "mistake"), ("note", "decision")):
            out[f"touching{types}{paths}"] = shape(window.touching(types, paths))
    capsules = ids[::2]
    for sessions in ((), ("s0",), ("s1", "s2")):
        for paths in PATHS[:3]:
            out[f"related{sessions}{paths}"] = shape(
                window.related(
                    ("commit_link", "note", "checkpoint"),
                    capsules=capsules if sessions else (),
                    sessions=sessions,
                    paths=paths,
                )
            )
    out["hidden"] = window.hidden()
    out["decisions"] = window.decisions()
    out["capsule_counts"] = window.capsule_counts()
    for chosen in ([], ids[::2], [*ids[:3], "nope"]):
        out[f"capsule_counts{chosen}"] = window.capsule_counts(chosen)
    for recent in (0, 1, 4):
        for session in (None, "s0", "s2", "nope"):
            for tail in (0, 2, 20):
                out[f"sessions{recent}{session}{tail}"] = session_shape(
                    window.sessions(recent, session, tail)
                )
    out["everything"] = shape(window.everything())
    return out


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
@example(  # every feature at once: a close and a pin naming redacted events, and so on
    ops=[
        ("capsule", 0, None, 0),  # a session capsule without a scope session
        ("in_capsule", 0, None, 1),
        ("note", 1, "s0", 1),
        ("close", 1, "s0", 1),  # names the note in the capsule
        ("pin", 2, "s1", 2),  # pins the s0 note
        ("link", 1, None, 3),  # names session s1 in its body only
        ("decide", 1, "s2", 1),
        ("ratify", 0, "s2", 1),
        ("redact", 1, None, 5),  # the note the close names
        ("redact", 2, None, 5),  # the pinned note
        ("learn", 3, "", 30),
        ("checkpoint", 0, None, 30),
        ("elsewhere", 2, "s1", 1),
    ]
)
def test_list_and_index_windows_agree(ops: list[tuple[str, int, str | None, int]]) -> None:
    with (
        random_store(ops) as repo,
        Memory.open(repo) as mem,
        IndexView.open(repo, embed=False) as view,
    ):
        ids = [e.id for e in mem.events(all_branches=True)]
        for kw in ({}, {"branch": "b1"}, {"all_branches": True}, {"trunk": "all"}):
            listed, indexed = mem.window(kw), view.window(kw)
            assert isinstance(listed, ListWindow) and isinstance(indexed, IndexWindow)
            expected, got = answers(listed, ids), answers(indexed, ids)
            for question, answer in expected.items():
                assert got[question] == answer, (kw, question)


def test_a_list_source_windows_its_events() -> None:
    """A plain list of events (no repository) has a window too."""
    envelope = {"id": "a" * 32, "type": "note", "time": T0, "scope": {"session": "s"}}
    note = Event(envelope, {"text": "hello"}, "refs/edda/branches/main", "0" * 40)
    window = ListSource([note]).window({})
    assert window.everything() == [note]
    found = window.sessions(1, None, 5)
    assert [(s.key, s.count) for s in found.recent] == [("s:s", 1)] and found.older is None
