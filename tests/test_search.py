"""Search (gitmem.retrieval.search and ``git edda search``) over real indexes.

Each test builds a small memory store in a real git repository, lets the
index build itself, and searches it through the library and the CLI. The
embeddings come from the default offline ("minilm") embedder.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git, isolated_environment, make_repo, scratch_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.capture.sealer import Draft
from gitmem.errors import UsageError
from gitmem.index.refresh import refresh
from gitmem.index.view import IndexView
from gitmem.memory.query import EventFilter
from gitmem.retrieval.search import (
    DAY_US,
    RECENCY_WEIGHT,
    RELEVANCE_WEIGHT,
    RRF_K,
    SearchResult,
    asks_about_time,
    recency,
    search,
)

T0 = 1_748_464_000_000_000  # 2025-05-28, in microseconds (in the past: times ahead of the clock are refused)
HOUR = 3_600_000_000
NOW = T0 + 400 * DAY_US


# helpers ----------------------------------------------------------------------------
def notes_repo(path: Path, texts: list[str]) -> tuple[Path, list[Any]]:
    """A repository with one note per text, in this order, an hour apart."""
    repo = scratch_repo(path)
    with Memory.open(repo) as mem:
        events = mem.append_many(
            [Draft("note", {"text": t}, time=T0 + i * HOUR) for i, t in enumerate(texts)]
        )
    return repo, events


def hit_ids(result: SearchResult) -> list[str]:
    return [h.event.id for h in result.hits]


def dumps(result: SearchResult) -> str:
    return json.dumps(result.to_json(), sort_keys=True)


def cli_json(repo: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def cli_ids(repo: Path, *args: str) -> list[str]:
    return [h["id"] for h in cli_json(repo, *args)["hits"]]


# what a query finds ------------------------------------------------------------------
CORPUS = [
    "the flaky test is a timezone bug in the scheduler",
    "we store sessions in postgres with a connection pool",
    "deploy the service with kubernetes on friday",
    "数据库连接池的配置需要调整",
    "日本語の全文検索はバイグラムで動く",
    "Die Datenbank ist langsam wegen fehlender Indizes",
    "Größenänderung der Bilder schlägt fehl",
    "Le cache est invalidé après chaque déploiement",
    "call retry_with_backoff when the RetryPolicy allows it",
    "the physician prescribed medicine",
    "bump the logging level to debug for the payment worker",
    "the frontend build uses webpack and babel",
]

FINDS = [
    # exact words
    ("timezone", 0),
    ("webpack", 11),
    # typos
    ("timezon", 0),
    ("tmezone", 0),
    ("postgress", 1),
    ("kubernets", 2),
    ("kuberentes", 2),  # transposition
    ("webpakc", 11),
    ("postgers", 1),
    ("schedular", 0),
    ("babbel", 11),
    # stemming
    ("deploying", 2),
    ("deployed", 2),
    ("scheduling", 0),
    # Chinese and Japanese: no spaces, found by a two-character word
    ("配置", 3),
    ("连接", 3),
    ("検索", 4),
    # German and French, with and without the accents
    ("Datenbank", 5),
    ("langsam", 5),
    ("Größenänderung", 6),
    ("grossenanderung", 6),
    ("déploiement", 7),
    ("deploiement", 7),
    ("invalidé", 7),
    # identifiers
    ("retry_with_backoff", 8),
    ("retry policy", 8),
    ("RetryPolicy", 8),
    ("backoff", 8),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IndexView, list[Any]]]:
    """The index view of CORPUS, one note an hour (built once: tests only search it)."""
    base = tmp_path_factory.mktemp("corpus")
    with isolated_environment(base):
        repo, events = notes_repo(base / "repo", CORPUS)
        view = IndexView.open(repo)
    with view:
        yield view, events


def test_queries_find_what_they_should(corpus: tuple[IndexView, list[Any]]) -> None:
    view, events = corpus
    wrong = []
    for query, index in FINDS:
        for mode in ("hybrid", "lexical"):
            result = search(view, query, mode=mode, now=NOW)
            if hit_ids(result)[:1] != [events[index].id]:
                wrong.append((query, mode, [h.event.summary(30) for h in result.hits[:3]]))
            elif mode == "lexical" and len(result.hits) != 1:
                wrong.append((query, mode, "other events match too"))
    assert wrong == []


def test_no_shared_word_finds_nothing_lexically(corpus: tuple[IndexView, list[Any]]) -> None:
    view, _events = corpus
    for query in ("doctor gave drugs", "zzyzx", "   ", "", "the"[:2]):
        assert search(view, query, mode="lexical", now=NOW).hits == []


# modes ---------------------------------------------------------------------------------
def test_modes_lexical_vector_hybrid(corpus: tuple[IndexView, list[Any]]) -> None:
    view, events = corpus
    physician = events[9].id

    lexical = search(view, "physician medicine", mode="lexical", now=NOW)
    assert hit_ids(lexical) == [physician]
    assert all(h.vector_rank is None and h.lexical_rank for h in lexical.hits)
    assert lexical.vector_candidates == 0

    vector = search(view, "physician medicine", mode="vector", now=NOW)
    assert hit_ids(vector)[:1] == [physician]
    assert all(h.lexical_rank is None and h.vector_rank for h in vector.hits)
    assert vector.lexical_candidates == 0

    hybrid = search(view, "physician medicine", mode="hybrid", now=NOW)
    top = hybrid.hits[0]
    assert top.event.id == physician and top.lexical_rank == 1 and top.vector_rank == 1
    assert top.relevance == pytest.approx(1.0)

    # a paraphrase with no word in common: only the vectors can find it
    paraphrase = "doctor gave drugs"
    assert search(view, paraphrase, mode="lexical", now=NOW).hits == []
    by_meaning = search(view, paraphrase, mode="vector", now=NOW)
    assert hit_ids(by_meaning)[:1] == [physician]
    assert by_meaning.hits[0].vector_score is not None and by_meaning.hits[0].vector_score > 0.5
    assert hit_ids(search(view, paraphrase, now=NOW))[:1] == [physician]


def test_bad_mode_and_limit_are_usage_errors(corpus: tuple[IndexView, list[Any]]) -> None:
    view, _events = corpus
    with pytest.raises(UsageError):
        search(view, "timezone", mode="semantic")
    with pytest.raises(UsageError):
        search(view, "timezone", limit=0)


def test_cli_modes(tmp_path: Path) -> None:
    repo, events = notes_repo(tmp_path / "repo", CORPUS)
    physician = events[9].id
    assert cli_ids(repo, "search", "doctor gave drugs", "--mode", "lexical") == []
    assert cli_ids(repo, "search", "doctor gave drugs", "--mode", "vector")[:1] == [physician]
    assert cli_ids(repo, "search", "postgress")[:1] == [events[1].id]
    code, _out, err = cli(repo, "search", "x", "--mode", "semantic")
    assert code != 0 and "semantic" in err


# no query string can raise ----------------------------------------------------------------
NASTY = st.sampled_from(
    [
        "AND", "OR", "NOT", '"', "(", ")", ":", "\\", "*", "?", "~", "^", "[", "]", "{", "}",
        "text:", "words:", "cjk:", "id:", "key:", "nofield:", "+", "-", "!", "/", "\x00", "\n",
        "\t", "\x7f", "TO", "a", "db", "2", "1.5", "中文", "🚀", "'", "<", ">", "=", "IN",
    ]
)  # fmt: skip
QUERIES = st.one_of(
    st.text(max_size=60),
    st.lists(NASTY, max_size=10).map(" ".join),
    st.lists(NASTY, max_size=10).map("".join),
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(query=QUERIES, mode=st.sampled_from(["hybrid", "lexical", "vector"]))
def test_any_query_is_safe(corpus: tuple[IndexView, list[Any]], query: str, mode: str) -> None:
    view, _events = corpus
    result = search(view, query, mode=mode, now=NOW, all_branches=True)
    assert isinstance(result, SearchResult)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert len(set(hit_ids(result))) == len(result.hits)


ADVANCED = st.lists(NASTY, max_size=8).map(" ".join)


@FUZZ
@given(query=ADVANCED)
def test_any_advanced_query_is_safe(corpus: tuple[IndexView, list[Any]], query: str) -> None:
    view, _events = corpus
    for mode in ("hybrid", "lexical"):
        assert isinstance(search(view, query, mode=mode, advanced=True, now=NOW), SearchResult)


@pytest.mark.parametrize(
    "query",
    [
        'text:"unclosed phrase',
        "(timezone AND",
        "timezone OR OR NOT",
        "nofield:timezone",
        "text:[a TO",
        "text:timezone^x",
        "\\",
        "text:*",  # an "exists" query the parser accepts and the engine refuses
        "id:*",
        "nofield:*",
        "text: *",
    ],
)
def test_advanced_syntax_errors_never_raise(
    corpus: tuple[IndexView, list[Any]], query: str
) -> None:
    view, _events = corpus
    assert isinstance(search(view, query, advanced=True, now=NOW), SearchResult)


def test_advanced_syntax_works(corpus: tuple[IndexView, list[Any]]) -> None:
    view, events = corpus
    assert hit_ids(search(view, '"connection pool"', advanced=True, mode="lexical")) == [
        events[1].id
    ]
    assert hit_ids(search(view, "timezone AND scheduler", advanced=True, mode="lexical")) == [
        events[0].id
    ]
    assert hit_ids(search(view, "timezone AND webpack", advanced=True, mode="lexical")) == []


def test_cli_any_query_is_safe(tmp_path: Path) -> None:
    repo, _events = notes_repo(tmp_path / "repo", CORPUS[:3])
    for query in ['"(unclosed AND', "a:b:c \\ NOT", "x --json", "\x01\x02 OR", "text:[a TO"]:
        code, _out, err = cli(repo, "search", query)
        assert code == 0, (query, err)
        code, _out, err = cli(repo, "search", "--advanced", query)
        assert code == 0, (query, err)


# filters -----------------------------------------------------------------------------
def _filter_store(path: Path) -> tuple[Path, dict[str, Any]]:
    """Events that all mention 'gadget', varied in every filterable way."""
    repo = scratch_repo(path)
    git(repo, "branch", "feat")
    with Memory.open(repo) as mem:
        cap = mem.append("capsule_open", {"kind": "session", "intent": "gadget capsule"})
        specs = [
            ("note", {"text": "gadget one", "tags": ["ui"], "paths": ["src/app/main.py"]},
             "s1", "a1", cap.id, "main"),
            ("note", {"text": "gadget two", "tags": ["db"], "paths": ["docs/guide.md"]},
             "s2", "a2", None, "main"),
            ("decision", {"key": "gadget", "value": "gadget three", "paths": ["src/db.py"]},
             "s1", "a2", None, "main"),
            ("learning", {"text": "gadget four", "tags": ["ui", "db"]},
             "s2", "a1", cap.id, "feat"),
            ("note", {"text": "gadget five", "paths": ["tests/test_gadget.py"]},
             None, None, None, "feat"),
        ]  # fmt: skip
        drafts = [
            Draft(t, b, session=s, agent=a, capsule=c, branch=br, time=T0 + i * DAY_US)
            for i, (t, b, s, a, c, br) in enumerate(specs)
        ]
        events = mem.append_many(drafts)
    named = {e.field("text") or e.field("value"): e for e in events}
    named["capsule"] = cap
    return repo, named


def test_filters(tmp_path: Path) -> None:
    repo, ev = _filter_store(tmp_path / "repo")
    with IndexView.open(repo) as view:
        one, two, three, four, five = (
            ev[f"gadget {n}"].id for n in ("one", "two", "three", "four", "five")
        )
        cap = ev["capsule"].id

        def found(where: EventFilter | None = None, **kw: Any) -> set[str]:
            sets = []
            for mode in ("lexical", "hybrid"):
                kw.setdefault("all_branches", True)
                sets.append(
                    set(hit_ids(search(view, "gadget", limit=50, where=where, mode=mode, **kw)))
                )
            assert sets[0] == sets[1]
            return sets[0]

        everything = {one, two, three, four, five, cap}
        assert found() == everything
        assert found(EventFilter(types=["note"])) == {one, two, five}
        assert found(EventFilter(types=["decision", "learning"])) == {three, four}
        assert found(EventFilter(sessions=["s1"])) == {one, three}
        assert found(EventFilter(capsules=[cap])) == {cap, one, four}
        assert found(EventFilter(actors=["a2"])) == {two, three}
        user = ev["gadget one"].scope["user"]  # every event's user scope
        assert found(EventFilter(actors=[user])) == everything
        assert found(EventFilter(actors=["nobody"])) == set()
        assert found(EventFilter(tags=["ui"])) == {one, four}
        assert found(EventFilter(paths=["src/"])) == {one, three}
        assert found(EventFilter(paths=["src"])) == {one, three}
        assert found(EventFilter(paths=["*.py"])) == {one, three, five}
        assert found(EventFilter(paths=["docs/guide.md"])) == {two}
        assert found(EventFilter(since=T0 + 1 * DAY_US, until=T0 + 3 * DAY_US)) == {two, three}
        assert found(EventFilter(types=["note"], sessions=["s1"], tags=["ui"])) == {one}
        # branches: main's own events; feat sees its own, main's from before its memory
        # started, and the decision main made
        assert found(all_branches=False, branch="main") == {cap, one, two, three}
        assert found(all_branches=False, branch="feat") == {
            e.id for e in Memory.open(repo).events(branch="feat")
        }
        assert {four, five, three} <= found(all_branches=False, branch="feat")
        # the filters agree with Memory's
        with Memory.open(repo) as mem:
            for where in (
                EventFilter(types=["note"]),
                EventFilter(paths=["*.py"]),
                EventFilter(sessions=["s2"], tags=["db"]),
            ):
                assert found(where) == {e.id for e in mem.events(where, all_branches=True)}


def test_cli_filters(tmp_path: Path) -> None:
    repo, ev = _filter_store(tmp_path / "repo")
    one, two, three, four, five = (
        ev[f"gadget {n}"].id for n in ("one", "two", "three", "four", "five")
    )
    cap = ev["capsule"].id
    base = ["search", "gadget", "--all-branches", "--limit", "50"]

    def found(*args: str) -> set[str]:
        return set(cli_ids(repo, *base, *args))

    assert found("--type", "note") == {one, two, five}
    assert found("--type", "note", "--type", "learning") == {one, two, four, five}
    assert found("--session", "s2") == {two, four}
    assert found("--capsule", cap[:10]) == {cap, one, four}
    assert found("--actor", "a1") == {one, four}
    assert found("--tag", "db") == {two, four}
    assert found("--path", "src/") == {one, three}
    assert found("--path", "tests/*.py") == {five}
    iso = lambda us: str(us)  # noqa: E731  (microseconds are a valid time)
    # the capsule was opened "now", after every other event
    assert found("--since", iso(T0 + 3 * DAY_US)) == {four, five, cap}
    assert found("--until", iso(T0 + 1 * DAY_US)) == {one}
    assert found("--since", "2025-05-29T00:00:00Z", "--until", "2025-05-31") == {two, three}
    assert set(cli_ids(repo, "search", "gadget", "--branch", "main", "--limit", "50")) == {
        cap,
        one,
        two,
        three,
    }
    code, _out, err = cli(repo, "search", "gadget", "--type", "nonsense")
    assert code != 0 and "nonsense" in err


def test_filters_apply_before_the_candidate_limit(tmp_path: Path) -> None:
    """An event the filter allows is found however many better matches it does not allow."""
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        special = mem.append_many(
            [
                Draft(
                    "note",
                    {
                        "text": "alpha, among many other words about unrelated release "
                        "planning and the weather and lunch and more filler words",
                        "paths": ["special/only.py"],
                    },
                    session="special",
                    time=T0,
                )
            ]
        )[0]
        mem.append_many(
            [
                Draft(
                    "note",
                    {"text": f"alpha widget {i}"},
                    session="common",
                    time=T0 + (i + 1) * HOUR,
                )
                for i in range(300)
            ]
        )
    with IndexView.open(repo) as view:
        plain = search(view, "alpha widget", limit=10, now=NOW)
        assert special.id not in hit_ids(plain)
        for mode in ("lexical", "vector", "hybrid"):
            for where in (
                EventFilter(sessions=["special"]),
                EventFilter(paths=["special/"]),
                EventFilter(until=T0 + 1),
            ):
                result = search(view, "alpha widget", limit=5, where=where, now=NOW, mode=mode)
                assert hit_ids(result) == [special.id], (mode, where)
        assert cli_ids(repo, "search", "alpha widget", "--session", "special") == [special.id]


# scores do not depend on the candidate limit ----------------------------------------------
WORDS = [
    "cache", "retry", "timeout", "database", "index", "query", "latency", "worker", "queue",
    "deploy", "rollback", "schema", "migration", "token", "session", "lock", "build", "test",
    "flaky", "network",
]  # fmt: skip


@pytest.fixture(scope="module")
def varied_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 notes of random words, indexed (with their vectors) once a module."""
    import random

    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(300)]
    base = tmp_path_factory.mktemp("varied")
    with isolated_environment(base):
        repo, _events = notes_repo(base / "repo", texts)
        IndexView.open(repo).close()
    return repo


