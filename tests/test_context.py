"""Context packs: tiers, the token budget, pins, labels, redaction and determinism.

Every store is a real git repository written through ``Memory``'s write API.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import git, scratch_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.capture.sealer import Draft
from gitmem.errors import UsageError
from gitmem.memory.api import Memory
from gitmem.memory.describe import short_id
from gitmem.memory.event import Event
from gitmem.memory.listwindow import ListSource
from gitmem.memory.source import EventSource
from gitmem.retrieval.context import TIERS, ContextPack, build_context, estimate_tokens
from gitmem.storage.clock import wall_us

DAY = 86_400_000_000
T0 = 1_709_251_200_000_000  # 2024-03-01T00:00Z
CANARY = "okapi-canary-5d1e"
TITLES = {
    "pins": "## Pinned",
    "capsule": "## Open capsule",
    "work": "## Current work",
    "binding": "## Decisions (binding)",
    "proposed": "## Proposed decisions (NOT BINDING until ratified)",
    "learnings": "## Learnings about the files in play",
    "hits": "## Related to the query",
    "history": "## Recent activity",
}


def rich_store(repo: Path) -> dict[str, Event]:
    """A store with something for every tier; returns the notable events by name."""
    with Memory.open(repo) as mem:
        e: dict[str, Event] = {}
        for i in range(5):
            capsule = mem.open_capsule("session", f"old session {i}", session=f"old{i}")
            mem.note(f"old note {i} about parsing", session=f"old{i}", capsule=capsule.id)
            mem.close_capsule(capsule.id, f"finished part {i}", session=f"old{i}")
        e["human"] = mem.decide("storage.backend", "git refs", reason="branch-aware")
        e["old_proposal"] = mem.decide("api.style", "rpc", agent="claude")
        e["proposal"] = mem.decide(
            "api.style", "rest", reason="simple clients", agent="claude", session="now"
        )
        e["ratified"] = mem.decide("index.engine", "tantivy", agent="claude", session="now")
        e["ratify"] = mem.ratify(e["ratified"].id, note="ok")
        e["capsule"] = mem.open_capsule("session", "write context packs", session="now")
        e["workflow"] = mem.open_capsule("workflow", "ship retrieval", session="now")
        e["mistake"] = mem.learn(
            "mistake", "forgot the trailer", paths=["gitmem/retrieval/"], session="now"
        )
        e["learning"] = mem.learn(
            "learning", "ceil(chars/4) estimates tokens", paths=["gitmem/retrieval/context.py"]
        )
        e["other_learning"] = mem.learn("learning", "hooks must be fast", paths=["gitmem/capture/"])
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
        e["pin"] = mem.pin(e["pinned"].id, reason="team rule")
        e["commit"] = mem.link_commit("a" * 40, message="context packs", session="now")
    return e


def pack_of(repo: Path, **kw: Any) -> ContextPack:
    kw.setdefault("now", wall_us())
    with Memory.open(repo) as mem:
        return build_context(mem, **kw)


def ids_in(pack: ContextPack, tier: str) -> list[str | None]:
    return [item.id for item in pack.tier(tier).items]


# tiers -----------------------------------------------------------------------------------


def test_every_tier_appears_in_priority_order(store: Path) -> None:
    e = rich_store(store)
    pack = pack_of(
        store,
        query="parser parsing",
        paths=["gitmem/retrieval/context.py"],
        session="now",
        budget=20_000,
    )
    md = pack.to_markdown()
    positions = [md.index(TITLES[name]) for name in TIERS]
    assert positions == sorted(positions)
    assert [t.name for t in pack.tiers] == list(TIERS)
    assert pack.dropped == dict.fromkeys(TIERS, 0)
    assert "Dropped" not in md

    assert ids_in(pack, "pins") == [e["pinned"].id]
    assert ids_in(pack, "capsule") == [e["capsule"].id]
    assert ids_in(pack, "work") == [e["checkpoint"].id, e["workflow"].id]
    assert ids_in(pack, "binding") == [e["ratified"].id, e["human"].id]  # newest first
    assert ids_in(pack, "proposed") == [e["proposal"].id]
    assert ids_in(pack, "learnings") == [e["mistake"].id, e["learning"].id]  # mistakes first
    hits = ids_in(pack, "hits")
    assert hits[0] == e["hit"].id and len(hits) == 6  # the note, then the five old notes
    assert e["pinned"].id not in hits and e["proposal"].id not in hits
    # progressive disclosure: every event line carries its short id
    for tier in pack.tiers:
        for item in tier.items:
            if item.id is not None:
                assert f"[{short_id(item.id)}]" in item.text.splitlines()[0]


def test_checkpoint_and_capsule_lines(store: Path) -> None:
    e = rich_store(store)
    pack = pack_of(store)
    lines = pack.tier("work").items[0].text.splitlines()
    assert re.fullmatch(
        rf"- \[{short_id(e['checkpoint'].id)}\] checkpoint "
        r"\d{4}-\d\d-\d\dT\d\d:\d\dZ: tiers written",
        lines[0],
    )
    assert lines[1:] == [
        "  - next: write the tests",
        "  - hypotheses: greedy fill is enough",
        "  - rejected: tiktoken (a dependency)",
        "  - open questions: how many history lines?",
    ]
    capsule = pack.tier("capsule").items[0].text
    assert "session capsule, open since" in capsule and capsule.endswith(
        "1 event: write context packs"
    )
    assert "workflow capsule" in pack.tier("work").items[1].text


def test_learnings_follow_the_files_in_play(store: Path) -> None:
    e = rich_store(store)
    assert pack_of(store).tier("learnings").items == ()  # no paths, no learnings tier
    pack = pack_of(store, paths=["gitmem/capture/main.py"])
    assert ids_in(pack, "learnings") == [e["other_learning"].id]
    pack = pack_of(store, paths=["gitmem/retrieval/ask.py"])  # directory prefix only
    assert ids_in(pack, "learnings") == [e["mistake"].id]


def test_open_capsule_choice(store: Path) -> None:
    with Memory.open(store) as mem:
        first = mem.open_capsule("session", "first", session="a")
        second = mem.open_capsule("session", "second", session="b")
        closed = mem.open_capsule("session", "closed", session="c")
        mem.close_capsule(closed.id, "done", session="c")
    assert ids_in(pack_of(store), "capsule") == [second.id]  # newest open
    assert ids_in(pack_of(store, session="a"), "capsule") == [first.id]
    pack = pack_of(store, active_capsule=closed.id[:8])
    assert ids_in(pack, "capsule") == [closed.id]
    assert "summary: done" in pack.tier("capsule").items[0].text
    # an unknown active capsule is ignored
    assert ids_in(pack_of(store, active_capsule="ffffffff"), "capsule") == [second.id]


def test_summary_pin_shows_the_close_summary(store: Path) -> None:
    with Memory.open(store) as mem:
        capsule = mem.open_capsule("workflow", "migrate the index")
        mem.close_capsule(capsule.id, "index v2 rolled out; drop v1 next month")
        mem.pin(f"summary:{capsule.id}")
    pack = pack_of(store)
    (item,) = pack.tier("pins").items
    assert item.id == capsule.id
    assert "summary of workflow capsule “migrate the index”" in item.text
    assert item.text.endswith("index v2 rolled out; drop v1 next month — pinned")


def test_query_uses_the_search_function(store: Path) -> None:
    e = rich_store(store)
    calls: list[tuple[str, int, Sequence[str]]] = []
    with Memory.open(store) as mem:

        def search(query: str, limit: int, types: Sequence[str]) -> list[Event]:
            calls.append((query, limit, types))
            # already shown (pinned, decisions) and redundant results are skipped
            return [e["pinned"], e["commit"], e["human"], e["commit"], e["hit"]]

        pack = build_context(mem, query="  anything ", now=wall_us(), search=search)
    assert calls and calls[0][0] == "anything" and tuple(calls[0][2]) == ()
    assert calls[0][1] >= 10
    assert ids_in(pack, "hits") == [e["commit"].id, e["hit"].id]


def test_history_is_tiered_by_session(store: Path) -> None:
    with Memory.open(store) as mem:
        drafts = []
        for s in range(6):
            start = T0 + s * DAY
            drafts.append(
                Draft(
                    "capsule_open", {"kind": "session", "intent": f"goal {s}"}, f"s{s}", time=start
                )
            )
            for i in range(3 if s < 5 else 25):
                drafts.append(
                    Draft("note", {"text": f"s{s} step {i}"}, f"s{s}", time=start + 1000 + i)
                )
        mem.append_many(drafts)
    pack = pack_of(store, now=T0 + 10 * DAY)
    lines = [item.text for item in pack.tier("history").items]
    assert lines[0] == "- 2 older sessions, 8 events, 2024-03-01 to 2024-03-02"
    assert re.match(
        r"- \[[0-9a-f]{12}\] session s2, 2024-03-03T00:00Z, 4 events: goal 2$", lines[1]
    )
    assert "session s3, 2024-03-04T00:00Z" in lines[2] and "session s4" in lines[3]
    assert re.match(
        r"- \[[0-9a-f]{12}\] last: session s5, 2024-03-06T00:00Z, 26 events: goal 5$", lines[4]
    )
    detail = lines[5:]
    assert len(detail) == 20  # capped
    assert [d.split(": ", 1)[1] for d in detail] == [
        f"s5 step {i}" for i in range(5, 25)
    ]  # newest last
    assert all(d.startswith("  - [") for d in detail)


def test_events_of_another_branch_stay_out(store: Path) -> None:
    git(store, "branch", "b1")
    with Memory.open(store) as mem:
        mem.append_many([Draft("note", {"text": "on b1 only"}, branch="b1")])
        mem.note("on main")
    md = pack_of(store, query="only main b1").to_markdown()
    assert "on main" in md and "on b1 only" not in md
    md = pack_of(store, branch="b1").to_markdown()
    assert "on b1 only" in md and "branch b1" in md


def test_empty_store(store: Path) -> None:
    pack = pack_of(store, now=T0)
    assert pack.to_markdown() == (
        "# Memory context: branch main, 2024-03-01T00:00Z\n\n"
        "_Nothing recorded in memory for this branch yet._\n"
    )


def test_budget_must_be_positive(store: Path) -> None:
    with pytest.raises(UsageError):
        pack_of(store, budget=0)


# labels, pins, redaction -----------------------------------------------------------------


def test_unratified_decisions_are_labelled_not_binding(store: Path) -> None:
    e = rich_store(store)
    pack = pack_of(store)
    (proposed,) = pack.tier("proposed").items
    assert proposed.id == e["proposal"].id
    assert "NOT BINDING" in proposed.text and "proposed by claude" in proposed.text
    assert "`api.style` = rest — simple clients" in proposed.text
    for item in pack.tier("binding").items:
        assert "not binding" not in item.text.lower()
        assert "(binding, " in item.text
    ratified = next(i for i in pack.tier("binding").items if i.id == e["ratified"].id)
    assert f"ratified [{short_id(e['ratify'].id)}]" in ratified.text
    human = next(i for i in pack.tier("binding").items if i.id == e["human"].id)
    assert "recorded by a person" in human.text
    # the superseded proposal is in no decision tier
    assert e["old_proposal"].id not in ids_in(pack, "binding") + ids_in(pack, "proposed")
    assert e["old_proposal"].id in ids_in(pack, "history")


def test_expired_and_unpinned_pins_are_gone(store: Path) -> None:
    with Memory.open(store) as mem:
        keep = mem.note("keep me pinned")
        expiring = mem.note("pinned for a while")
        dropped = mem.note("pinned then unpinned")
        now = wall_us()
        mem.pin(keep.id)
        mem.pin(expiring.id, reason="until the release", expires=now + DAY)
        mem.pin(dropped.id)
        mem.unpin(dropped.id)
    before = pack_of(store, now=now)
    assert ids_in(before, "pins") == [expiring.id, keep.id]
    assert "pinned: until the release; until " in before.tier("pins").items[0].text
    after = pack_of(store, now=now + DAY)
    assert ids_in(after, "pins") == [keep.id]
    # not pinned, but still history
    assert expiring.id in ids_in(after, "history")


def test_redacted_events_never_appear(store: Path) -> None:
    with Memory.open(store) as mem:
        note = mem.note(f"token {CANARY}", paths=["src/a.py"], session="s")
        decision = mem.decide("secret.key", CANARY, agent="claude", session="s")
        lesson = mem.learn("mistake", f"pasted {CANARY}", paths=["src/a.py"], session="s")
        capsule = mem.open_capsule("workflow", f"rotate {CANARY}", session="s")
        mem.pin(note.id, reason="pinned before the leak was noticed")
        mem.pin(f"summary:{capsule.id}")
        mem.ratify(decision.id)
        mem.note("harmless note", session="s")
        redacted = [note, decision, lesson, capsule]
        for event in redacted:
            mem.redact(event.id, "leak")
    pack = pack_of(store, query="token pasted rotate secret", paths=["src/"], session="s")
    md = pack.to_markdown()
    dumped = json.dumps(pack.to_json())
    assert "harmless note" in md
    for text in (md, dumped):
        assert CANARY not in text
        for event in redacted:
            assert event.id[:12] not in text
    assert pack.tier("pins").items == () and pack.tier("proposed").items == ()


# the budget ------------------------------------------------------------------------------


def test_items_are_dropped_whole_and_counted(store: Path) -> None:
    rich_store(store)
    now = wall_us()
    kw: dict[str, Any] = dict(query="parser", paths=["gitmem/retrieval/"], session="now", now=now)
    full = pack_of(store, budget=20_000, **kw)
    total = {t.name: len(t.items) for t in full.tiers}
    assert full.used > 500
    for budget in (60, 120, 200, 300, 450, full.used - 1):
        pack = pack_of(store, budget=budget, **kw)
        md = pack.to_markdown()
        assert estimate_tokens(md) <= budget
        assert pack.used == estimate_tokens(md) and pack.to_json()["used"] == pack.used
        assert sum(pack.dropped.values()) > 0
        for tier in pack.tiers:
            full_texts = [i.text for i in full.tier(tier.name).items]
            for item in tier.items:
                assert item.text in full_texts  # never shortened
                assert item.text in md
            assert len(tier.items) + tier.dropped == total[tier.name]
        trailer = md.rstrip("\n").splitlines()[-1]
        if "Dropped to fit the budget:" in trailer:
            for name, count in pack.dropped.items():
                noun = {"hits": "query hit", "history": "history line"}.get(name)
                if noun and count:
                    assert f"{count} {noun}" in trailer
        else:
            assert (
                trailer
                == f"_Dropped {sum(pack.dropped.values())} items to fit the budget (raise --budget)._"
            )
    # a mid-sized budget keeps the top tiers and reports the rest per tier
    pack = pack_of(store, budget=450, **kw)
    assert pack.tier("pins").items and pack.tier("history").dropped > 0
    assert f"{pack.tier('history').dropped} history lines" in pack.to_markdown()


def test_pins_survive_a_tiny_budget(store: Path) -> None:
    e = rich_store(store)
    now = wall_us()
    for budget in range(20, 200):
        pack = pack_of(store, budget=budget, now=now, query="parser")
        if pack.tier("pins").items:
            break
    else:
        pytest.fail("the pin never fit")
    assert budget < 80
    md = pack.to_markdown()
    assert estimate_tokens(md) <= budget
    assert ids_in(pack, "pins") == [e["pinned"].id]
    assert all(not t.items for t in pack.tiers if t.name != "pins")
    assert md.endswith("to fit the budget (raise --budget)._\n")


def test_budget_property_on_one_real_store(store: Path) -> None:
    rich_store(store)
    now = wall_us()
    with Memory.open(store) as mem:

        @settings(max_examples=150, deadline=None)
        @given(
            budget=st.integers(50, 5000),
            query=st.sampled_from([None, "parser", "api style", "zzz"]),
            paths=st.sampled_from([(), ("gitmem/retrieval/",), ("gitmem/",)]),
        )
        def check(budget: int, query: str | None, paths: tuple[str, ...]) -> None:
            pack = build_context(mem, budget=budget, now=now, query=query, paths=paths)
            assert estimate_tokens(pack.to_markdown()) <= budget

        check()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "note",
                "decide",
                "agent_decide",
                "learn",
                "checkpoint",
                "pin",
                "capsule",
                "ratify",
                "redact",
            ]
        ),
        st.text(
            alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=300
        ),
        st.integers(0, 3),
    ),
    max_size=25,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, budgets=st.lists(st.integers(50, 5000), min_size=1, max_size=6))
def test_budget_property_on_random_stores(
    ops: list[tuple[str, str, int]], budgets: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        with Memory.open(repo) as mem:
            written: list[Event] = []
            for op, text, n in ops:
                text = text or "x"
                session = f"s{n}"
                if op == "note":
                    written.append(mem.note(text, paths=[f"src/{n}.py"], session=session))
                elif op in ("decide", "agent_decide"):
                    agent = "claude" if op == "agent_decide" else None
                    written.append(
                        mem.decide(f"k{n}", text, reason=text[:40], agent=agent, session=session)
                    )
                elif op == "learn":
                    written.append(
                        mem.learn(
                            ["learning", "mistake", "pattern"][n % 3], text, paths=[f"src/{n}.py"]
                        )
                    )
                elif op == "checkpoint":
                    written.append(
                        mem.checkpoint(
                            summary=text, next=text[::-1], hypotheses=[text] * n, session=session
                        )
                    )
                elif op == "capsule":
                    written.append(
                        mem.open_capsule(["session", "workflow"][n % 2], text, session=session)
                    )
                elif written and op == "pin":
                    mem.pin(
                        written[n % len(written)].id,
                        reason=text[:30],
                        expires=wall_us() + n * DAY or None,
                    )
                elif written and op == "ratify":
                    decisions = [w for w in written if w.type == "decision"]
                    if decisions:
                        mem.ratify(decisions[n % len(decisions)].id)
                elif written and op == "redact":
                    target = written[n % len(written)]
                    if not mem.get(target.id).redacted:
                        mem.redact(target.id, "test")
            now = wall_us()
            for budget in budgets:
                for query in (None, ops[0][1] if ops else "x"):
                    pack = build_context(
                        mem, budget=budget, now=now, query=query, paths=["src/"], session="s1"
                    )
                    md = pack.to_markdown()
                    assert estimate_tokens(md) <= budget
                    assert (
                        build_context(
                            mem, budget=budget, now=now, query=query, paths=["src/"], session="s1"
                        ).to_markdown()
                        == md
                    )


def _event(index: int, kind: str, body: dict[str, Any], session: str) -> Event:
    envelope = {
        "id": f"{index:032x}",
        "type": kind,
        "time": T0 + index * 1_000_000,
        "scope": {"session": session},
    }
    return Event(envelope, body, "refs/edda/branches/main", "0" * 40)


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["note", "decision", "mistake", "checkpoint", "capsule_open", "pin"]),
            st.text(max_size=600),
            st.integers(0, 5),
        ),
        max_size=60,
    ),
    budget=st.integers(50, 5000),
)
def test_budget_property_on_wide_synthetic_stores(
    items: list[tuple[str, str, int]], budget: int
) -> None:
    events: list[Event] = []
    for index, (kind, text, n) in enumerate(items):
        bodies: dict[str, dict[str, Any]] = {
            "note": {"text": text, "paths": ["src/x.py"]},
            "decision": {"key": f"k{n}", "value": text, "reason": text[:50]},
            "mistake": {"text": text, "paths": ["src/"]},
            "checkpoint": {"summary": text, "next": text, "open_questions": [text, text]},
            "capsule_open": {"kind": "session", "intent": text},
            "pin": {"target": f"{max(index - 1 - n, 0):032x}", "reason": text[:20]},
        }
        events.append(_event(index, kind, bodies[kind], f"s{n}"))
    source: EventSource = ListSource(events)
    pack = build_context(
        source,
        budget=budget,
        now=T0 + 10**12,
        query=items[0][1] if items else None,
        paths=["src/x.py"],
    )
    md = pack.to_markdown()
    assert estimate_tokens(md) <= budget
    assert (
        md
        == build_context(
            source,
            budget=budget,
            now=T0 + 10**12,
            query=items[0][1] if items else None,
            paths=["src/x.py"],
        ).to_markdown()
    )


# determinism -----------------------------------------------------------------------------


def test_output_is_deterministic(store: Path) -> None:
    rich_store(store)
    now = wall_us()
    kw: dict[str, Any] = dict(query="parser api", paths=["gitmem/retrieval/"], now=now, budget=400)
    with Memory.open(store) as mem:
        first = build_context(mem, **kw)
        again = build_context(mem, **kw)
    fresh = pack_of(store, **kw)
    for other in (again, fresh):
        assert other.to_markdown() == first.to_markdown()
        assert json.dumps(other.to_json(), sort_keys=False) == json.dumps(
            first.to_json(), sort_keys=False
        )
    assert first.to_json()["budget"] == 400 and first.to_json()["used"] <= 400
    # a different `now` only changes the title line
    later = pack_of(store, **{**kw, "now": now + DAY})
    assert later.to_markdown().splitlines()[1:] == first.to_markdown().splitlines()[1:]
