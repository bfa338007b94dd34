"""The hook events that read memory: sessions, context packs, warnings.

These load the application layer (the index, pygit2, the embedder): they run
once per session, once per prompt, and before edits, never on the capture
path. Each returns the text to inject (None: nothing).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from typing import TYPE_CHECKING, Any

from gitmem.agents import state
from gitmem.errors import UsageError

if TYPE_CHECKING:
    from gitmem.agents.hooks import HookCall
    from gitmem.memory.event import Event

PROMPT_HITS = 5  # search hits a prompt's block shows
HIT_WIDTH = 160  # characters per hit line
# What a prompt's block leaves out: the agent's own trail (it just lived it).
NOT_MEMORY = frozenset(
    {
        "prompt",
        "observation",
        "capsule_open",
        "pin",
        "unpin",
        "ratify",
        "redaction",
        "commit_rewrite",
    }
)
WARNED_KEPT = 200  # edit warnings remembered per session (not repeated)
# edda.claude.sessionTTL: Claude Code keeps a transcript 30 days after its last
# activity (cleanupPeriodDays); a session idle longer cannot be resumed.
DEFAULT_SESSION_TTL = "30d"


def _now() -> int:
    from gitmem.storage.clock import wall_us

    return wall_us()


# SessionStart ----------------------------------------------------------------------
def session_start(call: HookCall) -> str | None:
    """Open or continue the session's capsule, then the context pack."""
    from gitmem.app import retrieve

    _sweep(call)
    if call.session:
        _ensure_capsule(call)
        _export_session(call.session)
    pack = retrieve.context(call.repo, None, now_us=_now(), budget=call.budget)
    text = pack.to_markdown().strip()
    return text or None


def _sweep(call: HookCall) -> None:
    """Remove the state files of sessions idle past ``edda.claude.sessionTTL``
    (at most once a day; a failure is logged and costs the pack nothing)."""
    try:
        ttl = session_ttl(call.config)
        if ttl is not None:
            state.sweep(call.location, ttl, keep=call.session)
    except Exception as exc:
        call.log(f"session state sweep failed: {type(exc).__name__}: {exc}")


def session_ttl(config: dict[str, list[str]]) -> float | None:
    """``edda.claude.sessionTTL`` in seconds (None: never sweep), read like
    ``edda.capsuleIdle``: an age (``30d``, ``2w``, ``12h``), plain seconds,
    or ``0``/``never``/``off``."""
    from gitmem.memory.timespec import parse_time
    from gitmem.storage.gitconfig import get_last

    text = (get_last(config, "edda.claude.sessionTTL") or DEFAULT_SESSION_TTL).strip().lower()
    if text in ("0", "never", "off"):
        return None
    if text.isascii() and text.isdigit() and len(text) <= 12:
        return float(text)
    if not re.fullmatch(r"\d{1,6}\s*[smhdw]", text):
        raise UsageError(
            f"git config edda.claude.sessionTTL = {text!r} is not an age",
            "set it to an age such as 30d or 2w, or 0 to keep session state forever",
        )
    return -parse_time(text, 0) / 1_000_000


def _ensure_capsule(call: HookCall) -> str:
    """The session's open capsule, made current; opened when there is none. A
    session resumed after it ended gets a new capsule whose parent is the
    ended one (a closed capsule stays closed)."""
    from gitmem.app import record
    from gitmem.capture.active import write_active

    session = call.session
    assert session is not None
    mine = sorted(
        (c for c in record.capsules(call.repo) if c.session == session), key=lambda c: c.opened
    )
    current = [c for c in mine if c.is_open]
    if current:
        capsule = current[-1].id
        write_active(call.location, session=session, capsule=capsule, agent=call.agent)
    else:
        source = call.payload.get("source")
        how = source if isinstance(source, str) and source.isalnum() else "startup"
        opened = record.open_capsule(
            call.repo,
            "session",
            intent=f"{call.agent} session {session} ({how})",
            parent=mine[-1].id if mine else None,
            who=record.Who(session=session, agent=call.agent),
        )
        capsule = opened.event.id
    data = call.state()
    data["capsule"] = capsule
    call.save_state(data)
    return capsule


def _export_session(session: str) -> None:
    """Give the session's Bash commands ``GITMEM_SESSION`` (Claude Code sources
    ``$CLAUDE_ENV_FILE``): ``git edda decide`` run by the agent then lands in
    the session's capsule like the hooks' events."""
    path = os.environ.get("CLAUDE_ENV_FILE")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"export GITMEM_SESSION={shlex.quote(session)}\n")


