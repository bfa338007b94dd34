"""Sharing commands: pull, push, sync, merge, branches (and branches --prune)."""

from __future__ import annotations

from gitmem.cli.render import sync_lines
from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app, check_branch
from gitmem.errors import UsageError
from gitmem.memory.describe import SHORT_ID, plural
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH


def _sync(common: Common, remote: str | None, *, pull: bool, push: bool, verb: str) -> Output:
    from gitmem.app import share

    report = share.sync(common.repo, remote, pull=pull, push=push)
    data = report.to_json()
    head = f"{verb} {report.remote}"
    if report.attempts > 1:
        head += f" ({report.attempts} attempts: the remote moved meanwhile)"
    lines = sync_lines(data)
    if report.held_back:
        names = [layout.branch_of_ref(r) or "detached HEAD" for r in report.held_back]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        lines.append(f"not pushed (edda.push={report.push_mode}): {shown}")
    if report.skipped_pruned:
        names = [layout.branch_of_ref(r) or "detached HEAD" for r in report.skipped_pruned]
        lines.append(f"not pulled (pruned here, nothing new): {', '.join(names)}")
    return Output(data, head + "\n" + "\n".join("  " + line for line in lines))


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

    edda.push chooses the memory branches sent: tracked (default: the trunk,
    the current branch, branches whose code is on REMOTE, and those it has
    already), current (the trunk and the current branch) or all;
    edda.pushBranch globs add more.

    Parameters
    ----------
    remote
        The git remote (default: edda.remote, else the current branch's remote, else origin).
    """
    return _sync(common, remote, pull=False, push=True, verb="push to")


@app.command
def sync(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Pull, then push: afterwards REMOTE holds this clone's memory of the
    branches edda.push selects, and this clone all of REMOTE's.

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
    from gitmem.app import share

    check_branch("BRANCH", branch)
    check_branch("--into", into)
    result = share.merge(common.repo, branch, CURRENT_BRANCH if into is None else into)
    return Output(
        result.to_json(),
        f"memory of {result.source} into {result.into}: {result.outcome}"
        + (f", +{plural(result.events, 'event')}" if result.events else ""),
    )


@app.command
def branches(
    *,
    prune: bool = False,
    dry_run: bool = False,
    force: bool = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """List memory branches: events, fork point, whether the git branch still exists.

    With --prune, remove the memory of branches whose git branch is gone
    (renamed, a removed worktree's, merged and deleted): only when other
    memory branches hold every event of it, unless --force. The trunk, the
    current branch, the detached HEAD chain, branches still on a remote and,
    even with --force, a branch holding the only copy of a redaction of an
    event that stays are kept. Remotes are not changed (a --remote option may
    come later): their copy stays, and a pull brings a pruned branch back
    only when it has new events.

    Parameters
    ----------
    prune
        Remove the memory of deleted branches that other memory branches contain.
    dry_run
        With --prune: list what would be removed and why the rest stays; change nothing.
    force
        With --prune: also remove unmerged memory, whose own events are lost.
    """
    from gitmem.app import share

    if (dry_run or force) and not prune:
        raise UsageError(
            "--dry-run and --force go with --prune", "git edda branches --prune --dry-run"
        )
    if prune:
        return _prune(common, force=force, dry_run=dry_run)
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


def _prune(common: Common, *, force: bool, dry_run: bool) -> Output:
    from gitmem.app import share

    entries = share.prune(common.repo, force=force, dry_run=dry_run)
    lines = []
    alive = 0
    for e in entries:
        name = e.name if e.name is not None else "(detached HEAD)"
        if e.action == "kept" and e.reason == "its git branch exists":
            alive += 1  # the ordinary case: one summary line
            continue
        verb = {"pruned": "pruned", "would prune": "would prune"}.get(e.action, "keeping")
        lines.append(f"{verb} {name} ({e.tip[:SHORT_ID]}): {e.reason}")
    if alive:
        lines.append(
            f"keeping {plural(alive, 'other memory branch', 'other memory branches')}: their git branch exists"
        )
    gone = sum(e.action != "kept" for e in entries)
    if not gone:
        lines.insert(0, "nothing to prune")
    elif dry_run:
        lines.append("dry run: nothing was changed (run without --dry-run to prune)")
    return Output({"branches": [e.to_json() for e in entries]}, "\n".join(lines))
