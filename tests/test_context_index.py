"""Context packs and ``ask`` read through the index give what ``Memory`` gives.

Both are read through their window (:mod:`gitmem.memory.window`): through
the index, context packs and ``ask`` read only the events they need (pins,
capsules, the decision ledger and the decisions shown, the newest
checkpoint, learnings about the files in play, the tail of the recent
sessions, related events) and take counts from Arrow; ``Memory`` reads the
branch whole into a :class:`~gitmem.memory.listwindow.ListWindow`. Every test
here builds a real repository, writes through ``Memory``, and checks that the
pack (its tiers, ids, drops, markdown and JSON) and ``ask``'s answers are the
same both ways (``tests/test_window.py`` compares the windows method by method).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import git, scratch_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.capture.sealer import Draft
from gitmem.index.view import IndexView
from gitmem.memory.api import Memory
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.retrieval.ask import AskResult, ask
from gitmem.retrieval.context import ContextPack, build_context
from gitmem.retrieval.source import term_search
from gitmem.storage.clock import wall_us

DAY = 86_400_000_000
HOUR = 3_600_000_000
T0 = 1_709_251_200_000_000  # 2024-03-01T00:00Z
CANARY = "okapi-canary-77c1"


def open_view(repo: Path) -> IndexView:
    return IndexView.open(repo, embed=False)


class Reads:
    """Records the ``events`` calls made on a view (the window should make none)."""

    def __init__(self, view: IndexView) -> None:
        self.calls: list[EventFilter | None] = []
        original = view.events

        def events(where: EventFilter | None = None, **kw: Any) -> list[Event]:
            self.calls.append(where)
            return original(where, **kw)

        view.events = events  # type: ignore[method-assign]

    @property
    def whole(self) -> int:
        """Reads of a whole branch."""
        return sum(1 for where in self.calls if where is None)


def assert_same_pack(expected: ContextPack, got: ContextPack) -> None:
    for want, have in zip(expected.tiers, got.tiers, strict=True):
        assert [i.id for i in have.items] == [i.id for i in want.items], want.name
        assert have.dropped == want.dropped, want.name
    assert got.to_markdown() == expected.to_markdown()
    assert got.to_json() == expected.to_json()


def packs(repo: Path, view: IndexView | None = None, **kw: Any) -> tuple[ContextPack, ContextPack]:
    """The pack through ``Memory`` and through the index, with the same arguments."""
    kw.setdefault("now", wall_us())
    with Memory.open(repo) as mem:
        expected = build_context(mem, **kw)
    if view is not None:
        return expected, build_context(view, **kw)
    with open_view(repo) as fresh:
        return expected, build_context(fresh, **kw)


def same_pack(repo: Path, view: IndexView | None = None, **kw: Any) -> ContextPack:
    expected, got = packs(repo, view, **kw)
    assert_same_pack(expected, got)
    return got


def same_answer(
    repo: Path, query: str | None, view: IndexView | None = None, **kw: Any
) -> AskResult:
    with Memory.open(repo) as mem:
        expected = ask(mem, query, **kw)
    if view is not None:
        got = ask(view, query, **kw)
    else:
        with open_view(repo) as fresh:
            got = ask(fresh, query, **kw)
    assert got.to_json() == expected.to_json()
    assert got.to_markdown() == expected.to_markdown()
    return got


def shared_search(repo: Path) -> Any:
    """A search function both sources can share: term matching over every event."""
    with Memory.open(repo) as mem:
        everything = mem.events(EventFilter(include_redacted=False), all_branches=True)

    def search(query: str, limit: int, types: Sequence[str]) -> list[Event]:
        return term_search(everything, query, limit, types)

    return search


def rich_store_in_sessions(repo: Path) -> dict[str, Event]:
    """Something for every tier, every event in a scope session; returns the notable ones."""
    with Memory.open(repo) as mem:
        e: dict[str, Event] = {}
        for i in range(7):
            capsule = mem.open_capsule("session", f"old session {i}", session=f"old{i}")
            mem.note(f"old note {i} about parsing", session=f"old{i}", capsule=capsule.id)
            mem.close_capsule(capsule.id, f"finished part {i}", session=f"old{i}")
        e["human"] = mem.decide("storage.backend", "git refs", reason="branch-aware", session="a")
        e["old_proposal"] = mem.decide("api.style", "rpc", agent="claude", session="a")
        e["proposal"] = mem.decide(
            "api.style", "rest", reason="simple clients", agent="claude", session="now"
        )
        e["ratified"] = mem.decide("index.engine", "tantivy", agent="claude", session="now")
        e["ratify"] = mem.ratify(e["ratified"].id, note="ok", session="now")
        e["capsule"] = mem.open_capsule("session", "write context packs", session="now")
        e["workflow"] = mem.open_capsule("workflow", "ship retrieval", session="now")
        e["mistake"] = mem.learn(
            "mistake", "forgot the trailer", paths=["gitmem/retrieval/"], session="now"
        )
        e["learning"] = mem.learn(
            "learning",
            "ceil(chars/4) estimates tokens",
            paths=["gitmem/retrieval/context.py"],
            session="a",
        )
        e["other_learning"] = mem.learn(
            "pattern", "hooks must be fast", paths=["gitmem/capture/"], session="a"
        )
        e["old_checkpoint"] = mem.checkpoint(summary="started", session="now")
        e["checkpoint"] = mem.checkpoint(
            summary="tiers written",
            next="write the tests",
            hypotheses=["greedy fill is enough"],
            rejected=[("tiktoken", "a dependency")],
            open_questions=["how many history lines?"],
            session="now",
            capsule=e["capsule"].id,
        )
        e["hit"] = mem.note("the parser chokes on tabs", session="now")
        e["pinned"] = mem.note("always run ruff format", session="now")
        e["pin"] = mem.pin(e["pinned"].id, reason="team rule", session="now")
        e["commit"] = mem.link_commit("a" * 40, message="context packs", session="now")
    return e


# context packs --------------------------------------------------------------------------


def test_every_tier_matches_and_the_branch_is_not_read_whole(store: Path) -> None:
    e = rich_store_in_sessions(store)
    with open_view(store) as view:
        reads = Reads(view)
        pack = same_pack(
            store,
            view,
            query="parser parsing",
            paths=["gitmem/retrieval/context.py"],
            session="now",
            budget=20_000,
            search=shared_search(store),
        )
        assert reads.whole == 0
        assert [i.id for i in pack.tier("pins").items] == [e["pinned"].id]
        assert [i.id for i in pack.tier("work").items] == [e["checkpoint"].id, e["workflow"].id]
        assert [i.id for i in pack.tier("binding").items] == [e["ratified"].id, e["human"].id]
        assert [i.id for i in pack.tier("learnings").items] == [e["mistake"].id, e["learning"].id]
        assert pack.tier("hits").items and pack.tier("history").items
        history = [i.text for i in pack.tier("history").items]
        assert history[0].startswith("- 6 older sessions, 18 events, ")


def test_packs_match_without_a_search_function(store: Path) -> None:
    rich_store_in_sessions(store)
    with open_view(store) as view:
        reads = Reads(view)
        for query in (None, "parser", "api style"):
            same_pack(store, view, query=query, paths=["gitmem/"], budget=3000)
        assert reads.whole == 2  # term matching, the fallback, reads everything


@pytest.mark.parametrize("budget", [30, 60, 120, 250, 400, 700, 1200, 5000])
def test_budget_limits_match(store: Path, budget: int) -> None:
    rich_store_in_sessions(store)
    now = wall_us()
    for session in (None, "now", "old2"):
        pack = same_pack(
            store,
            query="parser",
            paths=["gitmem/retrieval/"],
            session=session,
            budget=budget,
            now=now,
            search=shared_search(store),
        )
        assert pack.used <= budget


def test_history_aggregates_sessions_the_same(store: Path) -> None:
    with Memory.open(store) as mem:
        drafts = []
        for s in range(9):
            start = T0 + s * DAY
            drafts.append(
                Draft(
                    "capsule_open", {"kind": "session", "intent": f"goal {s}"}, f"s{s}", time=start
                )
            )
            for i in range(3 if s != 7 else 30):
                drafts.append(
                    Draft("note", {"text": f"s{s} step {i}"}, f"s{s}", time=start + 1000 + i)
                )
        mem.append_many(drafts)
    now = T0 + 20 * DAY
    with open_view(store) as view:
        pack = same_pack(store, view, now=now)
        lines = [item.text for item in pack.tier("history").items]
        assert lines[0] == "- 5 older sessions, 20 events, 2024-03-01 to 2024-03-05"
        assert "last: session s8" in lines[4] and len(lines) == 5 + 4
        # the session being worked on is old: it is shown in detail, the four
        # newest others are "previous" and the rest aggregated
        pack = same_pack(store, view, now=now, session="s2")
        lines = [item.text for item in pack.tier("history").items]
        assert lines[0] == "- 5 older sessions, 20 events, 2024-03-01 to 2024-03-06"
        assert "last: session s2, 2024-03-03T00:00Z, 4 events: goal 2" in lines[4]
        # an unknown session falls back to the newest; a session with > 20 events is capped
        same_pack(store, view, now=now, session="nope")
        pack = same_pack(store, view, now=now, session="s7")
        assert len([i for i in pack.tier("history").items if i.text.startswith("  - ")]) == 20
        for budget in (80, 150, 300):
            same_pack(store, view, now=now, session="s7", budget=budget)


def test_sessions_without_scope_follow_capsules_and_days(store: Path) -> None:
    """Events with no scope session: a session capsule's events are its session,
    the rest are grouped by UTC day (the index computes the same keys)."""
    with Memory.open(store) as mem:
        opened = mem.append_many(
            [Draft("capsule_open", {"kind": "session", "intent": "no scope"}, time=T0)]
        )[0]
        scoped = mem.append_many(
            [Draft("capsule_open", {"kind": "workflow", "intent": "scoped"}, "w1", time=T0 + 5)]
        )[0]
        drafts = [
            Draft("note", {"text": f"in capsule {i}"}, capsule=opened.id, time=T0 + 10 + i)
            for i in range(3)
        ]
        drafts += [
            Draft("note", {"text": f"in scoped {i}"}, capsule=scoped.id, time=T0 + 20 + i)
            for i in range(2)
        ]
        drafts += [
            Draft("note", {"text": f"loose {d}.{i}"}, time=T0 + d * DAY + i * HOUR)
            for d in range(1, 8)
            for i in range(2)
        ]
        drafts.append(Draft("note", {"text": "empty session"}, "", time=T0 + 9 * DAY))
        mem.append_many(drafts)
    with open_view(store) as view:
        now = T0 + 30 * DAY
        pack = same_pack(store, view, now=now)
        text = pack.to_markdown()
        assert "events without a session on 2024-03-10" in text
        same_pack(store, view, now=now, session="w1")
        with Memory.open(store) as mem:  # the session capsule becomes the newest session
            mem.append_many(
                [Draft("note", {"text": "late"}, capsule=opened.id, time=T0 + 12 * DAY)]
            )
        pack = same_pack(store, now=now)
        intro = next(i.text for i in pack.tier("history").items if "last: " in i.text)
        assert (
            f"last: session capsule [{opened.id[:12]}]" in intro and "5 events: no scope" in intro
        )


def test_pins_expiry_unpin_and_summary_pins_match(store: Path) -> None:
    with Memory.open(store) as mem:
        keep = mem.note("keep me pinned", session="p")
        expiring = mem.note("pinned for a while", session="p")
        dropped = mem.note("pinned then unpinned", session="p")
        capsule = mem.open_capsule("workflow", "migrate the index", session="p")
        mem.close_capsule(capsule.id, "index v2 rolled out", session="p")
        still_open = mem.open_capsule("workflow", "not done", session="p")
        now = wall_us()
        mem.pin(keep.id, session="p")
        mem.pin(expiring.id, reason="until the release", expires=now + DAY, session="p")
        mem.pin(dropped.id, session="p")
        mem.unpin(dropped.id, session="p")
        mem.pin(f"summary:{capsule.id}", session="p")
        mem.pin(f"summary:{still_open.id}", session="p")
    with open_view(store) as view:
        before = same_pack(store, view, now=now)
        assert [i.id for i in before.tier("pins").items] == [
            still_open.id,
            capsule.id,
            expiring.id,
            keep.id,
        ]
        after = same_pack(store, view, now=now + DAY)
        assert expiring.id not in [i.id for i in after.tier("pins").items]


def test_pins_of_events_on_another_branch(store: Path) -> None:
    git(store, "branch", "b1")
    with Memory.open(store) as mem:
        (elsewhere,) = mem.append_many([Draft("note", {"text": "on b1 only"}, "x", branch="b1")])
        mem.pin(elsewhere.id, session="x")
        mem.note("on main", session="x")
        on_main = mem.decide("db.engine", "postgres", session="x")
    with open_view(store) as view:
        pack = same_pack(store, view, query="only main b1")
        assert [i.id for i in pack.tier("pins").items] == [elsewhere.id]
        # b1 follows the trunk's decisions (edda.followTrunk defaults to decisions)
        pack = same_pack(store, view, branch="b1", query="b1")
        assert [i.id for i in pack.tier("binding").items] == [on_main.id]
        same_answer(store, None, view, branch="b1")
        same_answer(store, "db.engine", view, branch="b1")


def test_a_pack_and_an_answer_for_another_branch_search_that_branch(tmp_path: Path) -> None:
    from gitmem.app.retrieve import ask as app_ask
    from gitmem.app.retrieve import context as app_context

    repo = scratch_repo(tmp_path / "repo")
    git(repo, "branch", "b1")
    with Memory.open(repo) as mem:
        (theirs,) = mem.append_many(
            [Draft("note", {"text": "okapi gauge on b1"}, "x", branch="b1")]
        )
        ours = mem.note("okapi gauge on main", session="x")
    # checked out: main; asked about: b1, which does not follow the trunk's notes
    for branch, shown, hidden in (("b1", theirs.id, ours.id), ("main", ours.id, theirs.id)):
        pack = app_context(repo, "okapi gauge", now_us=wall_us(), branch=branch, paths=[])
        found = [item.id for item in pack.tier("hits").items]
        assert shown in found and hidden not in found
        answer = app_ask(repo, "okapi gauge", now_us=wall_us(), branch=branch)
        related = json.dumps(answer.to_json())
        assert hidden not in related


def test_redaction_matches_and_leaks_nothing(store: Path) -> None:
    with Memory.open(store) as mem:
        note = mem.note(f"token {CANARY}", paths=["src/a.py"], session="s")
        decision = mem.decide("secret.key", CANARY, agent="claude", session="s")
        lesson = mem.learn("mistake", f"pasted {CANARY}", paths=["src/a.py"], session="s")
        capsule = mem.open_capsule("workflow", f"rotate {CANARY}", session="s")
        checkpoint = mem.checkpoint(summary=f"found {CANARY}", session="s")
        mem.checkpoint(summary="an older, harmless checkpoint", session="t")
        mem.pin(note.id, reason="pinned before the leak was noticed", session="s")
        mem.pin(f"summary:{capsule.id}", session="s")
        mem.ratify(decision.id, session="s")
        mem.note("harmless note", session="s")
        redacted = [note, decision, lesson, capsule, checkpoint]
        for event in redacted:
            mem.redact(event.id, "leak", session="s")
        # a close naming a redacted event in a ``target`` field is hidden too (the
        # index's target column holds a close's capsule, so its body is read)
        other = mem.open_capsule("workflow", "cleanup", session="s")
        pointing = mem.append_many(
            [
                Draft(
                    "capsule_close",
                    {"capsule": other.id, "summary": "closing", "target": note.id},
                    "s",
                    capsule=other.id,
                )
            ]
        )[0]
    with open_view(store) as view:
        for budget in (100, 400, 5000):
            pack = same_pack(
                store,
                view,
                query="token pasted rotate secret found",
                paths=["src/"],
                session="s",
                budget=budget,
                search=shared_search(store),
            )
            md = pack.to_markdown()
            assert CANARY not in md
            for event in redacted:
                assert event.id[:12] not in md
        assert pack.tier("pins").items == () and pack.tier("proposed").items == ()
        assert "an older, harmless checkpoint" in pack.to_markdown()
        assert pointing.id[:12] not in pack.to_markdown() and other.id[:12] in pack.to_markdown()


def test_empty_store_and_branch_without_memory(store: Path) -> None:
    pack = same_pack(store, now=T0)
    assert "Nothing recorded" in pack.to_markdown()
    with Memory.open(store) as mem:
        mem.note("first", session="a")
    git(store, "branch", "fresh")
    with open_view(store) as view:
        same_pack(store, view, now=T0)
        assert "first" in same_pack(store, view, now=T0, branch="fresh").to_markdown()


# ask -----------------------------------------------------------------------------------


def decisions_with_related_work(repo: Path) -> dict[str, Event]:
    """Decisions with what ask relates to them: db.engine three times (one in a
    workflow capsule with a note, one ratified and followed by a commit link,
    one followed by a checkpoint), api.style with notes on its paths,
    cache.policy, and a decision redacted for leaking ``CANARY``."""
    with Memory.open(repo) as mem:
        e: dict[str, Event] = {}
        capsule = mem.open_capsule("workflow", "pick a database", session="s1")
        e["db1"] = mem.decide(
            "db.engine", "mysql", reason="familiar", session="s1", capsule=capsule.id
        )
        mem.note("benchmarked mysql", session="s9", capsule=capsule.id)
        e["db2"] = mem.decide(
            "db.engine", "sqlite", reason="embedded, no server", agent="claude", session="s2"
        )
        e["r1"] = mem.ratify(e["db2"].id, note="fine for now", session="s2")
        mem.link_commit("b" * 40, session="s2", message="switch to sqlite")
        mem.link_commit("c" * 40, session="other", message="unrelated")
        e["db3"] = mem.decide(
            "db.engine", "postgres", reason="concurrent writers", agent="claude", session="s3"
        )
        mem.checkpoint(summary="postgres chosen", session="s3")
        e["api"] = mem.decide("api.style", "rest", reason="simple clients", paths=["src/api/"])
        mem.note("the api handlers", paths=["src/api/handlers.py"], session="s7")
        mem.note("unrelated paths", paths=["docs/"], session="s8")
        e["cache"] = mem.decide(
            "cache.policy", "lru", reason="bounded memory for the engine cache", agent="claude"
        )
        e["secret"] = mem.decide("secret.value", CANARY, session="s4")
        mem.redact(e["secret"].id, "leak")
    return e


def test_ask_matches_in_every_mode(store: Path) -> None:
    decisions_with_related_work(store)
    with open_view(store) as view:
        reads = Reads(view)
        search = shared_search(store)
        for include in (False, True):
            same_answer(store, None, view, include_superseded=include)
            same_answer(store, "db.engine", view, include_superseded=include)
            same_answer(store, "DB.ENGINE", view, include_superseded=include)
            for query in ("engine database", "api", "memory cache", "nothing-matches"):
                result = same_answer(store, query, view, include_superseded=include, search=search)
                same_answer(store, query, view, include_superseded=include, limit=2, search=search)
        assert reads.whole == 0
        result = same_answer(store, "engine", view, search=search, include_superseded=True)
        related = {r.relation for d in result.decisions for r in d.related}
        assert related >= {"same capsule", "same session"}
        result = same_answer(store, "api", view, search=search)
        assert [r.relation for r in result.decisions[0].related] == ["same paths"]
        assert CANARY not in same_answer(store, None, view, include_superseded=True).to_markdown()


def test_ask_term_matching_without_search(store: Path) -> None:
    decisions_with_related_work(store)
    with open_view(store) as view:
        for query in ("engine", "postgres writers", "api"):
            same_answer(store, query, view)


# random stores ---------------------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "note",
                "note",
                "decide",
                "agent_decide",
                "learn",
                "checkpoint",
                "capsule",
                "close",
                "in_capsule",
                "pin",
                "unpin",
                "ratify",
                "redact",
                "link",
            ]
        ),
        st.sampled_from(["parser", "api style", "cache", "x" * 300, "déjà vu", "tabs\tand\nlines"]),
        st.integers(0, 7),
        st.sampled_from([None, "s0", "s1", "s2", "s3", "s4", "s5", "s6", ""]),
        st.integers(0, 3 * 24),  # hours since the previous event
    ),
    min_size=1,
    max_size=30,
)


@contextmanager
def random_store(ops: list[tuple[str, str, int, str | None, int]]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        with Memory.open(repo) as mem:
            written: list[Event] = []
            opened: list[Event] = []
            time = T0
            for op, text, n, session, gap in ops:
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

                if op == "note":
                    put("note", {"text": text, "paths": [f"src/{n}.py"]})
                elif op in ("decide", "agent_decide"):
                    agent = "claude" if op == "agent_decide" else None
                    put(
                        "decision",
                        {"key": f"k{n % 4}", "value": text, "reason": text[:9]},
                        agent=agent,
                    )
                elif op == "learn":
                    kind = ["learning", "mistake", "pattern"][n % 3]
                    put(kind, {"text": text, "paths": [f"src/{n % 3}.py", "docs/"][: 1 + n % 2]})
                elif op == "checkpoint":
                    put("checkpoint", {"summary": text, "next": text[::-1]})
                elif op == "capsule":
                    opened.append(
                        put(
                            "capsule_open", {"kind": ["session", "workflow"][n % 2], "intent": text}
                        )
                    )
                elif opened and op == "close":
                    target = opened[n % len(opened)]
                    put("capsule_close", {"capsule": target.id, "summary": text}, capsule=target.id)
                elif opened and op == "in_capsule":
                    target = opened[n % len(opened)]
                    put("note", {"text": text}, capsule=target.id)
                elif written and op in ("pin", "unpin"):
                    target = written[n % len(written)]
                    body: dict[str, Any] = {"target": target.id}
                    if op == "pin" and target.type == "capsule_open" and n % 2:
                        body["target"] = "summary:" + target.id
                    if op == "pin" and n % 3 == 0:
                        body["expires"] = time + n * DAY
                    put(op, body)
                elif written and op == "ratify":
                    decisions = [w for w in written if w.type == "decision"]
                    if decisions:
                        put("ratify", {"target": decisions[n % len(decisions)].id})
                elif written and op == "link":
                    put("commit_link", {"sha": f"{n:040x}", "session": f"s{n}", "message": text})
                elif written and op == "redact":
                    target = written[n % len(written)]
                    if target.type != "redaction" and not mem.get(target.id).redacted:
                        mem.redact(target.id, "test")
        yield repo


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=OPS,
    budget=st.integers(40, 4000),
    session=st.sampled_from([None, "s0", "s3", "s6"]),
    paths=st.sampled_from([(), ("src/",), ("src/1.py",), ("docs/x.md",)]),
    query=st.sampled_from([None, "parser", "api cache"]),
)
def test_random_stores_match(
    ops: list[tuple[str, str, int, str | None, int]],
    budget: int,
    session: str | None,
    paths: tuple[str, ...],
    query: str | None,
) -> None:
    with random_store(ops) as repo, open_view(repo) as view:
        now = T0 + 40 * DAY
        search = shared_search(repo)
        for size in (budget, 20_000):
            same_pack(
                repo,
                view,
                now=now,
                budget=size,
                session=session,
                paths=paths,
                query=query,
                search=search,
            )
        same_pack(repo, view, now=now, budget=budget, session=session, paths=paths, query=query)
        same_answer(repo, None, view, include_superseded=True)
        same_answer(repo, "k1", view)
        same_answer(repo, query or "parser", view, search=search)
        same_answer(repo, query or "parser", view)


TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=260)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    decisions=st.lists(
        st.tuples(
            st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
            TEXTS,
            TEXTS,
            st.sampled_from(
                [None, "claude", "  ", "agent with  spaces"]
            ),  # control characters are refused
        ),
        min_size=1,
        max_size=6,
    ),
    paths=st.sampled_from([(), ("src/a.py",)]),
)
def test_decision_lines_from_outlines_match_decoded_events(
    decisions: list[tuple[str, str, str, str | None]], paths: tuple[str, ...]
) -> None:
    """The index shows decisions from their stored line (no decoding): the
    pack must be what describing each decoded event gives, whatever the
    key, value, reason (whitespace, long, non-ASCII) and agent."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        with Memory.open(repo) as mem:
            for n, (key, value, reason, agent) in enumerate(decisions):
                body = {
                    "key": key,
                    "value": value,
                    "reason": reason,
                    "paths": ["src/a.py"][: n % 2],
                }
                mem.append_many([Draft("decision", body, None, time=T0 + n, agent=agent)])
        with open_view(repo) as view:
            same_pack(
                repo, view, now=T0 + DAY, budget=20_000, session=None, paths=paths, query=None
            )
            same_pack(repo, view, now=T0 + DAY, budget=120, session=None, paths=paths, query=None)