@pytest.fixture
def varied(varied_template: Path, tmp_path: Path) -> Iterator[tuple[Path, IndexView]]:
    """A copy of the template's repository and index, the test's own to change
    (embedding its 300 texts again for each test cost seconds a test)."""
    repo = tmp_path / "repo"
    shutil.copytree(varied_template, repo, symlinks=True)
    with IndexView.open(repo) as view:
        yield repo, view


def _ranking(result: SearchResult) -> list[tuple[Any, ...]]:
    """What a result ranks and scores: each hit's id, score and engines' raw
    scores (the ranks say where an item was in each engine's candidate list,
    so they depend on how deep that list was read)."""
    return [
        (h.event.id, round(h.score, 9), h.lexical_score, h.vector_score, h.lexical, h.vector)
        for h in result.hits
    ]


@pytest.mark.parametrize("fusion", ["score", "rrf"])
@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_scores_do_not_depend_on_the_candidate_limit(
    varied: tuple[Path, IndexView], mode: str, fusion: str
) -> None:
    _repo, view = varied
    for query in ("cache retry", "database migration rollback", "worker"):
        few = search(view, query, mode=mode, limit=10, candidates=50, now=NOW, fusion=fusion)
        many = search(view, query, mode=mode, limit=10, candidates=500, now=NOW, fusion=fusion)
        assert len(few.hits) == 10
        if fusion == "rrf":  # ranks are its scores: they must agree too
            assert [h.to_json() for h in few.hits] == [h.to_json() for h in many.hits]
        assert _ranking(few) == _ranking(many)
        top3 = search(view, query, mode=mode, limit=3, now=NOW, fusion=fusion)
        top10 = search(view, query, mode=mode, limit=10, now=NOW, fusion=fusion)
        assert [h.to_json() for h in top3.hits] == [h.to_json() for h in top10.hits[:3]]
    if fusion == "score":
        # Even lists far shorter than the result: they are read deeper until
        # nothing unread can reach the top, and every hit is scored by both engines.
        for query in ("cache retry", "flaky network test"):
            short = search(view, query, mode=mode, limit=20, candidates=3, now=NOW)
            deep = search(view, query, mode=mode, limit=20, candidates=300, now=NOW)
            assert _ranking(short) == _ranking(deep)


