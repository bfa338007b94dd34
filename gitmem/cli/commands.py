"""The ``git edda`` commands: parse arguments, call the library, return an Output.

Every command accepts ``--json`` (machine-readable output on stdout) and
``-C/--repo PATH``. Nothing here prints: :mod:`gitmem.cli.main` does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from cyclopts import App, Parameter

from gitmem import __version__
from gitmem.errors import ExitCode, GitmemError, UsageError
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.memory.timespec import format_time, parse_time
from gitmem.records.names import EVENT_TYPES
from gitmem.storage.clock import wall_us

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


@dataclass
class Output:
    """What a command produced: data for --json, text for people, an exit code."""

    data: Any
    text: str = ""
    code: ExitCode = ExitCode.OK


@Parameter(name="*")
@dataclass(frozen=True)
class Common:
    json: Annotated[bool, Parameter(name="--json", negative="")] = False
    "Print machine-readable JSON on stdout."
    repo: Annotated[str | None, Parameter(name=["--repo", "-C"])] = None
    "Run as if started in this directory."


@Parameter(name="*")
@dataclass(frozen=True)
class Who:
    session: str | None = None
    "Session scope id (default: $GITMEM_SESSION)."
    capsule: str | None = None
    "Capsule the event belongs to."
    agent: str | None = None
    "Agent scope id (default: $GITMEM_AGENT, or claude-code inside Claude Code)."

    def kwargs(self, mem: Memory) -> dict[str, Any]:
        out: dict[str, Any] = {"session": self.session, "agent": self.agent}
        if self.capsule:
            out["capsule"] = mem.get(self.capsule).id
        return out


DEFAULT_COMMON = Common()
DEFAULT_WHO = Who()

app = App(
    name="git edda",
    help="gitmem: durable, branch-aware memory for AI coding agents, stored in this git repository.",
    version=__version__,
    help_format="plaintext",
)
capsule_app = App(name="capsule", help="Open, close and list capsules (sessions, workflow steps).")
app.command(capsule_app)


def _open(common: Common) -> Memory:
    from gitmem.memory.api import Memory  # lazily: read-only commands use the index instead

    return Memory.open(common.repo)


def _writer(common: Common) -> Memory:
    """Memory for a command that writes it: in a bare repository only after
    'git edda init --bare-ok' (memory there is usually a mistake: nobody
    works in a bare repository, and its memory would follow no checkout)."""
    from gitmem.storage.gitconfig import check_writable

    mem = _open(common)
    try:
        check_writable(mem.location, mem.config)
    except UsageError:
        mem.close()
        raise
    return mem


# Bounds of the numeric options. Results and candidates reach Tantivy and
# usearch, which abort the process on absurd sizes (a SIGABRT, not an error).
MAX_RESULTS = 10_000  # search --limit
MAX_ASK = 1_000  # ask --limit (ask searches four times as many)
MAX_LOG_LIMIT = 1_000_000_000  # log --limit
MAX_BUDGET = 1_000_000  # context --budget, in tokens


def in_range(option: str, value: int, low: int, high: int) -> int:
    """``value``, or a usage error naming ``option``'s range."""
    if not low <= value <= high:
        raise UsageError(
            f"{option} must be between {low:,} and {high:,}, not {value:,}",
            f"pass {option} N with N from {low:,} to {high:,}",
        )
    return value


def check_branch(option: str, name: str | None) -> str | None:
    """``name`` (a branch name given on the command line), or a usage error
    when git would not accept it as a branch name (an empty string included)."""
    from gitmem.records.validate import branch_problem

    if name is None:
        return None
    why = branch_problem(name)
    if why:
        raise UsageError(
            f"{option} {name[:80]!r} is not a branch name: it {why}",
            "give a branch name as 'git branch' lists it, or leave the option out",
        )
    return name


@contextmanager
def _reader(common: Common) -> Iterator[Any]:
    """What ``log`` and ``show`` read: the index, refreshed first (without
    embeddings, which they do not need), where a lookup takes milliseconds
    at 100,000 events and walking the ledger half a minute. Memory itself
    when the index cannot serve exactly: another process is rebuilding it (the
    view would miss the newest events) or it cannot be built here."""
    from gitmem.index.view import IndexView

    try:
        view = IndexView.open(common.repo, embed=False, wait=1.0)
    except (GitmemError, OSError):
        view = None
    if view is not None and not view.stale:
        with view:
            yield view
        return
    if view is not None:
        view.close()
    with _open(common) as mem:
        yield mem


