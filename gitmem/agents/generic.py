"""``git edda hook generic``: the hook protocol for any agent. Standard library only.

One JSON object on stdin per call (spec/agents.md, "Generic hooks")::

    {"event": "session_start", "session": "s-1", "agent": "gemini-cli", "cwd": "/repo"}
    {"event": "prompt", "session": "s-1", "prompt": "fix the flaky test"}
    {"event": "tool", "session": "s-1", "kind": "command", "input": {"command": "pytest"},
     "output": "1 failed", "exit_code": 1}
    {"event": "tool", "session": "s-1", "kind": "edit", "files": ["src/app.py"]}
    {"event": "tool_error", "session": "s-1", "tool": "shell", "error": "timed out"}
    {"event": "pre_tool", "session": "s-1", "kind": "edit", "files": ["src/app.py"]}
    {"event": "compact", "session": "s-1"}
    {"event": "session_end", "session": "s-1", "reason": "exit"}

It is translated into Claude Code's payload shape and handled the same way;
where Claude Code gets ``hookSpecificOutput.additionalContext``, a generic
caller gets ``{"context": "…"}`` (nothing at all when there is nothing to say).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVENTS = {
    "session_start": "SessionStart",
    "session_end": "SessionEnd",
    "prompt": "UserPromptSubmit",
    "pre_tool": "PreToolUse",
    "tool": "PostToolUse",
    "tool_error": "PostToolUseFailure",
    "compact": "PreCompact",
}
# A tool's kind -> the Claude Code tool it is handled like.
KINDS = {"command": "Bash", "edit": "Edit", "write": "Write", "read": "Read", "search": "Grep"}


def to_claude(data: dict[str, Any]) -> dict[str, Any]:
    """The generic event ``data`` as a Claude Code hook payload (ValueError
    when its ``event`` is not one of :data:`EVENTS`)."""
    event = data.get("event")
    if not isinstance(event, str) or event not in EVENTS:
        raise ValueError(f"unknown event {event!r:.40}: use one of {', '.join(EVENTS)}")
    kind = data.get("kind")
    tool = KINDS.get(kind) if isinstance(kind, str) else None
    if tool is None:
        tool = data.get("tool") if isinstance(data.get("tool"), str) else "tool"
    tool_input = data.get("input")
    tool_input = dict(tool_input) if isinstance(tool_input, dict) else {}
    if isinstance(data.get("input"), str):
        tool_input["command" if tool == "Bash" else "input"] = data["input"]
    files = data.get("files")
    if isinstance(files, list) and files and isinstance(files[0], str):
        tool_input.setdefault("file_path", files[0])  # what an edit warning checks
        tool_input["files"] = files
    output = data.get("output")
    response: dict[str, Any] = {"stdout": output} if isinstance(output, str) else {}
    if isinstance(output, dict):
        response = dict(output)
    if "exit_code" in data:
        response["exit_code"] = data["exit_code"]
    payload: dict[str, Any] = {
        "hook_event_name": EVENTS[event],
        "session_id": data.get("session"),
        "agent": data.get("agent"),
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
    }
    for key, target in (
        ("cwd", "cwd"),
        ("prompt", "prompt"),
        ("source", "source"),
        ("reason", "reason"),
        ("error", "error"),
        ("summary", "compact_summary"),
    ):
        if key in data:
            payload[target] = data[key]
    return payload