def test_score_formula(varied: tuple[Path, IndexView]) -> None:
    _repo, view = varied
    whole = search(view, "flaky network test", limit=300, now=NOW)
    lexical = search(view, "flaky network test", limit=300, now=NOW, mode="lexical")
    vector = search(view, "flaky network test", limit=300, now=NOW, mode="vector")
    bm25_top = max(h.lexical_score or 0 for h in lexical.hits)
    cos_top = max(h.vector_score or 0 for h in vector.hits)
    assert len(whole.hits) > 50
    for hit in whole.hits:
        assert hit.lexical == pytest.approx((hit.lexical_score or 0) / bm25_top)
        assert hit.vector is not None and hit.vector_score is not None
        assert 0 <= hit.vector <= 1 and (hit.vector == 1) == (hit.vector_score == cos_top)
        assert hit.relevance == pytest.approx(0.5 * hit.lexical + 0.5 * hit.vector)
        # recency only breaks ties: the score is the relevance
        assert hit.recency == pytest.approx(recency(hit.event.time, NOW))
        assert hit.score == hit.relevance
    # the vector scale is linear in the cosine: the floor is where it reaches 0
    above = [h for h in whole.hits if h.vector and h.vector < 1]
    a, b = above[0], above[-1]
    assert a.vector_score is not None and b.vector_score is not None and a.vector and b.vector
    slope = (a.vector - b.vector) / (a.vector_score - b.vector_score)
    assert (1 - a.vector) == pytest.approx(slope * (cos_top - a.vector_score))
    # scored by both engines, wherever an event ranks in each
    short = search(view, "flaky network test", limit=10, candidates=5, now=NOW)
    assert all(h.vector_score is not None for h in short.hits)
    assert all(h.lexical_score is not None or h.lexical == 0 for h in short.hits)
    assert _ranking(short) == _ranking(whole)[:10]


