"""What each Claude Code hook event does (README, "Claude Code hooks").

Capture events (standard library only, a few milliseconds):

``UserPromptSubmit``   the prompt -> a ``prompt`` event (then injection, below)
``PostToolUse``        Write/Edit/MultiEdit/NotebookEdit -> observation ``file_diff``
                       with the files; Bash -> ``command`` with the command, its
                       output (head and tail) and exit status when given;
                       Read/Grep/Glob/LS -> ``tool_call`` with the paths; MCP
                       tools (``mcp__*``) and the rest -> ``tool_call``
``PostToolUseFailure`` -> observation ``error``
``SubagentStart/Stop`` -> observation ``message`` (compaction's own SubagentStop: nothing,
                       PostCompact records its summary)
``PreCompact``         -> a checkpoint of where the session stood (from its journal;
                       a session resumed after it ended has none: from what
                       memory recorded in the session)
``PostCompact``        -> a checkpoint with Claude Code's compaction summary, when given
                       (its ``<summary>``, not the model's ``<analysis>``). Claude
                       Code 2.1.330 runs it after SessionStart(compact): that
                       pack carries PreCompact's checkpoint, not this one
``Stop``               -> the assistant's new text in the transcript, and the final
                       message, as observations ``message`` (also on
                       PreCompact, before the transcript is compacted, and on
                       SessionEnd, before the capsule closes)

Session and injection events (the application layer):

``SessionStart``       opens (or continues) the session's capsule; injects a
                       context pack of ``edda.claude.budget`` tokens
``UserPromptSubmit``   injects memory relevant to the prompt, unless the same
                       block was injected last time
``PreToolUse``         before an edit: a warning when the file is under an
                       active decision's paths or has a recorded mistake
``SessionEnd``         closes the capsule with an extractive summary

Paths matching ``edda.excludePath`` (and the defaults: ``.env``, keys,
``node_modules/**``) are recorded by name only, never with content.
"""

from __future__ import annotations

from gitmem.agents.hooks import HookCall
from gitmem.agents.translate import EDIT_TOOLS

CAPTURED = ("PostToolUse", "PostToolUseFailure", "SubagentStart", "SubagentStop")


def handle(call: HookCall) -> str | None:
    """Record what ``call`` reports; return the context to inject, if any."""
    event, payload, translate = call.event, call.payload, call.translator
    if event == "PostToolUse":
        call.capture(*translate.tool(payload))
    elif event == "PostToolUseFailure":
        call.capture(*translate.tool(payload, failed=True))
    elif event in ("SubagentStart", "SubagentStop"):
        call.capture(*translate.subagent(payload, stop=event == "SubagentStop"))
    elif event == "Stop":
        last = payload.get("last_assistant_message")
        _ingest(call, last if isinstance(last, str) else None)
    elif event in ("PreCompact", "PostCompact"):
        from gitmem.agents import state

        entries: list[tuple[str, str]] = []  # PostCompact: Claude Code's own summary
        if event == "PreCompact" and call.session:
            _ingest(call)
            entries = state.read_journal(call.location, call.session, state.JOURNAL_TAIL_BYTES)
            if not entries:  # resumed after it ended: SessionEnd removed the journal
                entries = _recorded_work(call)
        call.capture(translate.checkpoint(payload, entries))
    elif event == "UserPromptSubmit":
        from gitmem.agents import inject

        # Injection first: recording the prompt makes memory move, and the
        # index would be brought up to date before the search (~70 ms) for an
        # event the search does not want. A failed injection must not cost
        # the capture, nor the reverse.
        try:
            block = inject.prompt_block(call)
        except Exception as exc:
            call.log(f"injection failed: {type(exc).__name__}: {exc}")
            block = None
        call.capture(*translate.prompt(payload))
        return block
    elif event == "PreToolUse":
        if payload.get("tool_name") in EDIT_TOOLS:
            from gitmem.agents import inject

            return inject.edit_warning(call)
    elif event == "SessionStart":
        from gitmem.agents import inject

        return inject.session_start(call)
    elif event == "SessionEnd":
        from gitmem.agents import inject

        _ingest(call)  # into the capsule, before it closes
        inject.session_end(call)
    return None


def _recorded_work(call: HookCall) -> list[tuple[str, str]]:
    """The journal's stand-in, read from memory; a failure is logged and
    leaves the checkpoint to Claude Code's summary (PostCompact)."""
    from gitmem.agents import inject

    try:
        return inject.recorded_work(call)
    except Exception as exc:
        call.log(f"no journal, and memory could not stand in: {type(exc).__name__}: {exc}")
        return []


def _ingest(call: HookCall, final: str | None = None) -> None:
    """Transcript ingest; a failure is logged and costs the event nothing else."""
    from gitmem.agents import transcript

    try:
        transcript.ingest(call, final)
    except Exception as exc:
        call.log(f"transcript ingest failed: {type(exc).__name__}: {exc}")
