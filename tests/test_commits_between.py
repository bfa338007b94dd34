"""``Backend.commits_between``: the libgit2 backend asks git itself when
several tips are hidden (its walker is slow at that), and must answer as the
walker and the git-cli backend do."""

from __future__ import annotations

from pathlib import Path

from conftest import make_repo

from gitmem.memory.api import Memory
from gitmem.storage.backends.gitcli import GitCliBackend
from gitmem.storage.backends.libgit2 import Libgit2Backend, _rev_list


def test_every_way_gives_the_same_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=12, branches=3)
    with Memory.open(repo) as mem:
        old = dict(mem.ledger.memory_refs())
        for branch in ("main", "b1", "b2"):
            mem.note(f"a new note on {branch}", branch=branch)
            mem.note(f"another on {branch}", branch=branch)
        new = dict(mem.ledger.memory_refs())
        location = mem.location
    libgit2, gitcli = Libgit2Backend(location), GitCliBackend(location)
    try:
        include, exclude = sorted(new.values()), sorted(old.values())
        assert len(exclude) > 1  # the path that runs git rev-list
        # git answers (None would be the walker taking over, silently slow)
        asked = _rev_list(location, include, exclude)
        assert asked is not None and len(asked) == 6
        fast = set(libgit2.commits_between(include, exclude))
        assert fast == set(asked)
        assert fast == set(gitcli.commits_between(include, exclude))
        assert len(fast) == 6  # two new commits per chain
        # one hidden tip at a time: libgit2's own walker, the same commits
        walked: set[str] = set()
        for tip in include:
            for old_tip in exclude:
                walked |= set(libgit2.commits_between([tip], [old_tip]))
        assert fast <= walked
        assert set(libgit2.commits_between(include, [])) == set(gitcli.commits_between(include, []))
    finally:
        libgit2.close()
        gitcli.close()