def test_rrf_score_formula(varied: tuple[Path, IndexView]) -> None:
    _repo, view = varied
    for hit in search(view, "flaky network test", limit=20, now=NOW, fusion="rrf").hits:
        ranks = [r for r in (hit.lexical_rank, hit.vector_rank) if r]
        assert hit.relevance == pytest.approx(
            sum(1 / (RRF_K + r) for r in ranks) / (2 / (RRF_K + 1))
        )
        assert hit.score == hit.relevance and hit.lexical is None and hit.vector is None
    with pytest.raises(UsageError):
        search(view, "flaky", fusion="borda")


def test_full_text_scores_of_given_documents_match_its_search(
    varied: tuple[Path, IndexView],
) -> None:
    _repo, view = varied
    for query in ("flaky network test", "cache", "retyr timout"):
        found = view.fulltext.search(query, 1000)
        assert found
        ids = [eid for eid, _s in found[::3]] + ["0" * 32]  # and one that is not there
        scored = view.fulltext.scores_of(query, ids)
        expected = {int(eid[:16], 16): s for eid, s in found[::3]}
        assert scored == pytest.approx(expected)
        assert view.fulltext.scores_of(query, []) == {}


def test_a_filter_does_not_change_vector_scores(varied: tuple[Path, IndexView]) -> None:
    repo, _view = varied
    with Memory.open(repo) as mem:
        mem.decide("lunch", "pizza")  # the one event the filter below leaves out
    with IndexView.open(repo) as view:
        changed = []
        for query in WORDS:
            plain = search(view, query, mode="vector", limit=20, now=NOW)
            notes = search(
                view, query, mode="vector", limit=20, now=NOW, where=EventFilter(types=["note"])
            )
            a = [
                (h.event.id, round(h.vector_score or 0, 4))
                for h in plain.hits
                if h.event.type == "note"
            ]
            b = [(h.event.id, round(h.vector_score or 0, 4)) for h in notes.hits][: len(a)]
            if a != b:
                changed.append(query)
        assert changed == []