# UserPromptSubmit --------------------------------------------------------------------
def prompt_block(call: HookCall) -> str | None:
    """Memory relevant to the prompt, a few lines; None when there is none, or
    when it is the block injected last time in this session."""
    from gitmem.app import retrieve

    prompt = call.payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    result = retrieve.search(call.repo, prompt[:2000], now_us=_now(), limit=PROMPT_HITS * 3)
    events = [h.event for h in result.hits if h.event.type not in NOT_MEMORY][:PROMPT_HITS]
    if not events:
        return None
    lines = [f"- {_line(e)}" for e in events]
    block = "Memory related to this prompt (git edda show ID for the whole record):\n" + "\n".join(
        lines
    )
    digest = hashlib.sha256(block.encode("utf-8")).hexdigest()
    data = call.state()
    if data.get("last_block") == digest:
        return None
    data["last_block"] = digest
    call.save_state(data)
    return block


def _line(event: Event) -> str:
    return f"{event.type} {event.id[:12]}: {event.summary(HIT_WIDTH)}"


# PreToolUse --------------------------------------------------------------------------
def edit_warning(call: HookCall) -> str | None:
    """A warning before editing a file under an active decision's paths or with
    a recorded mistake (once per session for the same warning)."""
    from gitmem.app.session import reader
    from gitmem.memory.query import EventFilter, paths_overlap

    tin = call.payload.get("tool_input")
    target = tin.get("file_path") or tin.get("notebook_path") if isinstance(tin, dict) else None
    path = call.translator.rel(target)
    if path is None:
        return None
    with reader(call.repo) as source:
        decisions = source.events(EventFilter(types=["decision"], include_redacted=False))
        mistakes = source.events(EventFilter(types=["mistake"], include_redacted=False))
    latest: dict[str, Event] = {}
    for decision in decisions:  # in time order: the last one on a key is in force
        latest[str(decision.field("key", ""))] = decision
    found = [e for e in [*latest.values(), *mistakes] if paths_overlap([path], _paths(e))]
    if not found:
        return None
    lines = [f"gitmem: before you edit {path}, memory says:"]
    for event in found[:5]:
        label = "decision in force" if event.type == "decision" else "recorded mistake"
        lines.append(f"- {label} {event.id[:12]}: {event.summary(HIT_WIDTH)}")
    text = "\n".join(lines)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    data = call.state()
    stored = data.get("warned")
    warned: list[Any] = stored if isinstance(stored, list) else []
    if digest in warned:
        return None
    data["warned"] = [*warned, digest][-WARNED_KEPT:]
    call.save_state(data)
    return text


def _paths(event: Event) -> list[str]:
    value = event.field("paths", [])
    return [str(v) for v in value] if isinstance(value, list) else []


# PreCompact --------------------------------------------------------------------------
RECALLED_EVENTS = 500  # the session's latest events a checkpoint looks back at


def recorded_work(call: HookCall) -> list[tuple[str, str]]:
    """The session's journal as memory recorded it: its prompts, files edited,
    commands run and errors, as journal entries, oldest first.

    For a checkpoint when the journal is empty: a session resumed after it
    ended (SessionEnd removed the journal) that compacts straight away. When
    the session recorded none of those, its last closing summary (an
    ``ended`` entry). Read through the index (spooled events included)."""
    from gitmem.app.session import reader
    from gitmem.memory.query import EventFilter

    session = call.session
    if session is None:
        return []
    wanted = EventFilter(
        types=["prompt", "observation", "capsule_close"],
        sessions=[session],
        include_redacted=False,
    )
    with reader(call.repo) as source:
        found = source.events(wanted, all_branches=True, limit=RECALLED_EVENTS)
    entries: list[tuple[str, str]] = []
    closed = ""
    for event in found:
        if event.type == "capsule_close":
            closed = str(event.field("summary", "") or "")
        elif event.type == "prompt":
            entries.append(("prompt", str(event.field("text", "") or "")))
        else:
            entries += _journal_of(event)
    entries = [(k, v[: state.JOURNAL_VALUE_CHARS]) for k, v in entries if v]
    if not entries and closed.strip():
        entries.append(("ended", closed.strip()[: state.JOURNAL_VALUE_CHARS]))
    return entries


