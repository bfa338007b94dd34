"""Browsing commands: log, show, status."""

from __future__ import annotations

from typing import Annotated

from cyclopts import Parameter

from gitmem.cli.render import line, show_lines
from gitmem.cli.root import (
    DEFAULT_COMMON,
    DEFAULT_FILTERS,
    MAX_LOG_LIMIT,
    Common,
    FilterOptions,
    Output,
    app,
    check_branch,
    in_range,
    now_or_wall,
)
from gitmem.memory.describe import plural
from gitmem.memory.timespec import format_time
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg


@app.command
def log(
    *,
    filters: FilterOptions = DEFAULT_FILTERS,
    branch: str | None = None,
    all_branches: bool = False,
    limit: Annotated[int | None, Parameter(name=["--limit", "-n"])] = None,
    reverse: bool = False,
    no_redacted: Annotated[bool, Parameter(negative="")] = False,
    now: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """List events, newest first, as git log does (filters combine; repeat an option for OR).

    Parameters
    ----------
    branch
        Read this branch's memory instead of the current branch's.
    all_branches
        Events of every branch.
    limit
        Show only the newest N events.
    reverse
        Oldest first (with --limit: the newest N, oldest of them first, as git log -n N --reverse).
    no_redacted
        Leave redacted events out.
    now
        The time --since and --until count back from (reproducible output).
    """
    from gitmem.app import browse

    check_branch("--branch", branch)
    if limit is not None:
        in_range("--limit", limit, 1, MAX_LOG_LIMIT)
    target: BranchArg = CURRENT_BRANCH if branch is None else branch
    events = browse.log(
        common.repo,
        filters.filters(),
        now_us=now_or_wall(now),
        branch=target,
        all_branches=all_branches,
        limit=limit,
        include_redacted=not no_redacted,
        newest_first=not reverse,
    )
    return Output(
        {"events": [e.to_json() | {"id": e.id, "branch": e.branch} for e in events]},
        "\n".join(line(e) for e in events) or "no events",
        page=True,
    )


@app.command
def show(id: str, *, common: Common = DEFAULT_COMMON) -> Output:
    """Show one event in full.

    Parameters
    ----------
    id
        The event's id or a unique prefix of it.
    """
    from gitmem.app import browse

    event = browse.show(common.repo, id)
    return Output(
        event.to_json() | {"id": event.id, "branch": event.branch, "commit": event.commit},
        "\n".join(show_lines(event)),
        page=True,
    )


@app.command
def status(*, common: Common = DEFAULT_COMMON) -> Output:
    """Summarise this repository's memory."""
    from gitmem.app import browse

    info = browse.status(common.repo)
    last = format_time(info.last_event_time) if info.last_event_time else "never"
    text = (
        f"repository: {info.repository}\nbranch:     {info.branch or 'detached HEAD'} ({info.memory_ref})\n"
        f"events:     {info.events_on_branch} on this branch, {info.events_total} in all "
        f"({info.redacted} redacted) across {plural(info.memory_refs, 'memory ref')}\n"
        f"spool:      {info.spool_pending} pending, {info.spool_quarantined} quarantined\n"
        f"last event: {last}\nbackend:    {info.backend}, storage format {info.format}"
    )
    return Output(info.to_json(), text)