# determinism ---------------------------------------------------------------------------
def test_same_store_query_and_now_give_identical_output(varied: tuple[Path, IndexView]) -> None:
    repo, view = varied
    for query in ("cache retry", "schema migration token", "networks"):
        first = dumps(search(view, query, limit=20, now=NOW))
        assert first == dumps(search(view, query, limit=20, now=NOW))
        with IndexView.open(repo) as fresh:
            assert first == dumps(search(fresh, query, limit=20, now=NOW))
    args = [sys.executable, "-m", "gitmem.cli.main", "search", "cache retry", "--limit", "20"]
    args += ["--now", str(NOW), "--json", "-C", str(repo)]
    outputs = [subprocess.run(args, capture_output=True, check=True).stdout for _ in range(2)]
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0]) == search(view, "cache retry", limit=20, now=NOW).to_json()


def _grow(repo: Path, mem: Memory, fork: bool) -> None:
    """16 events added in four steps, with an incremental refresh after each. (Kept
    this small so that the vector index's HNSW graph links every vector with every
    other: with a few hundred, usearch's approximate walk may miss close vectors, and
    which ones depends on how the graph was built.)"""
    import random

    rng = random.Random(3)
    for step in range(4):
        branch = "feat" if fork and step >= 2 else "main"
        if fork and step == 2:
            git(repo, "branch", "feat")
            mem.fork("feat")
        mem.append_many(
            [
                Draft(
                    "note",
                    {"text": " ".join(rng.choice(WORDS) for _ in range(6))},
                    branch=branch,
                    time=T0 + (step * 3 + i) * HOUR,
                )
                for i in range(3)
            ]
        )
        mem.decide(f"k{step}", rng.choice(WORDS), reason="cache policy", branch=branch)
        refresh(mem)


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
@pytest.mark.parametrize("fork", [False, True])
def test_incremental_and_rebuilt_index_give_identical_output(
    tmp_path: Path, fork: bool, mode: str
) -> None:
    repo = scratch_repo(tmp_path / "repo")
    queries = ("cache retry", "database worker", "policy", "flaky")
    with Memory.open(repo) as mem:
        _grow(repo, mem, fork)
        with IndexView.open(repo) as view:
            assert view.report is None
            assert view.table.num_rows == 16
            before = [
                dumps(search(view, q, limit=30, now=NOW, all_branches=True, mode=mode))
                for q in queries
            ]
            assert refresh(mem, rebuild=True).mode == "full"
    with IndexView.open(repo) as view:
        after = [
            dumps(search(view, q, limit=30, now=NOW, all_branches=True, mode=mode)) for q in queries
        ]
        assert before == after


