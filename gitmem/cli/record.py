"""Recording commands: note, decide, ratify, checkpoint, learn, pin, unpin, pins, capsule."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

from cyclopts import Parameter

from gitmem.app import record
from gitmem.cli.render import recorded, sid, written
from gitmem.cli.root import (
    DEFAULT_COMMON,
    DEFAULT_WHO,
    Common,
    Output,
    WhoOptions,
    app,
    capsule_app,
    now_or_wall,
)
from gitmem.errors import UsageError
from gitmem.memory.describe import plural
from gitmem.memory.timespec import parse_time
from gitmem.storage.clock import wall_us


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
    who: WhoOptions = DEFAULT_WHO,
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
    event = record.note(common.repo, body, tags=tag or [], paths=path or [], who=who.who())
    return written(event, "noted")


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
        data = sys.stdin.buffer.read() if file is None or str(file) == "-" else read_file(file)
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("the note is not UTF-8 text") from None
    else:
        body = str(given[0])
    if not body.strip():
        raise UsageError("the note is empty", 'git edda note "what you learnt"')
    return body


def read_file(file: Path) -> bytes:
    """The bytes of a file the user named, or a usage error saying why not."""
    try:
        return file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}", "check the path") from None


@app.command
def decide(
    key: str,
    value: str,
    *,
    reason: str = "",
    scope: str = "",
    path: list[str] | None = None,
    tag: list[str] | None = None,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a decision KEY=VALUE; it supersedes the active decision on KEY.

    Parameters
    ----------
    key
        What is decided (e.g. db.engine); a later decision on the key supersedes this one.
    value
        The choice made.
    reason
        Why.
    scope
        Where the decision applies (free text, e.g. "the sync layer").
    path
        A file the decision is about (repeatable).
    tag
        A tag (repeatable).
    """
    result = record.decide(
        common.repo,
        key,
        value,
        reason=reason,
        scope=scope,
        paths=path or [],
        tags=tag or [],
        who=who.who(),
    )
    status = "binding" if result.binding else "proposed (not binding until ratified)"
    out = written(result.event, "decided")
    out.text += f": {key} = {value}, {status}"
    return out


@app.command
def ratify(
    id: str, *, note: str = "", who: WhoOptions = DEFAULT_WHO, common: Common = DEFAULT_COMMON
) -> Output:
    """Ratify a decision, making it binding.

    Parameters
    ----------
    id
        The decision's id (or a unique prefix).
    note
        A remark recorded with the ratification.
    """
    return recorded(record.ratify(common.repo, id, note=note, who=who.who()), "ratified with")


