"""Fork and merge commits (gitmem.storage.heads): deterministic, forward-only, valid git."""

from __future__ import annotations

import tempfile
from pathlib import Path

from conftest import fsck, git, init_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.records import layout
from gitmem.storage import heads
from gitmem.storage.objects import ObjectBatch


def _chains(mem: Memory, count: int) -> list[str]:
    """``count`` unrelated chains c0…, each with two events; returns their tips."""
    tips = []
    for i in range(count):
        mem.note(f"first on c{i}", branch=f"c{i}")
        event = mem.note(f"second on c{i}", branch=f"c{i}")
        tips.append(event.commit)
    return tips


def _merge_tree(mem: Memory, shape: object, tips: list[str]) -> str:
    """Merge ``tips`` following a nested-tuple ``shape`` of leaf indexes."""
    if isinstance(shape, int):
        return tips[shape]
    assert isinstance(shape, tuple)
    batch = ObjectBatch()
    parts = [_merge_tree(mem, part, tips) for part in shape]
    tip = heads.merge_tips(mem.backend, batch, parts)
    mem.ledger.write_objects(batch)
    assert tip is not None
    return tip


def _shapes(indexes: list[int]) -> st.SearchStrategy[object]:
    """Every way of nesting binary merges over ``indexes`` (in any order)."""

    @st.composite
    def build(draw: st.DrawFn, items: tuple[int, ...]) -> object:
        if len(items) == 1:
            return items[0]
        cut = draw(st.integers(1, len(items) - 1))
        return (draw(build(items[:cut])), draw(build(items[cut:])))

    return st.permutations(indexes).flatmap(lambda p: build(tuple(p)))


def _events(mem: Memory, tip: str) -> set[str]:
    return {
        env["id"]
        for oid, info in mem.ledger.walk(tip)
        for _, env in mem.ledger.commit_envelopes(oid, info)
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), count=st.integers(2, 4))
def test_any_merge_order_gives_the_same_memory_and_only_moves_forward(
    data: st.DataObject, count: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = init_repo(Path(tmp) / "r")
        git(repo, "config", "edda.fsync", "false")
        with Memory.open(repo) as mem:
            tips = _chains(mem, count)
            indexes = list(range(count))
            first = _merge_tree(mem, data.draw(_shapes(indexes)), tips)
            second = _merge_tree(mem, data.draw(_shapes(indexes)), tips)
            everything = set().union(*(_events(mem, t) for t in tips))
            assert _events(mem, first) == _events(mem, second) == everything
            for tip in tips:  # the result descends from every input
                assert mem.backend.is_ancestor(tip, first)
                assert mem.backend.is_ancestor(tip, second)
            # merging again, in either direction, is a fast-forward to a common result
            joined = _merge_tree(mem, (0, 1), [first, second])
            assert mem.backend.is_ancestor(first, joined) and mem.backend.is_ancestor(
                second, joined
            )
            assert _merge_tree(mem, (0, 1), [joined, first]) == joined
            # a flat merge of all tips: parents are the tips, time the newest
            flat = _merge_tree(mem, tuple(indexes), tips)
            info = mem.backend.read_commit(flat)
            assert list(info.parents) == sorted(tips)
            assert info.time == max(mem.backend.read_commit(t).time for t in tips)
            assert layout.parse_trailers(info.message)[layout.MERGE_TRAILER] == str(count)
            assert _merge_tree(mem, tuple(reversed(indexes)), tips) == flat  # deterministic


def test_merging_a_merge_with_new_work_keeps_the_merge_as_parent(tmp_path: Path) -> None:
    """The regression behind the rule: a merge of (merge, new work) must descend
    from the earlier merge, or the ref would move backwards and pushes fail."""
    repo = init_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        mem.note("a", branch="main")
        mem.note("b", branch="f1")
        first = mem.merge("f1", "main").after
        mem.note("c", branch="f1")
        second = mem.merge("f1", "main")
        assert second.outcome == "merged" and first is not None and second.after is not None
        assert mem.backend.is_ancestor(first, second.after)
        assert {e.field("text") for e in mem.events(branch="main")} == {"a", "b", "c"}


def test_merge_commit_is_plain_git(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        tips = _chains(mem, 2)
        merged = _merge_tree(mem, (0, 1), tips)
        git(repo, "update-ref", "refs/edda/branches/c0", merged, tips[0])
        assert mem.verify().ok
        assert len(mem.events(branch="c0")) == 4
    shown = git(repo, "log", "-1", "--format=%an <%ae>|%P|%B", merged)
    author, parents, message = shown.split("|", 2)
    assert author == "gitmem <gitmem@localhost>"
    assert parents.split() == sorted(tips)
    assert message.startswith("merge 2 memory heads")
    assert git(repo, "ls-tree", merged) == ""  # the empty tree: no events
    fsck(repo)


def test_fast_forward_and_descendant_merges_write_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        old = mem.note("one", branch="x").commit
        new = mem.note("two", branch="x").commit
        batch = ObjectBatch()
        assert heads.merge_tips(mem.backend, batch, [old, new]) == new
        assert heads.merge_tips(mem.backend, batch, [new, None, old]) == new
        assert heads.merge_tips(mem.backend, batch, [None]) is None
        assert batch.objects == {}


def test_fork_commit_records_source_and_code(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    code = git(repo, "rev-parse", "HEAD").strip()
    with Memory.open(repo) as mem:
        tip = mem.note("on main").commit
        batch = ObjectBatch()
        fork = heads.fork_commit(
            mem.backend, batch, "feat", source="main", source_tip=tip, code=code
        )
        again = heads.fork_commit(
            mem.backend, ObjectBatch(), "feat", source="main", source_tip=tip, code=code
        )
        assert fork == again  # deterministic
        mem.ledger.write_objects(batch)
        assert heads.fork_record(mem.backend, fork) == ("feat", "main", code)
        assert heads.find_fork(mem.backend, fork, "feat") == ("main", code)
        assert heads.find_fork(mem.backend, tip, "feat") is None
        assert mem.backend.read_commit(fork).parents == (tip,)


def test_verify_rejects_a_merge_commit_with_events(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    with Memory.open(repo) as mem:
        tips = _chains(mem, 2)
        tree = mem.backend.read_commit(tips[0]).tree
        bad = git(
            repo,
            "commit-tree",
            tree,
            "-p",
            tips[0],
            "-p",
            tips[1],
            "-m",
            "merge\n\nEdda-Format: 1\nEdda-Merge: 2",
        ).strip()
        git(repo, "update-ref", "refs/edda/branches/c0", bad)
        empty = git(
            repo,
            "commit-tree",
            git(repo, "mktree", input="").strip(),
            "-p",
            tips[1],
            "-m",
            "x\n\nEdda-Format: 1",
        ).strip()
        git(repo, "update-ref", "refs/edda/branches/c1", empty)
        report = mem.verify()
    texts = [p.message for p in report.problems]
    assert any("merge commit carries events" in t for t in texts), texts
    assert any("not a fork commit" in t for t in texts), texts
