"""A slow embedder's query embedding runs beside the full-text search.

The query embeds on the process's worker thread (gitmem.retrieval.overlap)
while the filters and the full-text candidates are computed; the result must
be exactly what running the two in turn gives, and a failing embedder must
still leave lexical results with a warning.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_search import NOW, WORDS, notes_repo

from gitmem.errors import GitmemError
from gitmem.index.view import IndexView
from gitmem.memory.query import EventFilter
from gitmem.retrieval import overlap
from gitmem.retrieval import search as search_module
from gitmem.retrieval.search import SearchResult, search


class Wrapped:
    """The view's embedder, run in place or in the background, recording the
    threads it embedded on; ``fail`` makes it raise like a server gone away."""

    def __init__(self, inner: Any, *, background: bool, fail: bool = False) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.background = background
        self.fail = fail
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        if self.fail:
            raise GitmemError("the embedding server went away")
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexView]:
    import random

    from conftest import isolated_environment

    rng = random.Random(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(200)]
    base = tmp_path_factory.mktemp("overlap")
    with isolated_environment(base):
        repo, _events = notes_repo(base / "repo", texts)
        view = IndexView.open(repo)
    with view:
        yield view


def _json(result: SearchResult) -> list[dict[str, Any]]:
    return [h.to_json() for h in result.hits]


@pytest.mark.parametrize("fusion", ["score", "rrf"])
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_background_embedding_gives_the_same_result(
    varied: IndexView, mode: str, fusion: str
) -> None:
    view = varied
    where = EventFilter(types=["note"])
    for query in ("cache retry", "flaky network test", "schema migration rollback"):
        for filters in (None, where):
            inline = Wrapped(view.embedder, background=False)
            beside = Wrapped(view.embedder, background=True)
            one = search(
                view, query, mode=mode, fusion=fusion, where=filters, now=NOW, embedder=inline
            )
            two = search(
                view, query, mode=mode, fusion=fusion, where=filters, now=NOW, embedder=beside
            )
            assert one.hits and _json(one) == _json(two)
            assert one.warnings == two.warnings
            assert inline.threads == [threading.current_thread().name]
            assert beside.threads == ["gitmem-overlap"]


def test_the_configured_minilm_embeds_queries_in_the_background(varied: IndexView) -> None:
    assert getattr(varied.embedder, "background", False) is True


def test_a_failing_background_embedder_leaves_lexical_results(varied: IndexView) -> None:
    view = varied
    lexical = search(view, "cache retry", mode="lexical", now=NOW)
    broken = Wrapped(view.embedder, background=True, fail=True)
    hybrid = search(view, "cache retry", now=NOW, embedder=broken)
    assert broken.threads == ["gitmem-overlap"]
    assert [h.event.id for h in hybrid.hits] == [h.event.id for h in lexical.hits]
    assert any("could not embed the query" in w for w in hybrid.warnings)
    assert all(h.vector_score is None for h in hybrid.hits)


def test_the_worker_returns_values_and_raises_errors() -> None:
    assert overlap.submit(lambda: 6 * 7).result() == 42

    def boom() -> int:
        raise KeyError("lost")

    with pytest.raises(KeyError, match="lost"):
        overlap.submit(boom).result()
    # one worker, reused: every job runs on the same thread
    names = {overlap.submit(lambda: threading.current_thread().name).result() for _ in range(5)}
    assert names == {"gitmem-overlap"}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_worker(tmp_path: Path) -> None:
    overlap.submit(lambda: None).result()  # the parent's worker is running
    out = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker thread did not come along
        signal.alarm(20)  # a child left without a worker would wait forever
        try:
            done = overlap.submit(lambda: "ok")
            out.write_text(done.result())
        finally:
            os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert out.read_text() == "ok"


# -- provenance: the linked code commit, looked up by scope ----------------------------
link_st = st.tuples(
    st.integers(0, 20),  # time
    st.sampled_from([None, "s1", "s2", "s3"]),  # session
    st.sampled_from([None, "c1", "c2", "c3"]),  # capsule
    st.text("abcdef0123456789", min_size=4, max_size=4),  # sha
)


class _Links:
    def __init__(self, links: list[tuple[int, str | None, str | None, str | None]]) -> None:
        self.links = links

    def commit_links(
        self, capsules: Sequence[str], sessions: Sequence[str]
    ) -> list[tuple[int, str | None, str | None, str | None]]:
        return [x for x in self.links if x[2] in capsules or x[1] in sessions]


@given(
    links=st.lists(link_st, max_size=30).map(lambda xs: sorted(xs, key=lambda x: x[0])),
    time=st.integers(-1, 21),
    session=st.sampled_from([None, "s1", "s2", "s4"]),
    capsule=st.sampled_from([None, "c1", "c2", "c4"]),
)
def test_linked_commit_is_the_first_link_of_the_scan(
    links: list[tuple[int, str | None, str | None, str | None]],
    time: int,
    session: str | None,
    capsule: str | None,
) -> None:
    # what provenance meant before the lookup by scope: a scan of every link
    expected = None
    for at, link_session, link_capsule, sha in links:  # (time, id) order
        if at >= time and (
            (capsule and link_capsule == capsule) or (session and link_session == session)
        ):
            expected = sha
            break
    scopes = ([capsule] if capsule else [], [session] if session else [])
    by_scope = search_module._links_by_scope(_Links(links), *scopes)
    assert search_module._linked_commit(by_scope, time, capsule, session) == expected


class _InTurn:
    """What overlap.submit returns when the job ran at once, in the caller's thread."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