@app.command
def checkpoint(
    *,
    next: str = "",
    summary: str = "",
    hypothesis: list[str] | None = None,
    rejected: list[str] | None = None,
    question: list[str] | None = None,
    path: list[str] | None = None,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a checkpoint: next step, hypotheses, rejected ideas ("idea: reason"), open questions.

    Parameters
    ----------
    next
        The next step.
    summary
        Where the work stands.
    hypothesis
        A working hypothesis (repeatable).
    rejected
        An idea tried and dropped, as "idea: reason" (repeatable).
    question
        An open question (repeatable).
    path
        A file the work is about (repeatable).
    """
    pairs = []
    for item in rejected or []:
        idea, _, why = item.partition(":")
        pairs.append((idea.strip(), why.strip()))
    event = record.checkpoint(
        common.repo,
        next=next,
        summary=summary,
        hypotheses=hypothesis or [],
        rejected=pairs,
        open_questions=question or [],
        paths=path or [],
        who=who.who(),
    )
    return written(event, "checkpoint")


@app.command
def learn(
    text: str,
    *,
    kind: Literal["learning", "pattern", "mistake"] = "learning",
    topic: str = "",
    path: list[str] | None = None,
    tag: list[str] | None = None,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Record a learning, pattern or mistake.

    Parameters
    ----------
    text
        What was learnt.
    kind
        A learning (a fact), a pattern (a way of doing things) or a mistake (to avoid).
    topic
        What it is about, in a few words.
    path
        A file it is about (repeatable): context packs show it when the file is in play.
    tag
        A tag (repeatable).
    """
    event = record.learn(
        common.repo, text, kind=kind, topic=topic, paths=path or [], tags=tag or [], who=who.who()
    )
    return written(event, kind)


def _expiry(expires: str | None, now: int) -> int | None:
    """``--expires`` as microseconds: a date, or an age ahead such as 7d."""
    if not expires:
        return None
    until = parse_time(expires, now)
    if expires.strip()[-1:] in "smhdw" and not expires.strip().isdigit():
        until = now + (now - until)  # "7d" means seven days from now
    if until <= now:
        raise UsageError(
            f"--expires {expires} is in the past: the pin would be over at once",
            "give a later date, or an age ahead such as 7d",
        )
    return until


@app.command
def pin(
    id: str,
    *,
    reason: str = "",
    expires: str | None = None,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Pin an event (or summary:CAPSULE) into every context pack.

    Parameters
    ----------
    id
        The event's id or unique prefix; summary:ID pins a capsule's summary.
    reason
        Why it matters.
    expires
        When the pin ends: a date (2026-12-01) or an age ahead (7d, 12h).
    """
    now = wall_us()
    result = record.pin(
        common.repo, id, reason=reason, expires=_expiry(expires, now), now=now, who=who.who()
    )
    return recorded(result, "pinned with")


@app.command
def unpin(id: str, *, who: WhoOptions = DEFAULT_WHO, common: Common = DEFAULT_COMMON) -> Output:
    """Remove a pin.

    Parameters
    ----------
    id
        The pinned event's id or unique prefix (summary:ID for a summary pin).
    """
    return recorded(record.unpin(common.repo, id, now=wall_us(), who=who.who()), "unpinned with")


@app.command
def pins(*, now: str | None = None, common: Common = DEFAULT_COMMON) -> Output:
    """List pins in force.

    Parameters
    ----------
    now
        The time to answer for (a date or an age ago such as 2d): reproducible output.
    """
    found = record.pins(common.repo, now=now_or_wall(now))
    rows = []
    for p in found:
        kind, _, target = p.target.rpartition(":")  # "summary:<capsule id>" or an event id
        shown = f"{kind}:{sid(target)}" if kind else sid(target)
        about = p.target_event.summary(60) if p.target_event else "summary of the capsule"
        rows.append(f"{sid(p.pin.id)}  -> {shown}  {about}")
    data = [
        {
            "pin": p.pin.id,
            "target": p.target,
            "reason": p.pin.field("reason", ""),
            "expires": p.pin.field("expires"),
        }
        for p in found
    ]
    return Output({"pins": data}, "\n".join(rows) or "no pins", page=True)


@capsule_app.command(name="open")
def capsule_open(
    kind: Literal["session", "workflow", "node"],
    *,
    intent: str = "",
    parent: str | None = None,
    who: WhoOptions = DEFAULT_WHO,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Open a capsule; prints its id.

    Parameters
    ----------
    kind
        A session (an agent's or a person's sitting), a workflow, or a node (a workflow step).
    intent
        What the capsule is for.
    parent
        The capsule this one is part of (id or unique prefix).
    """
    opened = record.open_capsule(common.repo, kind, intent=intent, parent=parent, who=who.who())
    out = written(opened.event, f"opened {kind} capsule")
    out.data["auto_closed"] = [e.field("capsule") for e in opened.auto_closed]
    out.data["still_open"] = [c.id for c in opened.still_open]
    lines = [out.text + " (now the current capsule: events recorded here belong to it)"]
    for closing in opened.auto_closed:
        lines.append(f"closed {str(closing.field('capsule'))[:12]}: {closing.field('summary')}")
    for other in opened.still_open:
        lines.append(
            f"warning: capsule {other.id[:12]} ({other.kind}: {other.intent or 'no intent'}) is"
            f" still open; close it with 'git edda capsule close {other.id[:12]}'"
        )
    out.text = "\n".join(lines)
    return out


@capsule_app.command(name="close")
def capsule_close(
    id: str, *, summary: str = "", who: WhoOptions = DEFAULT_WHO, common: Common = DEFAULT_COMMON
) -> Output:
    """Close a capsule with a summary.

    Parameters
    ----------
    id
        The capsule's id or unique prefix.
    summary
        What came of it.
    """
    event = record.close_capsule(common.repo, id, summary=summary, who=who.who())
    return written(event, "closed with")


@capsule_app.command(name="list")
def capsule_list(
    *, open_only: bool = False, all_branches: bool = False, common: Common = DEFAULT_COMMON
) -> Output:
    """List capsules.

    Parameters
    ----------
    open_only
        Only capsules still open.
    all_branches
        Capsules of every branch, not only the current one's.
    """
    capsules = record.capsules(common.repo, open_only=open_only, all_branches=all_branches)
    rows = [
        f"{sid(c.id)}  {c.kind:<8} {'open  ' if c.is_open else 'closed'}"
        f"  {plural(c.events, 'event'):>11}  {c.intent}"
        for c in capsules
    ]
    return Output(
        {"capsules": [c.__dict__ | {"open": c.is_open} for c in capsules]},
        "\n".join(rows) or "no capsules",
        page=True,
    )
