"""What git knows about branches: reflogs, the trunk, code tips.

Memory follows code, so the memory layer asks these questions of the code
side of the repository. Reads go through files where git keeps them in a
stable format (reflogs) and fall back to the git CLI otherwise (reftable).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from gitmem.storage.backends.base import Backend
from gitmem.storage.gitconfig import Config, get_last
from gitmem.storage.locate import RepoLocation, read_git_output

HEADS = "refs/heads/"
REMOTES = "refs/remotes/"


class ReflogEntry(NamedTuple):
    old: str
    new: str
    subject: str


def reflog(location: RepoLocation, ref: str) -> list[ReflogEntry]:
    """The reflog of ``ref`` (``HEAD`` is this worktree's), oldest first; empty when none."""
    base = location.git_path if ref == "HEAD" else location.common_path
    path = os.path.join(base, "logs", ref)
    entries: list[ReflogEntry] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                head, _, subject = line.rstrip("\n").partition("\t")
                parts = head.split(" ", 2)
                if len(parts) >= 2:
                    entries.append(ReflogEntry(parts[0], parts[1], subject))
        return entries
    except FileNotFoundError:
        if not location.uses_reftable:
            return []
    out = read_git_output(["reflog", "show", "--format=%H%x00%gs", ref, "--"], location.cwd)
    for line in reversed((out or b"").decode("utf-8", "replace").splitlines()):
        sha, _, subject = line.partition("\0")
        entries.append(ReflogEntry("", sha, subject))
    return entries


def local_branches(backend: Backend) -> dict[str, str]:
    """Local branch name -> code tip."""
    return {ref[len(HEADS) :]: oid for ref, oid in backend.list_refs(HEADS).items()}


def code_tip(backend: Backend, branch: str) -> str | None:
    """The code commit of a local branch, else of a remote-tracking branch of that name."""
    tip = backend.read_ref(HEADS + branch)
    if tip is not None:
        return tip
    for ref, oid in sorted(backend.list_refs(REMOTES).items()):
        remote_branch = ref[len(REMOTES) :].partition("/")[2]
        if remote_branch == branch and not ref.endswith("/HEAD"):
            return oid
    return None


def _symbolic_target(location: RepoLocation, ref: str) -> str | None:
    text = None
    try:
        with open(os.path.join(location.common_path, ref), encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError:
        pass
    if text is not None and text.startswith("ref: "):
        return text[5:]
    if text is None and not location.uses_reftable:
        return None
    out = read_git_output(["symbolic-ref", "-q", ref], location.cwd)
    return (out or b"").decode().strip() or None


def trunk_branch(location: RepoLocation, backend: Backend, config: Config) -> str | None:
    """The repository's default branch: ``edda.trunk``, else what a remote's HEAD
    names (``origin`` first), else ``init.defaultBranch``, ``main`` or ``master``
    when such a local branch exists."""
    configured = get_last(config, "edda.trunk")
    if configured:
        return configured
    remotes = sorted(
        {ref[len(REMOTES) :].partition("/")[0] for ref in backend.list_refs(REMOTES)},
        key=lambda name: (name != "origin", name),
    )
    for remote in remotes:
        target = _symbolic_target(location, f"{REMOTES}{remote}/HEAD")
        if target and target.startswith(f"{REMOTES}{remote}/"):
            return target[len(f"{REMOTES}{remote}/") :]
    branches = local_branches(backend)
    for name in (get_last(config, "init.defaultBranch"), "main", "master"):
        if name and name in branches:
            return name
    return None


def remote_branches(backend: Backend) -> dict[str, list[str]]:
    """Branch name -> the remote-tracking branches of that name (``origin/x``), sorted."""
    out: dict[str, list[str]] = {}
    for ref in sorted(backend.list_refs(REMOTES)):
        short = ref[len(REMOTES) :]
        remote, _, branch = short.partition("/")
        if remote and branch and branch != "HEAD":
            out.setdefault(branch, []).append(short)
    return out