# recency ---------------------------------------------------------------------------------
def test_newer_of_two_equal_events_ranks_first(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        old, new = mem.append_many(
            [
                Draft("note", {"text": "the quasar flickers"}, time=NOW - 61 * DAY_US),
                Draft("note", {"text": "the quasar flickers"}, time=NOW - 1 * DAY_US),
            ]
        )
        mem.note("an unrelated note about lunch")
    with IndexView.open(repo) as view:
        for mode in ("hybrid", "lexical", "vector"):
            result = search(view, "quasar flickers", now=NOW, mode=mode)
            assert hit_ids(result)[:2] == [new.id, old.id], mode
            a, b = result.hits[:2]
            assert a.recency > b.recency
            assert a.recency == pytest.approx(0.5 ** (1 / 30))
            assert b.recency == pytest.approx(0.5 ** (61 / 30))

        # an earlier "now" changes the recency of every hit; before both, both count as new
        later = search(view, "quasar", now=NOW).to_json()["hits"]
        earlier = search(view, "quasar", now=NOW - 30 * DAY_US).to_json()["hits"]
        assert {h["id"]: h["components"]["recency"] for h in later} != {
            h["id"]: h["components"]["recency"] for h in earlier
        }
        before_both = search(view, "quasar", now=NOW - 100 * DAY_US)
        recency = {h.event.id: h.recency for h in before_both.hits}
        assert recency[new.id] == recency[old.id] == 1.0


def test_cli_now_changes_recency(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        (event,) = mem.append_many([Draft("note", {"text": "nebula"}, time=T0)])
    at_t0 = cli_json(repo, "search", "nebula", "--now", str(T0))["hits"][0]
    month = cli_json(repo, "search", "nebula", "--now", str(T0 + 30 * DAY_US))["hits"][0]
    iso = cli_json(repo, "search", "nebula", "--now", "2025-06-27T00:00:00Z")["hits"][0]
    assert at_t0["id"] == month["id"] == event.id
    assert at_t0["components"]["recency"] == 1.0
    assert month["components"]["recency"] == 0.5
    assert 0.5 < iso["components"]["recency"] < 1.0
    # recency only breaks ties, unless the query asks about time
    assert at_t0["score"] == month["score"]
    latest = [
        cli_json(repo, "search", "latest nebula", "--now", when)["hits"][0]
        for when in (str(T0), str(T0 + 30 * DAY_US))
    ]
    assert latest[0]["score"] > latest[1]["score"]
    assert latest[0]["score"] == pytest.approx(
        RELEVANCE_WEIGHT * latest[0]["components"]["relevance"] + RECENCY_WEIGHT * 1.0, abs=1e-6
    )


def test_a_time_query_ranks_exactly_by_relevance_and_recency(tmp_path: Path) -> None:
    # Many events share the query's words at many ages: the top by relevance
    # and recency together is the one computed from every event's scores,
    # however shallow the first candidate lists are.
    import random

    rng = random.Random(5)
    words = ["timeout", "retry", "worker", "schema", "token", "lunch", "report", "queue"]
    drafts = [
        Draft(
            "note",
            # all match; the more other words, the lower the relevance, a little
            {
                "text": " ".join(
                    ["pool cache deploy", *rng.sample(words, rng.randrange(8)), f"n{i}"]
                )
            },
            time=T0 + rng.randrange(0, 400) * DAY_US + i,
        )
        for i in range(240)
    ]
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.append_many(drafts)
    with IndexView.open(repo) as view:
        query = "latest pool cache deploy"
        everything = search(view, query, now=NOW, limit=240, candidates=1000)
        assert everything.timely and len(everything.hits) > 100
        ranked = sorted(
            everything.hits,
            key=lambda h: (
                -round(RELEVANCE_WEIGHT * h.relevance + RECENCY_WEIGHT * h.recency, 9),
                -h.event.time,
                h.event.id,
            ),
        )
        for candidates in (5, 8, 50):
            top = search(view, query, now=NOW, limit=5, candidates=candidates)
            assert hit_ids(top) == [h.event.id for h in ranked[:5]], candidates
            for hit in top.hits:
                assert hit.score == pytest.approx(
                    RELEVANCE_WEIGHT * hit.relevance + RECENCY_WEIGHT * hit.recency, abs=1e-9
                )


@pytest.mark.parametrize("provider", ["minilm", "static"])
def test_a_time_query_reads_each_list_once_as_deep_as_it_may_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    # The fusion reads a query about time up to TIME_DEEPEN times deeper than
    # the first depth whenever its top is not sure sooner, which is nearly
    # always: each engine reads that deep once, not a first depth and then
    # again, and the top is the one of reading in two steps. (MiniLM embeds
    # on the worker thread while full text reads here; the static embedder
    # here while full text reads there.)
    import random

    from gitmem.retrieval import search as search_module

    rng = random.Random(3)
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", provider)
    with Memory.open(repo) as mem:
        mem.append_many(
            [
                Draft(
                    "note",
                    {"text": f"pool cache deploy {' '.join(rng.sample(WORDS, 3))} n{i}"},
                    time=T0 + rng.randrange(0, 400) * DAY_US + i,
                )
                for i in range(300)
            ]
        )
    with IndexView.open(repo) as view:
        reads: list[tuple[str, int]] = []
        fulltext, vectors = view.fulltext, view.vectors
        search_keys, nearest = fulltext.search_keys, vectors.search

        def lexical(query: str, limit: int, **kwargs: Any) -> Any:
            reads.append(("lexical", limit))
            return search_keys(query, limit, **kwargs)

        def vector(query: Any, limit: int, *args: Any, **kwargs: Any) -> Any:
            reads.append(("vector", limit))
            return nearest(query, limit, *args, **kwargs)

        monkeypatch.setattr(fulltext, "search_keys", lexical)
        monkeypatch.setattr(vectors, "search", vector)
        plain = search(view, "pool cache deploy", now=NOW, limit=5, candidates=10)
        assert not plain.timely
        firsts: dict[str, int] = {}
        for engine, depth in reads:
            firsts.setdefault(engine, depth)
        assert firsts == {"lexical": 10, "vector": 10}
        reads.clear()
        timely = search(view, "latest pool cache deploy", now=NOW, limit=5, candidates=10)
        assert timely.timely and len(timely.hits) == 5
        assert sorted(reads) == [("lexical", 40), ("vector", 40)]
        reads.clear()
        monkeypatch.setattr(search_module, "_first_depth", lambda pool, _recency: pool)
        stepwise = search(view, "latest pool cache deploy", now=NOW, limit=5, candidates=10)
        assert sorted(reads) == [("lexical", 10), ("lexical", 40), ("vector", 10), ("vector", 40)]
        assert _ranking(stepwise) == _ranking(timely)


def test_recency_counts_in_whole_days(tmp_path: Path) -> None:
    assert recency(T0, T0 + DAY_US - 1) == 1.0
    assert recency(T0, T0 + 30 * DAY_US) == 0.5
    assert recency(T0, T0 + 30 * DAY_US + DAY_US - 1) == 0.5
    assert recency(T0 + DAY_US, T0) == 1.0  # the future counts as now
    assert asks_about_time("what is the LATEST pool size?")
    assert asks_about_time("what changed recently")
    assert not asks_about_time("when did we move to postgres")  # its answer may be old
    assert not asks_about_time("the test now passes")


def test_order_does_not_depend_on_when_the_query_runs(tmp_path: Path) -> None:
    """Without --now, "now" is the clock: runs seconds, hours or days apart
    must give the same order. Recency only breaks ties (newer first, by the
    events' own times), so near-ties of the relevance cannot flip with it."""
    repo = scratch_repo(tmp_path / "repo")
    # 650 to 850 days old: a recency term of 1e-8 to 1e-10, which used to round
    # two equal relevances apart at one moment and together (ids decide) at the next
    old = NOW - 850 * DAY_US
    with Memory.open(repo) as mem:
        mem.append_many(
            [
                Draft("note", {"text": f"the quasar flickers {'again ' * (i % 3)}"}, time=t)
                for i, t in enumerate(old + k * 60 * HOUR for k in range(80))
            ]
        )
    with IndexView.open(repo) as view:
        for mode in ("hybrid", "lexical", "vector"):
            runs = {
                tuple(hit_ids(search(view, "quasar flickers", limit=80, now=now, mode=mode)))
                for now in range(NOW, NOW + 3 * DAY_US, HOUR)
            }
            assert len(runs) == 1, mode
            (order,) = runs
            unpinned = search(view, "quasar flickers", limit=80, mode=mode)
            assert tuple(hit_ids(unpinned)) == order
            # equal relevances: the newer event first
            hits = unpinned.hits
            for a, b in itertools.pairwise(hits):
                assert round(a.relevance, 9) > round(b.relevance, 9) or a.event.time >= b.event.time


def test_newer_of_two_identical_events_ranks_first_even_a_day_apart(tmp_path: Path) -> None:
    # Make sure the older event has the smaller id (ties in each engine break by id).
    for attempt in range(40):
        repo = scratch_repo(tmp_path / f"repo{attempt}")
        with Memory.open(repo) as mem:
            old, new = mem.append_many(
                [
                    Draft("note", {"text": "the pulsar spins"}, time=NOW - 2 * DAY_US),
                    Draft("note", {"text": "the pulsar spins"}, time=NOW - 1 * DAY_US),
                ]
            )
        if old.id < new.id:
            break
    else:
        pytest.fail("could not get the id order wanted")
    with IndexView.open(repo) as view:
        for mode in ("lexical", "vector", "hybrid"):
            assert hit_ids(search(view, "pulsar spins", now=NOW, mode=mode)) == [new.id, old.id], (
                mode
            )


# --explain ------------------------------------------------------------------------------
def test_explain_shows_ranks_formula_and_provenance(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    (repo / "clock.py").write_text("SKEW = 0\n")
    git(repo, "add", "clock.py")
    git(repo, "commit", "-q", "-m", "fix the clock skew")
    sha = git(repo, "rev-parse", "HEAD").strip()
    with Memory.open(repo) as mem:
        cap = mem.open_capsule("session", "fix the flaky scheduler")
        note = mem.note("the clock skew breaks the scheduler", capsule=cap.id)
        mem.note("unrelated lunch order", capsule=cap.id)
        mem.link_commit(sha, message="fix the clock skew", capsule=cap.id)
        lonely = mem.note("clock skew seen elsewhere too")
    code, out, err = cli(repo, "search", "clock skew scheduler", "--explain", "--now", str(NOW))
    assert code == 0, err
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if f"[{note.id[:12]}]" in line)
    block = "\n".join(lines[first + 1 : first + 6])
    assert "lexical #1 (bm25 " in block and "-> 1.0000 on its 0..1 scale" in block
    assert "vector #" in block and "(cosine " in block
    assert "relevance " in block and "= 0.5 x lexical 1.0000 + 0.5 x vector " in block
    assert "= relevance; recency " in block and "only breaks ties" in block
    assert f"from event {note.id[:12]} on main (memory commit {note.commit[:12]})" in block
    assert f"capsule {cap.id[:12]}" in block
    assert f"code commit {sha[:12]}" in block

    data = cli_json(repo, "search", "clock skew scheduler", "--now", str(NOW))
    prov = {h["id"]: h["provenance"] for h in data["hits"]}
    assert prov[note.id] == {
        "event": note.id,
        "memory_commit": note.commit,
        "branch": "main",
        "capsule": cap.id,
        "session": None,
        "code_commit": sha,
    }
    assert prov[lonely.id]["code_commit"] is None and prov[lonely.id]["capsule"] is None
    hit = next(h for h in data["hits"] if h["id"] == note.id)
    assert hit["components"]["lexical_rank"] == 1 and hit["components"]["vector_rank"] >= 1
    assert hit["components"]["lexical_bm25"] > 0


def test_explain_for_a_vector_only_hit(tmp_path: Path) -> None:
    repo, events = notes_repo(tmp_path / "repo", CORPUS)
    code, out, err = cli(repo, "search", "doctor gave drugs", "--explain", "--limit", "1")
    assert code == 0, err
    assert f"[{events[9].id[:12]}]" in out
    assert "lexical: no match" in out and "vector #1 (cosine " in out


def test_search_in_a_repository_without_memory(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    data = cli_json(repo, "search", "anything")
    assert data["hits"] == []
    assert os.path.isdir(repo / ".git" / "edda" / "index")


def test_an_unreachable_provider_is_named_as_such(tmp_path: Path) -> None:
    """Issue 11, item 8: with Ollama down, search says the provider cannot be
    reached (not that the index was built by another model), and still answers."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", "ollama")
    git(repo, "config", "edda.embed.url", "http://127.0.0.1:9")  # nothing listens there
    assert cli(repo, "note", "the pool is too small")[0] == 0
    code, out, err = cli(repo, "search", "pool")
    assert code == 0 and "the pool is too small" in out, err
    assert "cannot connect to ollama" in out and "another embedding model" not in out


# the full-text index itself -------------------------------------------------------------
def _doc(i: int, text: str) -> Any:
    from gitmem.index.fulltext import TextDoc
    from gitmem.index.vectors import key64

    doc_id = f"{i:064x}"
    return TextDoc(doc_id, key64(doc_id), text)


def test_fulltext_update_replaces_a_document_added_twice(tmp_path: Path) -> None:
    """A new index skips the per-document delete, yet a document given twice
    (in one call, or again later) is there once, as its last text."""
    from gitmem.index.fulltext import FullText

    index = FullText(tmp_path / "ft", create=True)
    assert (
        index.update([_doc(1, "pelican crossing"), _doc(1, "heron wading"), _doc(2, "gull")]) == 3
    )
    assert index.count() == 2
    assert index.search("pelican", 5) == [] and len(index.search("heron", 5)) == 1
    index.update([_doc(2, "tern")])
    assert index.count() == 2 and index.search("gull", 5) == []
    assert [i for i, _ in index.search("tern", 5)] == [_doc(2, "").id]


def test_fulltext_scores_do_not_depend_on_how_documents_were_written(tmp_path: Path) -> None:
    """Many documents at once go to several indexing threads (several
    segments); a search scores them exactly as documents added in small
    updates (one thread)."""
    from gitmem.index.fulltext import PARALLEL_DOCS, FullText

    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "iota",
        "kappa",
        "lambda",
    ]
    docs = [
        _doc(i, " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7)))
        for i in range(PARALLEL_DOCS + 50)
    ]
    at_once = FullText(tmp_path / "once", create=True)
    at_once.update(docs)
    in_parts = FullText(tmp_path / "parts", create=True)
    for start in range(0, len(docs), 500):
        in_parts.update(docs[start : start + 500])
    assert at_once.count() == in_parts.count() == len(docs)
    for query in ("alpha", "beta gamma", "kappa lambda theta", "epsilon"):
        assert at_once.search_keys(query, 40) == in_parts.search_keys(query, 40)
