"""The library's front door, as the README shows it: gitmem.Memory and gitmem.app."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import cli, make_repo

from gitmem import Memory
from gitmem.app import browse, record, retrieve, share
from gitmem.memory.api import Memory as Store
from gitmem.memory.query import EventFilter

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path / "repo")
    block = README.read_text().split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", block, re.S).group(1)
    monkeypatch.chdir(repo)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "db.engine = postgres" in out  # the decision listed
    assert "the flaky test is a timezone bug" in out  # found by search
    assert "# Memory context" in out  # a context pack printed


def test_events_through_a_fresh_index_equal_the_ledger(tmp_path):
    repo = make_repo(tmp_path / "repo", events=30, branches=3)
    with Memory.open(repo) as mem:
        mem.decide("k", "v1")
        mem.decide("k", "v2")
    assert cli(repo, "index", "--no-embed")[0] == 0
    with Memory.open(repo) as mem:
        assert mem.fresh_view() is not None
        through_index = [e.id for e in mem.events(all_branches=True)]
        decisions = [e.id for e in mem.events(EventFilter(types=["decision"]))]
    with Store.open(repo) as store:
        assert through_index == [e.id for e in store.events(all_branches=True)]
        assert decisions == [e.id for e in store.events(EventFilter(types=["decision"]))]


def test_a_stale_index_is_not_used(tmp_path):
    repo = make_repo(tmp_path / "repo", events=3)
    assert cli(repo, "index", "--no-embed")[0] == 0
    with Memory.open(repo) as mem:
        mem.note("written after the index")
        assert mem.fresh_view() is None  # memory moved: the ledger answers
        assert mem.events()[-1].summary() == "written after the index"


def test_use_cases_return_typed_results(tmp_path):
    repo = make_repo(tmp_path / "repo")
    first = record.decide(repo, "cache.ttl", "60s", reason="hot keys")
    second = record.decide(repo, "cache.ttl", "30s", who=record.Who(agent="claude-code"))
    assert second.supersedes == first.event.id and not second.binding
    assert isinstance(record.ratify(repo, second.event.id), type(first.event))
    again = record.ratify(repo, second.event.id)
    assert isinstance(again, record.Unchanged) and again.why.startswith("already ratified")
    listed = browse.log(repo, browse.Filters(types=("decision",)), now_us=0)
    assert [e.id for e in listed] == [first.event.id, second.event.id]
    hits = retrieve.search(repo, "cache ttl", now_us=2**62, mode="lexical").hits
    assert {h.event.id for h in hits} >= {second.event.id}
    assert [b.name for b in share.branches(repo)] == ["main"]


def test_memory_search_and_context(tmp_path):
    repo = make_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.learn("learning", "retries need jitter", paths=["src/net.py"])
        assert mem.search("jitter").hits[0].event.summary() == "retries need jitter"
        pack = mem.context(paths=["src/net.py"], budget=500)
        assert "retries need jitter" in pack.to_markdown()