@pytest.mark.parametrize("background", [False, True])
def test_tantivy_reads_beside_the_vector_side(
    varied: IndexView, background: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With an embedder that runs in place, the full-text candidates are read on
    # the worker thread while the vector side reads here; with one that runs in
    # the background, the vector candidates' BM25 are. Either way the result is
    # exactly that of running every step in turn on one thread.
    view = varied
    fulltext = view.fulltext
    threads: dict[str, list[str]] = {"search_keys": [], "scores_of": []}
    for name, calls in threads.items():
        method = getattr(fulltext, name)

        def recorded(*args: Any, _method: Any = method, _calls: Any = calls, **kw: Any) -> Any:
            _calls.append(threading.current_thread().name)
            return _method(*args, **kw)

        monkeypatch.setattr(fulltext, name, recorded)
    queries = ("cache retry", "flaky network test", "schema migration rollback")
    embedder = Wrapped(view.embedder, background=background)
    beside = [search(view, q, now=NOW, embedder=embedder) for q in queries]
    keys_on, scores_on = list(threads["search_keys"]), list(threads["scores_of"])
    with monkeypatch.context() as m:
        m.setattr(overlap, "submit", lambda fn: _InTurn(fn()))
        in_turn = [search(view, q, now=NOW, embedder=embedder) for q in queries]
    here = threading.current_thread().name
    assert keys_on and scores_on
    assert set(keys_on) == ({here} if background else {"gitmem-overlap"})
    assert set(scores_on) == ({"gitmem-overlap"} if background else {here})
    for one, two in zip(beside, in_turn, strict=True):
        assert one.hits and _json(one) == _json(two)
        assert (one.lexical_candidates, one.vector_candidates) == (
            two.lexical_candidates,
            two.vector_candidates,
        )


def _links_table(rows: list[tuple[str, int, str | None, str | None, str | None]]) -> Any:
    import pyarrow as pa

    names = {"type": pa.string(), "time": pa.int64(), "session": pa.string()}
    names |= {"capsule": pa.string(), "body": pa.string()}
    columns = {
        n: pa.array([row[i] for row in rows], kind) for i, (n, kind) in enumerate(names.items())
    }
    return pa.table(columns)


@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["commit_link", "note"]),
            st.integers(0, 20),
            st.sampled_from([None, "s1", "s2", "s3"]),
            st.sampled_from([None, "c1", "c2", "c3"]),
            st.one_of(st.none(), st.text("abcdef0123456789", min_size=4, max_size=4)),
        ),
        max_size=30,
    ).map(lambda xs: sorted(xs, key=lambda x: x[1])),
    capsules=st.lists(st.sampled_from(["c1", "c2", "c4"]), max_size=3),
    sessions=st.lists(st.sampled_from(["s1", "s3", "s4"]), max_size=3),
)
def test_commit_links_by_scope_are_a_scan_of_every_link(
    rows: list[tuple[str, int, str | None, str | None, str | None]],
    capsules: list[str],
    sessions: list[str],
) -> None:
    import json

    from gitmem.index.links import CommitLinks

    table = _links_table(
        [(k, t, s, c, json.dumps({"sha": sha}) if sha else None) for k, t, s, c, sha in rows]
    )
    expected = [
        (t, s, c, sha)
        for kind, t, s, c, sha in rows
        if kind == "commit_link" and (c in capsules or s in sessions)
    ]
    links = CommitLinks(table)
    assert links.find(capsules, sessions) == expected  # a scan of the links
    assert links.find(capsules, sessions) == expected  # the groups, and bodies remembered
    assert links.find(capsules[::-1], sessions[::-1]) == expected
    assert len(links) == sum(kind == "commit_link" for kind, *_rest in rows)


def test_a_job_submitted_from_the_worker_runs_at_once() -> None:
    # a search run by a job on the worker thread submits its own reads: they
    # must not wait behind the job that waits for them
    def outer() -> tuple[str, int]:
        inner = overlap.submit(lambda: (threading.current_thread().name, 6 * 7))
        return inner.result()

    answers: list[tuple[str, int]] = []
    waiting = threading.Thread(target=lambda: answers.append(overlap.submit(outer).result()))
    waiting.daemon = True  # a worker waiting for itself must fail the test, not hang it
    waiting.start()
    waiting.join(20)
    assert answers == [("gitmem-overlap", 42)]
