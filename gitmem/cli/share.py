"""Sharing commands: pull, push, sync, merge, branches."""

from __future__ import annotations

from gitmem.app import share
from gitmem.cli.render import sync_lines
from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app, check_branch
from gitmem.memory.describe import SHORT_ID, plural
from gitmem.records.brancharg import CURRENT_BRANCH


def _sync(common: Common, remote: str | None, *, pull: bool, push: bool, verb: str) -> Output:
    report = share.sync(common.repo, remote, pull=pull, push=push)
    data = report.to_json()
    head = f"{verb} {report.remote}"
    if report.attempts > 1:
        head += f" ({report.attempts} attempts: the remote moved meanwhile)"
    return Output(data, head + "\n" + "\n".join("  " + line for line in sync_lines(data)))


@app.command
def pull(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Fetch memory from REMOTE and merge it.

    Parameters
    ----------
    remote
        The git remote (default: edda.remote, else the current branch's remote, else origin).
    """
    return _sync(common, remote, pull=True, push=False, verb="pull from")


@app.command
def push(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Push memory to REMOTE, first merging what it has (never forced).

    Parameters
    ----------
    remote
        The git remote (default: edda.remote, else the current branch's remote, else origin).
    """
    return _sync(common, remote, pull=False, push=True, verb="push to")


@app.command
def sync(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Pull, then push: afterwards REMOTE and this clone hold the same memory.

    Parameters
    ----------
    remote
        The git remote (default: edda.remote, else the current branch's remote, else origin).
    """
    return _sync(common, remote, pull=True, push=True, verb="sync with")


@app.command
def merge(branch: str, *, into: str | None = None, common: Common = DEFAULT_COMMON) -> Output:
    """Merge BRANCH's memory into the current branch's (or --into's): for squash
    and rebase merges, which git hooks cannot recognise.

    Parameters
    ----------
    branch
        The branch whose memory is merged.
    into
        The branch whose memory receives it (default: the current branch).
    """
    check_branch("BRANCH", branch)
    check_branch("--into", into)
    result = share.merge(common.repo, branch, CURRENT_BRANCH if into is None else into)
    return Output(
        result.to_json(),
        f"memory of {result.source} into {result.into}: {result.outcome}"
        + (f", +{plural(result.events, 'event')}" if result.events else ""),
    )


@app.command
def branches(*, common: Common = DEFAULT_COMMON) -> Output:
    """List memory branches: events, fork point, whether the git branch still exists."""
    infos = share.branches(common.repo)
    rows = []
    for b in infos:
        marks = ("*" if b.current else " ") + ("T" if b.trunk else " ")
        name = b.name if b.name is not None else "(detached HEAD)"
        fork = f"  forked from {b.fork_source}" if b.fork_source else ""
        gone = "" if b.git_branch or b.name is None else "  (no git branch)"
        events = plural(b.events, "event")
        rows.append(f"{marks} {name:<30} {events:>13}  {b.tip[:SHORT_ID]}{fork}{gone}")
    return Output(
        {"branches": [b.to_json() for b in infos]}, "\n".join(rows) or "no memory yet", page=True
    )