def _line(event: Event) -> str:
    return f"{event.id[:12]}  {format_time(event.time)}  {event.type:<13} {event.summary(90)}"


def check_types(types: list[str] | None) -> None:
    """A usage error naming the valid types when one is unknown."""
    for name in types or []:
        if name not in EVENT_TYPES:
            raise UsageError(
                f"unknown event type {name!r}", f"use one of: {', '.join(EVENT_TYPES)}"
            )


def now_or_wall(now: str | None) -> int:
    """``--now`` as microseconds (relative to the wall clock), else the wall clock."""
    return parse_time(now, wall_us()) if now else wall_us()


def event_filter(
    source: Any,
    *,
    type: list[str] | None,
    session: list[str] | None,
    capsule: list[str] | None,
    actor: list[str] | None,
    tag: list[str] | None,
    path: list[str] | None,
    since: str | None,
    until: str | None,
    now_us: int,
    include_redacted: bool,
) -> EventFilter:
    """The filter the listing and search options describe (capsule prefixes
    resolved through ``source``, times relative to ``now_us``)."""
    check_types(type)
    return EventFilter(
        types=type or (),
        sessions=session or (),
        actors=actor or (),
        tags=tag or (),
        paths=path or (),
        capsules=[source.get(c).id for c in capsule or []],
        since=parse_time(since, now_us) if since else None,
        until=parse_time(until, now_us) if until else None,
        include_redacted=include_redacted,
    )


def _written(event: Event, what: str) -> Output:
    return Output(
        event.to_json() | {"id": event.id},
        f"{what} {event.id[:12]} on {event.branch or 'detached HEAD'}",
    )


