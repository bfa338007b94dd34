"""``ask``: the decision overview, a key's timeline, free-text ranking, --all."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from gitmem.memory.api import Memory
from gitmem.memory.describe import short_id
from gitmem.memory.event import Event
from gitmem.retrieval.ask import AskResult, ask


def decision_history(repo: Path) -> dict[str, Event]:
    """Decisions only: db.engine decided three times (mysql; sqlite, ratified;
    postgres), api.style by a human, cache.policy by an agent. Returns them by name."""
    with Memory.open(repo) as mem:
        e: dict[str, Event] = {}
        e["db1"] = mem.decide("db.engine", "mysql", reason="familiar", session="s1")
        e["db2"] = mem.decide(
            "db.engine", "sqlite", reason="embedded, no server", agent="claude", session="s2"
        )
        e["r1"] = mem.ratify(e["db2"].id, note="fine for now")
        e["db3"] = mem.decide(
            "db.engine", "postgres", reason="concurrent writers", agent="claude", session="s3"
        )
        e["api"] = mem.decide("api.style", "rest", reason="simple clients")
        e["cache"] = mem.decide(
            "cache.policy", "lru", reason="bounded memory for the engine cache", agent="claude"
        )
    return e


def lines(result: AskResult) -> list[str]:
    return result.to_markdown().splitlines()


def test_overview_lists_active_decisions_by_key(store: Path) -> None:
    e = decision_history(store)
    with Memory.open(store) as mem:
        result = ask(mem)
    assert result.mode == "overview"
    assert [d.key for d in result.decisions] == ["api.style", "cache.policy", "db.engine"]
    assert [d.id for d in result.decisions] == [e["api"].id, e["cache"].id, e["db3"].id]
    assert [d.status for d in result.decisions] == ["binding", "proposed", "proposed"]
    out = lines(result)
    assert out[0] == "# Decisions on branch main: 3 active"
    assert out[2].startswith(f"- [{short_id(e['api'].id)}] decision `api.style` = rest")
    assert "(binding, recorded by a person;" in out[2]
    assert out[3].startswith(f"- [{short_id(e['cache'].id)}] NOT BINDING, proposed by claude")
    assert "mysql" not in result.to_markdown()


def test_overview_with_superseded(store: Path) -> None:
    e = decision_history(store)
    with Memory.open(store) as mem:
        result = ask(mem, include_superseded=True)
    assert [d.id for d in result.decisions] == [
        e["api"].id,
        e["cache"].id,
        e["db1"].id,
        e["db2"].id,
        e["db3"].id,
    ]
    db1 = result.decisions[2]
    assert db1.status == "superseded" and db1.superseded_by == e["db2"].id
    assert f"(superseded by [{short_id(e['db2'].id)}];" in db1.line
    assert lines(result)[0] == "# Decisions on branch main: 3 active, 2 superseded"
    assert result.decisions[3].ratified_by == (e["r1"].id,)


def test_key_timeline_with_supersession_and_ratification(store: Path) -> None:
    e = decision_history(store)
    with Memory.open(store) as mem:
        result = ask(mem, "db.engine")
        loose = ask(mem, "DB.Engine")
    assert result.mode == "key" and result.keys == ("db.engine",)
    assert [(t.type, t.id) for t in result.timeline] == [
        ("decision", e["db1"].id),
        ("decision", e["db2"].id),
        ("ratify", e["r1"].id),
        ("decision", e["db3"].id),
    ]
    db1, db2, db3 = (t.decision for t in result.timeline if t.decision is not None)
    assert db1.superseded_by == e["db2"].id and db2.superseded_by == e["db3"].id
    assert db2.ratified_by == (e["r1"].id,) and db3.status == "proposed"
    out = lines(result)
    assert out[0] == "# Decision timeline of `db.engine` on branch main"
    assert f"ratified [{short_id(e['db2'].id)}]: fine for now" in out[4]
    assert "NOT BINDING" in out[5]
    assert loose.mode == "key" and loose.to_json()["timeline"] == result.to_json()["timeline"]


def test_exact_key_wins_over_case_insensitive(store: Path) -> None:
    with Memory.open(store) as mem:
        lower = mem.decide("db", "a")
        upper = mem.decide("DB", "b")
        assert [d.id for d in ask(mem, "DB").decisions] == [upper.id]
        assert [d.id for d in ask(mem, "Db").decisions] == [lower.id, upper.id]  # event order
        assert ask(mem, "Db").keys == ("DB", "db")


def test_free_text_ranking_and_all(store: Path) -> None:
    e = decision_history(store)
    with Memory.open(store) as mem:
        result = ask(mem, "engine concurrent")
        everything = ask(mem, "engine concurrent", include_superseded=True)
        limited = ask(mem, "engine", limit=1)
        nothing = ask(mem, "kubernetes")
    assert result.mode == "search"
    # db3: both terms (and "engine" in its key); cache: "engine" in its reason
    assert [d.id for d in result.decisions] == [e["db3"].id, e["cache"].id]
    assert result.hidden == 2
    assert "2 superseded decisions also match (show with --all)" in result.to_markdown()
    assert [d.id for d in everything.decisions] == [
        e["db3"].id,
        e["db2"].id,
        e["db1"].id,
        e["cache"].id,
    ]
    assert everything.hidden == 0
    assert [d.id for d in limited.decisions] == [e["db3"].id]
    assert nothing.decisions == () and "_No decisions match._" in nothing.to_markdown()


def test_free_text_related_events(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Related events are the nearest in time: a clock that steps one second
    # a reading keeps a loaded machine's pauses from reordering them.
    from gitmem.storage import clock

    readings = itertools.count(clock.wall_us(), 1_000_000)
    monkeypatch.setattr(clock, "wall_us", lambda: next(readings))
    with Memory.open(store) as mem:
        capsule = mem.open_capsule("workflow", "pick a queue", session="q")
        before = mem.note("compared rabbitmq and redis streams", capsule=capsule.id, session="q")
        decision = mem.decide(
            "queue.broker",
            "redis streams",
            paths=["src/queue/"],
            capsule=capsule.id,
            session="q",
        )
        mem.note("unrelated note", session="other")
        checkpoint = mem.checkpoint(summary="broker wired", paths=["src/queue/worker.py"])
        commit = mem.link_commit("b" * 40, message="queue: redis streams", session="q")
        mem.note("a fourth related note, furthest away", session="q")
        result = ask(mem, "broker")
    (view,) = result.decisions
    assert view.id == decision.id
    assert [(r.id, r.relation) for r in view.related] == [
        (before.id, "same capsule"),
        (checkpoint.id, "same paths"),
        (commit.id, "same session"),
    ]
    out = result.to_markdown()
    assert (
        f"   - [{short_id(commit.id)}] commit bbbbbbbbbbbb: queue: redis streams (same session"
        in out
    )
    assert "unrelated" not in out and "furthest" not in out


def test_free_text_uses_the_search_function(store: Path) -> None:
    e = decision_history(store)
    calls: list[tuple[str, int, tuple[str, ...]]] = []

    def search(query: str, limit: int, types: Sequence[str]) -> list[Event]:
        calls.append((query, limit, tuple(types)))
        return [e["api"], e["db1"], e["api"], e["cache"]]

    with Memory.open(store) as mem:
        result = ask(mem, "whatever", search=search, limit=5)
    assert calls == [("whatever", 20, ("decision",))]
    assert [d.id for d in result.decisions] == [e["api"].id, e["cache"].id]
    assert result.hidden == 1


def test_redacted_decisions_are_not_shown(store: Path) -> None:
    with Memory.open(store) as mem:
        secret = mem.decide("token.store", "okapi-canary-99")
        mem.redact(secret.id, "leak")
        mem.decide("other", "value")
        texts = [ask(mem).to_markdown(), ask(mem, "okapi canary").to_markdown()]
        texts.append(ask(mem, "token.store", include_superseded=True).to_markdown())
    for text in texts:
        assert "okapi" not in text.replace("“okapi canary”", "") and secret.id[:12] not in text


def test_ask_is_deterministic(store: Path) -> None:
    decision_history(store)
    outputs = []
    for _ in range(2):
        with Memory.open(store) as mem:
            for query in (None, "db.engine", "engine concurrent"):
                result = ask(mem, query, include_superseded=True)
                outputs.append((result.to_markdown(), json.dumps(result.to_json())))
    assert outputs[:3] == outputs[3:]