def _journal_of(observation: Event) -> list[tuple[str, str]]:
    """What the capture hook journaled for ``observation`` (Translator.tool)."""
    kind, tool = observation.field("kind"), str(observation.field("tool", "") or "")
    command = str(observation.field("input", "") or "") if tool == "Bash" else ""
    out: list[tuple[str, str]] = []
    if kind in ("command", "error") and command:
        out.append(("cmd", command))
    if kind == "file_diff":
        out += [("file", f) for f in _list(observation.field("files"))]
    if kind == "error":
        out.append(("error", f"{tool}: {observation.field('result', '') or ''}".strip()))
    return out


# SessionEnd --------------------------------------------------------------------------
def session_end(call: HookCall) -> None:
    """Close the session's capsule with an extractive summary of its events.

    Reads the store (after committing the spool), not the index: nothing is
    built while the agent exits."""
    from gitmem.app.session import open_writer
    from gitmem.capture.active import clear_active, read_active

    session = call.session
    if session is None:
        return
    capsule = call.state().get("capsule")
    if not isinstance(capsule, str):
        active = read_active(call.location)
        if active.get("session") != session or not active.get("capsule"):
            return
        capsule = active["capsule"]
    with open_writer(call.repo) as mem:
        mem.flush()
        events = mem.capsule_events(capsule)  # the newest commits, not the whole store
        if not any(e.type == "capsule_close" and e.field("capsule") == capsule for e in events):
            reason = call.payload.get("reason")
            summary = summarize(events, reason if isinstance(reason, str) else "")
            # the opening as found (an id alone would be looked up in every event)
            opened = next((e for e in events if e.id == capsule), None)
            mem.close_capsule(
                opened or capsule, summary, closed=False, session=session, agent=call.agent
            )
    clear_active(call.location, capsule=capsule)
    data = call.state()
    data.pop("capsule", None)
    data.pop("last_block", None)
    call.save_state(data)
    state.forget(call.location, session)


def summarize(events: list[Event], reason: str = "") -> str:
    """What a session did, extracted from its events: prompts, files touched,
    commands run, decisions and learnings recorded, commits, errors."""
    from gitmem.memory.describe import plural

    prompts = [e for e in events if e.type == "prompt"]
    observations = [e for e in events if e.type == "observation"]
    # Messages (the assistant's text, subagents) are observations, not tool calls.
    calls = [e for e in observations if e.field("kind") != "message"]
    touched = _distinct(
        f for e in observations if e.field("kind") == "file_diff" for f in _list(e.field("files"))
    )
    commands = _distinct(
        str(e.field("input", "")).splitlines()[0][:120]
        for e in observations
        if e.field("kind") == "command" and e.field("input")
    )
    errors = [e for e in observations if e.field("kind") == "error"]
    decisions = [f"{e.field('key')} = {e.field('value')}" for e in events if e.type == "decision"]
    learned = [
        f"{e.type}: {str(e.field('text', ''))[:120]}"
        for e in events
        if e.type in ("learning", "pattern", "mistake")
    ]
    commits = [
        f"{str(e.field('sha', ''))[:10]} {str(e.field('message', '')).splitlines()[0][:80] if e.field('message') else ''}".strip()
        for e in events
        if e.type == "commit_link"
    ]
    lines = [
        f"Session ended{f' ({reason})' if reason else ''}: "
        f"{plural(len(prompts), 'prompt')}, {plural(len(calls), 'tool call')}."
    ]
    if prompts:
        lines.append(
            f"First prompt: {str(prompts[0].field('text', '')).splitlines()[0][:160] if prompts[0].field('text') else ''}"
        )
    for label, values, most in (
        ("Files touched", touched, 20),
        ("Commands run", commands, 10),
        ("Decisions", decisions, 10),
        ("Learnings", learned, 10),
        ("Commits", commits, 10),
    ):
        if values:
            more = f" (+{len(values) - most} more)" if len(values) > most else ""
            lines.append(f"{label}: " + "; ".join(values[:most]) + more)
    if errors:
        last = str(errors[-1].field("result", "")).splitlines()
        lines.append(
            f"Errors: {len(errors)} (last: {errors[-1].field('tool', '')}: {last[0][:120] if last else ''})"
        )
    return "\n".join(lines)


def _list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _distinct(values: Any) -> list[str]:
    out: list[str] = []
    for value in values:
        if value and value not in out:
            out.append(value)
    return out