@app.command
def init(
    *,
    uninstall: bool = False,
    no_hooks: bool = False,
    pre_push: bool = False,
    no_fetch: bool = False,
    bare_ok: bool = False,
    hooks_path_ok: bool = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Set up gitmem here (idempotent): state, git hooks, and a first pull when
    the remote has memory and this clone has none.

    --uninstall removes gitmem's git hooks (restoring any they chained); memory stays.
    --pre-push also installs a pre-push hook that pushes memory with the code.
    --no-hooks skips the git hooks; --no-fetch skips the first pull.
    --bare-ok sets gitmem up in a bare repository (recorded as edda.bareOk).
    --hooks-path-ok installs the hooks even when core.hooksPath points into
    the work tree (husky's .husky), where they change files the project shares.
    """
    with _open(common) as mem:
        if uninstall:
            report = mem.uninstall_hooks()
            restored = f"; restored {', '.join(report['restored'])}" if report["restored"] else ""
            return Output(
                report,
                f"removed gitmem hooks from {report['hooks_dir']}: {', '.join(report['removed']) or 'none'}{restored}",
            )
        if mem.location.is_bare and not uninstall:
            _allow_bare(mem, bare_ok)
        info = mem.init(
            hooks=not no_hooks,
            pre_push=pre_push,
            bootstrap=not no_fetch,
            hooks_path_ok=hooks_path_ok,
        )
    lines = [
        f"gitmem ready in {info['repository']} (memory of branch {info['branch'] or 'detached HEAD'} at {info['memory_ref']})"
    ]
    hooks = info["hooks"]
    if hooks:
        done = hooks["installed"] + hooks["updated"] + hooks["unchanged"] + hooks["chained"]
        lines.append(f"git hooks in {hooks['hooks_dir']}: {', '.join(done)}")
        if hooks["chained"]:
            lines.append(
                f"  chained existing hook(s), which still run first: {', '.join(hooks['chained'])}"
            )
        for hook, why in hooks["skipped"].items():
            lines.append(f"  skipped {hook}: {why}")
    boot = info["bootstrap"]
    if boot and boot.get("pulled"):
        lines.append(f"fetched memory from {boot['remote']}:")
        lines += ["  " + line for line in _sync_lines(boot["report"])]
    elif boot and boot.get("error"):
        lines.append(f"could not fetch memory from {boot['remote']}: {boot['error']}")
    return Output(info, "\n".join(lines))


def _allow_bare(mem: Memory, bare_ok: bool) -> None:
    """Refuse to set up a bare repository unless ``bare_ok``; then remember
    the choice (``edda.bareOk``) so that writing commands accept it."""
    from gitmem.storage.gitconfig import BARE_OK_KEY, get_bool
    from gitmem.storage.locate import run_git

    if get_bool(mem.config, BARE_OK_KEY, False):
        return
    if not bare_ok:
        raise UsageError(
            f"{mem.location.git_dir} is a bare repository: nobody works in it, so no"
            " hook would ever record anything and memory written here follows no checkout",
            "set gitmem up in a clone with a work tree; if memory belongs here, run"
            " 'git edda init --bare-ok'",
        )
    run_git(["config", BARE_OK_KEY, "true"], mem.location.cwd)
    mem.config[BARE_OK_KEY.lower()] = ["true"]


def _sync_lines(report: dict[str, Any]) -> list[str]:
    """People's view of a SyncReport (as JSON)."""
    lines = []
    if report.get("shallow_repaired"):
        lines.append("memory history was truncated by a shallow fetch: fetched it whole")
    for move in report["pulled"]:
        lines.append(
            f"pulled {_ref_name(move['ref'])}: {move['outcome']}, +{move['events']} event(s)"
        )
    if report["payloads_added"] or report["payloads_removed"]:
        lines.append(
            f"payloads: +{report['payloads_added']} received, -{report['payloads_removed']} removed by redactions"
        )
    for merge in report["code_merges"]:
        lines.append(
            f"merged memory of {merge['source']} into {merge['into']} (its code was merged): "
            f"{merge['outcome']}, +{merge['events']} event(s)"
        )
    for move in report["pushed"]:
        lines.append(
            f"pushed {_ref_name(move['ref'])}: {move['outcome']}, +{move['events']} event(s)"
        )
    if report["payloads_pushed"]:
        lines.append("pushed the payload store")
    if not lines:
        lines.append(
            "up to date" if report["remote_has_memory"] else "the remote has no memory yet"
        )
    return lines


def _ref_name(ref: str) -> str:
    from gitmem.records import layout

    branch = layout.branch_of_ref(ref)
    return (
        branch if branch is not None else ("detached HEAD" if ref == layout.DETACHED_REF else ref)
    )


def _sync(common: Common, remote: str | None, *, pull: bool, push: bool, verb: str) -> Output:
    with _writer(common) as mem:
        report = mem.sync(remote, pull=pull, push=push)
    data = report.to_json()
    head = f"{verb} {report.remote}"
    if report.attempts > 1:
        head += f" ({report.attempts} attempts: the remote moved meanwhile)"
    return Output(data, head + "\n" + "\n".join("  " + line for line in _sync_lines(data)))


@app.command
def pull(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Fetch memory from REMOTE (default: edda.remote, the branch's remote, origin) and merge it."""
    return _sync(common, remote, pull=True, push=False, verb="pull from")


@app.command
def push(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Push memory to REMOTE, first merging what it has (never forced)."""
    return _sync(common, remote, pull=False, push=True, verb="push to")


@app.command
def sync(remote: str | None = None, *, common: Common = DEFAULT_COMMON) -> Output:
    """Pull, then push: afterwards REMOTE and this clone hold the same memory."""
    return _sync(common, remote, pull=True, push=True, verb="sync with")


@app.command
def merge(branch: str, *, into: str | None = None, common: Common = DEFAULT_COMMON) -> Output:
    """Merge BRANCH's memory into the current branch's (or --into's): for squash
    and rebase merges, which git hooks cannot recognise."""
    check_branch("BRANCH", branch)
    check_branch("--into", into)
    with _writer(common) as mem:
        result = mem.merge(branch, into) if into else mem.merge(branch)
    return Output(
        result.to_json(),
        f"memory of {result.source} into {result.into}: {result.outcome}"
        + (f", +{result.events} event(s)" if result.events else ""),
    )


@app.command
def branches(*, common: Common = DEFAULT_COMMON) -> Output:
    """List memory branches: events, fork point, whether the git branch still exists."""
    with _reader(common) as source:  # the index counts each chain's events
        sizes = getattr(source, "chain_size", None)
        with _open(common) as mem:
            infos = mem.branches(sizes)
    rows = []
    for b in infos:
        marks = ("*" if b.current else " ") + ("T" if b.trunk else " ")
        name = b.name if b.name is not None else "(detached HEAD)"
        fork = f"  forked from {b.fork_source}" if b.fork_source else ""
        gone = "" if b.git_branch or b.name is None else "  (no git branch)"
        rows.append(f"{marks} {name:<30} {b.events:>6} events  {b.tip[:12]}{fork}{gone}")
    return Output([b.to_json() for b in infos], "\n".join(rows) or "no memory yet")


@app.command
def note(
    text: Annotated[str | None, Parameter(allow_leading_hyphen=True)] = None,
    *,
    message: Annotated[str | None, Parameter(name=["--message", "-m"])] = None,
    file: Annotated[
        Path | None, Parameter(name=["--file", "-F"], allow_leading_hyphen=True)
    ] = None,
    tag: list[str] | None = None,
    path: list[str] | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a note: TEXT, -m TEXT, -F FILE, or - (or -F -) to read standard input.

    Parameters
    ----------
    text
        The note ('-' reads it from standard input).
    message
        The note, as with git commit -m.
    file
        Read the note from this file ('-': standard input); for long text.
    tag
        A tag (repeatable).
    path
        A file the note is about (repeatable).
    """
    body = note_text(text, message, file)
    with _writer(common) as mem:
        return _written(
            mem.note(body, tags=tag or [], paths=path or [], **who.kwargs(mem)), "noted"
        )


def note_text(text: str | None, message: str | None, file: Path | None) -> str:
    """The text of a note from exactly one of its sources, refused when empty."""
    given = [s for s in (text, message, file) if s is not None]
    if len(given) != 1:
        raise UsageError(
            "give the note once: as TEXT, with -m TEXT, or with -F FILE"
            if given
            else "the note has no text",
            'git edda note "what you learnt" (or -F FILE, or - to read standard input)',
        )
    if file is not None or text == "-":
        data = sys.stdin.buffer.read() if file is None or str(file) == "-" else _read(file)
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("the note is not UTF-8 text") from None
    else:
        body = str(given[0])
    if not body.strip():
        raise UsageError("the note is empty", 'git edda note "what you learnt"')
    return body


@app.command
def decide(
    key: str,
    value: str,
    *,
    reason: str = "",
    scope: str = "",
    path: list[str] | None = None,
    tag: list[str] | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a decision KEY=VALUE; it supersedes the active decision on KEY."""
    from gitmem.memory.state import active_decision_id

    with _reader(common) as source:  # the index: no walk over every event
        previous = active_decision_id(source, key)
    with _writer(common) as mem:
        event = mem.decide(
            key,
            value,
            reason=reason,
            scope=scope,
            paths=path or [],
            tags=tag or [],
            supersedes=previous,
            **who.kwargs(mem),
        )
        status = (
            "binding" if not event.scope.get("agent") else "proposed (not binding until ratified)"
        )
        out = _written(event, "decided")
        out.text += f": {key} = {value}, {status}"
        return out


@app.command
def ratify(
    id: str, *, note: str = "", who: Who = DEFAULT_WHO, common: Common = DEFAULT_COMMON
) -> Output:
    """Ratify a decision, making it binding."""
    from gitmem.memory.state import active_decision_id

    with _reader(common) as source:  # resolving the id through the index
        decision = source.get(id)
        if decision.type == "decision":
            _not_superseded(source, decision, active_decision_id, "ratify")
            done = next(
                (
                    e
                    for e in source.events(EventFilter(types=["ratify"]))
                    if e.field("target") == decision.id
                ),
                None,
            )
            if done is not None:
                return _unchanged(decision, f"already ratified by {done.id[:12]}")
    with _writer(common) as mem:
        return _written(mem.ratify(decision, note=note, **who.kwargs(mem)), "ratified with")


def _not_superseded(source: Any, decision: Event, active_id: Any, verb: str) -> None:
    """A usage error when a later decision on the same key replaced ``decision``."""
    active = active_id(source, str(decision.field("key", "")))
    if active is not None and active != decision.id:
        raise UsageError(
            f"decision {decision.id[:12]} was superseded by {active[:12]} "
            f"on {decision.field('key')!r}: nothing to {verb}",
            f"{verb} the active decision ('git edda ask {decision.field('key')}' shows it)",
        )


def _unchanged(event: Event, why: str) -> Output:
    """Nothing written: the state asked for is already there."""
    return Output({"id": event.id, "unchanged": why}, f"{event.id[:12]}: {why}; nothing written")


@app.command
def checkpoint(
    *,
    next: str = "",
    summary: str = "",
    hypothesis: list[str] | None = None,
    rejected: list[str] | None = None,
    question: list[str] | None = None,
    path: list[str] | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a checkpoint: next step, hypotheses, rejected ideas ("idea: reason"), open questions."""
    pairs = []
    for item in rejected or []:
        idea, _, why = item.partition(":")
        pairs.append((idea.strip(), why.strip()))
    given = [next, summary, *(hypothesis or []), *(question or []), *(i for i, _ in pairs)]
    if not any(text.strip() for text in given):
        raise UsageError(
            "an empty checkpoint says nothing (and would hide the current one)",
            "give at least --next, --summary, --hypothesis, --rejected or --question",
        )
    with _writer(common) as mem:
        event = mem.checkpoint(
            next=next,
            summary=summary,
            hypotheses=hypothesis or [],
            rejected=pairs,
            open_questions=question or [],
            paths=path or [],
            **who.kwargs(mem),
        )
        return _written(event, "checkpoint")


@app.command
def learn(
    text: str,
    *,
    kind: Literal["learning", "pattern", "mistake"] = "learning",
    topic: str = "",
    path: list[str] | None = None,
    tag: list[str] | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a learning, pattern or mistake."""
    with _writer(common) as mem:
        return _written(
            mem.learn(kind, text, topic=topic, paths=path or [], tags=tag or [], **who.kwargs(mem)),
            f"{kind}",
        )


@app.command
def log(
    *,
    type: list[str] | None = None,
    session: list[str] | None = None,
    capsule: list[str] | None = None,
    actor: list[str] | None = None,
    tag: list[str] | None = None,
    path: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    branch: str | None = None,
    all_branches: bool = False,
    limit: int | None = None,
    no_redacted: bool = False,
    now: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """List events, oldest first (filters combine; repeat an option for OR)."""
    check_branch("--branch", branch)
    if limit is not None:
        in_range("--limit", limit, 1, MAX_LOG_LIMIT)
    now_us = now_or_wall(now)
    with _reader(common) as mem:
        where = event_filter(
            mem,
            type=type,
            session=session,
            capsule=capsule,
            actor=actor,
            tag=tag,
            path=path,
            since=since,
            until=until,
            now_us=now_us,
            include_redacted=not no_redacted,
        )
        kw: dict[str, Any] = {"all_branches": all_branches, "limit": limit}
        if branch is not None:
            kw["branch"] = branch
        events = mem.events(where, **kw)
    return Output(
        [e.to_json() | {"id": e.id, "branch": e.branch} for e in events],
        "\n".join(_line(e) for e in events) or "no events",
    )


@app.command
def show(id: str, *, common: Common = DEFAULT_COMMON) -> Output:
    """Show one event in full (id or unique prefix)."""
    with _reader(common) as mem:
        event = mem.get(id)
    lines = [
        f"id:      {event.id}",
        f"type:    {event.type}",
        f"time:    {format_time(event.time)} ({event.time})",
        f"branch:  {event.branch or 'detached HEAD'}",
        f"commit:  {event.commit}",
    ]
    lines += [f"{k + ':':<8} {v}" for k, v in sorted(event.scope.items()) if k != "branch"]
    if event.capsule:
        lines.append(f"capsule: {event.capsule}")
    if event.redacted:
        lines.append("body:    [redacted]")
    elif event.body is None:
        lines.append("body:    [payload missing: run 'git edda verify']")
    else:
        for key, value in sorted(event.body.items()):
            lines.append(f"{key}: {value}")
    return Output(
        event.to_json() | {"id": event.id, "branch": event.branch, "commit": event.commit},
        "\n".join(lines),
    )


@capsule_app.command(name="open")
def capsule_open(
    kind: Literal["session", "workflow", "node"],
    *,
    intent: str = "",
    parent: str | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Open a capsule; prints its id."""
    from gitmem.capture.active import write_active

    with _writer(common) as mem:
        parent_id = mem.get(parent).id if parent else None
        event = mem.open_capsule(kind, intent, parent=parent_id, **who.kwargs(mem))
        # git hooks (post-commit) link commits to the capsule opened last here
        write_active(
            mem.location,
            session=event.scope.get("session"),
            capsule=event.id,
            agent=event.scope.get("agent"),
        )
        return _written(event, f"opened {kind} capsule")


@capsule_app.command(name="close")
def capsule_close(
    id: str, *, summary: str = "", who: Who = DEFAULT_WHO, common: Common = DEFAULT_COMMON
) -> Output:
    """Close a capsule with a summary."""
    from gitmem.capture.active import clear_active
    from gitmem.memory.state import capsules_in

    with _reader(common) as source:  # the index: no walk over every event
        opened = source.get(id)
        closed = any(c.id == opened.id and not c.is_open for c in capsules_in(source))
    with _writer(common) as mem:
        kwargs = who.kwargs(mem)
        kwargs.pop("capsule", None)
        event = mem.close_capsule(opened, summary, closed=closed, **kwargs)
        clear_active(mem.location, capsule=event.capsule)
        return _written(event, "closed with")


@capsule_app.command(name="list")
def capsule_list(
    *, open_only: bool = False, all_branches: bool = False, common: Common = DEFAULT_COMMON
) -> Output:
    """List capsules."""
    from gitmem.memory.state import capsules_in

    with _reader(common) as source:
        found = capsules_in(source, all_branches=all_branches)
    capsules = [c for c in found if c.is_open or not open_only]
    rows = [
        f"{c.id[:12]}  {c.kind:<8} {'open  ' if c.is_open else 'closed'}  {c.events:>4} events  {c.intent}"
        for c in capsules
    ]
    return Output(
        [c.__dict__ | {"open": c.is_open} for c in capsules], "\n".join(rows) or "no capsules"
    )


@app.command
def pin(
    id: str,
    *,
    reason: str = "",
    expires: str | None = None,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Pin an event (or summary:CAPSULE) into every context pack; --expires 2026-12-01 or 7d ahead."""
    from gitmem.memory.state import active_decision_id, pins_in_force

    now = wall_us()
    until = None
    if expires:
        until = parse_time(expires, now)
        if expires.strip()[-1:] in "smhdw" and not expires.strip().isdigit():
            until = now + (now - until)  # "7d" means seven days from now
        if until <= now:
            raise UsageError(
                f"--expires {expires} is in the past: the pin would be over at once",
                "give a later date, or an age ahead such as 7d",
            )
    target, summary = _pin_target(common, id)
    with _reader(common) as source:
        if target.type == "decision" and not summary:
            _not_superseded(source, target, active_decision_id, "pin")
        key = ("summary:" if summary else "") + target.id
        if any(p.target == key for p in pins_in_force(source, now=now)) and until is None:
            return _unchanged(target, "already pinned")
    with _writer(common) as mem:
        event = mem.pin(target, reason=reason, expires=until, summary=summary, **who.kwargs(mem))
        return _written(event, "pinned with")


@app.command
def unpin(id: str, *, who: Who = DEFAULT_WHO, common: Common = DEFAULT_COMMON) -> Output:
    """Remove a pin."""
    from gitmem.memory.state import pins_in_force

    target, summary = _pin_target(common, id)
    key = ("summary:" if summary else "") + target.id
    with _reader(common) as source:
        if not any(p.target == key for p in pins_in_force(source, now=wall_us())):
            return _unchanged(target, "not pinned")
    with _writer(common) as mem:
        return _written(mem.unpin(target, summary=summary, **who.kwargs(mem)), "unpinned with")


def _pin_target(common: Common, id: str) -> tuple[Event, bool]:
    """The event ID (or summary:ID) names, looked up through the index, and
    whether its summary is meant."""
    summary = id.startswith("summary:")
    with _reader(common) as source:
        return source.get(id.removeprefix("summary:")), summary


@app.command
def pins(*, now: str | None = None, common: Common = DEFAULT_COMMON) -> Output:
    """List pins in force (--now makes the answer reproducible)."""
    from gitmem.memory.state import pins_in_force

    now_us = now_or_wall(now)
    with _reader(common) as source:
        found = pins_in_force(source, now=now_us)
    rows = [
        f"{p.pin.id[:12]}  -> {p.target[:20]:<20} {p.target_event.summary(60) if p.target_event else ''}"
        for p in found
    ]
    data = [
        {
            "pin": p.pin.id,
            "target": p.target,
            "reason": p.pin.field("reason", ""),
            "expires": p.pin.field("expires"),
        }
        for p in found
    ]
    return Output(data, "\n".join(rows) or "no pins")


@app.command
def redact(
    id: str,
    *,
    reason: str,
    purge: bool = False,
    who: Who = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Remove an event's payload (its envelope stays); --purge also destroys the local bytes."""
    with _writer(common) as mem:
        event = mem.redact(id, reason, **who.kwargs(mem))
        data: dict[str, Any] = {"redaction": event.id, "target": event.field("target")}
        text = f"redacted {str(event.field('target'))[:12]} (redaction {event.id[:12]})"
        if purge:
            data["purge"] = mem.purge()
            text += f"; purged {data['purge']['destroyed']} object(s) from the local store"
        else:
            text += "; run 'git edda gc' to destroy the bytes in the local object store"
        text += _refresh_index(mem, data)
    return Output(data, text + ". Rotate any leaked secret: remotes may still hold it.")


def _refresh_index(mem: Memory, data: dict[str, Any]) -> str:
    """Refresh the search index now (when there is one), so that its copy of
    redacted text is gone when ``redact`` or ``gc`` returns, not at the next
    query; notes what it did in ``data`` and returns a phrase for people."""
    from gitmem.index.refresh import refresh_existing

    try:
        report = refresh_existing(mem)
    except GitmemError as exc:
        exc.message = f"the search index may still hold redacted text: {exc.message}"
        exc.hint = "run 'git edda index' to remove it"
        raise
    if report is None:
        return ""
    data["index_redacted"] = report.redacted
    return f"; removed {report.redacted} from the search index" if report.redacted else ""


@app.command
def gc(*, common: Common = DEFAULT_COMMON) -> Output:
    """Destroy redacted payload bytes in the local object store and repack
    (and remove redacted text from the search index)."""
    with _writer(common) as mem:
        result = mem.purge()
        index = _refresh_index(mem, result)
    return Output(
        result,
        f"destroyed {result['destroyed']} redacted object(s); {result['still_referenced']} still used elsewhere{index}",
    )


@app.command
def verify(*, common: Common = DEFAULT_COMMON) -> Output:
    """Re-derive every digest and link; exit 4 when anything is wrong."""
    with _open(common) as mem:
        report = mem.verify()
    lines = [
        f"checked {report.refs} ref(s), {report.commits} commit(s), {report.events} event(s), "
        f"{report.payloads} payload(s), {report.redacted} redacted"
    ]
    lines += [f"problem: {p}" for p in report.problems]
    lines += [f"warning: {w}" for w in report.warnings]
    lines.append("ok" if report.ok else f"{len(report.problems)} problem(s) found")
    return Output(
        report.to_json(), "\n".join(lines), ExitCode.OK if report.ok else ExitCode.VERIFY_FAILED
    )


@app.command(name="export")
def export_(
    *,
    output: Path | None = None,
    format: Literal["json", "parquet"] = "json",
    branch: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Export memory (all branches unless --branch) as a JSON bundle or Parquet."""
    from gitmem.memory.bundle import events_to_export, export_json, export_parquet

    check_branch("--branch", branch)
    if output is not None:
        _check_output(output)
    with _open(common) as mem:
        events = events_to_export(mem, branch)
    if format == "parquet":
        if output is None:
            raise UsageError("--format parquet needs --output FILE")
        with _writing(output):
            export_parquet(events, output)
        return Output(
            {"events": len(events), "output": str(output)},
            f"wrote {len(events)} events to {output}",
        )
    data = export_json(events)
    if output is None:
        sys.stdout.buffer.write(data)
        return Output({"events": len(events)}, "")
    with _writing(output):
        output.write_bytes(data)
    return Output(
        {"events": len(events), "output": str(output)}, f"wrote {len(events)} events to {output}"
    )


@app.command(name="import")
def import_(
    file: Annotated[Path, Parameter(allow_leading_hyphen=True)],
    *,
    on_conflict: Literal["skip", "overwrite", "error"] = "skip",
    dry_run: bool = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Import a bundle written by export ('-' reads standard input)."""
    from gitmem.memory.bundle import import_bundle

    data = sys.stdin.buffer.read() if str(file) == "-" else _read(file)
    with _writer(common) as mem:
        result = import_bundle(mem, data, strategy=on_conflict, dry_run=dry_run)
    verb = "would import" if dry_run else "imported"
    lines = [
        f"{'would redact' if dry_run else 'redacted'} {eid[:12]} (the bundle carries its redaction)"
        for eid in result.redacts
    ]
    lines.append(
        f"{verb} {result.imported} event(s); {result.skipped} skipped, "
        f"{result.overwritten} restored, {result.redactions_applied} redaction(s) "
        f"{'to apply' if dry_run else 'applied'}"
    )
    return Output(result.to_json(), "\n".join(lines))


def _check_output(output: Path) -> None:
    """Refuse, before any work, an output path that cannot be a file."""
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory", "name a file to write")
    parent = output.parent
    if not parent.is_dir():
        raise UsageError(
            f"--output {output}: the directory {parent} does not exist",
            "create it first, or name a file in an existing directory",
        )


@contextmanager
def _writing(output: Path) -> Iterator[None]:
    """Turn a failure to write the file the user named (a full disk, no
    permission, a path that is not a file) into a usage error; a file this
    command created and could not finish is removed."""
    existed = os.path.lexists(output)
    try:
        yield
    except OSError as exc:
        if not existed and output.is_file():
            with suppress(OSError):
                output.unlink()
        reason = exc.strerror or str(exc)
        raise UsageError(
            f"cannot write {output}: {' '.join(reason.split())}",
            "check that the directory exists and is writable, that the path is not a"
            " directory, and that the disk has room",
        ) from None


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}", "check the path") from None


@app.command
def flush(*, common: Common = DEFAULT_COMMON) -> Output:
    """Commit events waiting in the capture spool."""
    # not _writer: in a bare repository too, acknowledged events must land
    # (every read flushes them anyway)
    with _open(common) as mem:
        result = mem.flush()
    text = f"flushed {result.events} event(s) from {result.files} spool file(s)"
    if result.quarantined:
        text += f"; {len(result.quarantined)} unreadable file(s) kept in {Path(result.quarantined[0]).parent}"
    return Output(result.__dict__, text)


@app.command
def status(*, common: Common = DEFAULT_COMMON) -> Output:
    """Summarise this repository's memory."""
    with _reader(common) as source:
        counts = source.counts(source.branch) if hasattr(source, "counts") else None
    with _open(common) as mem:
        info = mem.status(counts)
    last = format_time(info["last_event_time"]) if info["last_event_time"] else "never"
    text = (
        f"repository: {info['repository']}\nbranch:     {info['branch'] or 'detached HEAD'} ({info['memory_ref']})\n"
        f"events:     {info['events_on_branch']} on this branch, {info['events_total']} in all "
        f"({info['redacted']} redacted) across {info['memory_refs']} memory ref(s)\n"
        f"spool:      {info['spool_pending']} pending, {info['spool_quarantined']} quarantined\n"
        f"last event: {last}\nbackend:    {info['backend']}, storage format {info['format']}"
    )
    return Output(info, text)


__all__ = ["Output", "app"]


# The retrieval commands register themselves on ``app``.
from gitmem.cli import retrieve as _retrieve  # noqa: E402, F401
