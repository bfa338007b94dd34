"""Agent hook payloads -> gitmem events (drafts), and the session journal. Standard library only.

The payload shapes are Claude Code's (``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_response`` …); the generic protocol
(:mod:`gitmem.agents.generic`) is translated into them first. Any field may
be missing or of the wrong type: what cannot be read is left out, never a
reason to lose the rest.
"""

from __future__ import annotations

import json
import os
from fnmatch import fnmatchcase

from gitmem.capture.sealer import Draft

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# edda.excludePath adds to these (it never removes one: a forgotten default
# would leak a private key the moment someone configures node_modules).
DEFAULT_EXCLUDES = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "node_modules/**")
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
READ_TOOLS = ("Read", "Grep", "Glob", "LS")
OUTPUT_HEAD = 800  # characters of a command's output kept from its start …
OUTPUT_TAIL = 1200  # … and from its end, where errors usually are
INPUT_CHARS = 2000  # an edit, an MCP tool's arguments
FILES_MAX = 50  # file names one observation lists
MESSAGE_CHARS = 8000  # an assistant's message from the transcript


class Excluder:
    """Decides which paths are captured by name only, never with content (globs
    matched against the repository-relative path and each of its suffixes,
    so ``node_modules/**`` also excludes ``web/node_modules/x.js``)."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = [p.strip().removeprefix("./") for p in patterns if p.strip()]

    def excluded(self, path: str) -> bool:
        parts = [p for p in path.replace(os.sep, "/").split("/") if p not in ("", ".")]
        suffixes = ["/".join(parts[i:]) for i in range(len(parts))]
        return any(fnmatchcase(s, pat) for s in suffixes for pat in self.patterns)

    def mentioned(self, command: str) -> bool:
        """Whether a shell command names an excluded path (``cat .env``)."""
        words = command.replace("=", " ").replace(">", " ").replace("<", " ").split()
        return any(self.excluded(w.strip("'\";|&()")) for w in words)


class Translator:
    """Turns one payload into drafts and journal entries for one repository."""

    def __init__(self, workdir: str | None, excluder: Excluder, agent: str) -> None:
        self.workdir = os.path.realpath(workdir) if workdir else None
        self.excluder = excluder
        self.agent = agent

    def rel(self, path: Any) -> str | None:
        """``path`` relative to the working tree when inside it, else as given."""
        if not isinstance(path, str) or not path or "\0" in path:
            return None
        if self.workdir and os.path.isabs(path):
            real = os.path.realpath(path)
            if real == self.workdir or real.startswith(self.workdir + os.sep):
                return os.path.relpath(real, self.workdir).replace(os.sep, "/")
        return path

    # events ----------------------------------------------------------------------
    def prompt(self, payload: dict[str, Any]) -> tuple[list[Draft], list[tuple[str, str]]]:
        text = payload.get("prompt")
        if not isinstance(text, str) or not text.strip():
            return [], []
        return [self._draft("prompt", {"text": text}, payload)], [("prompt", text)]

    def tool(
        self, payload: dict[str, Any], failed: bool = False
    ) -> tuple[list[Draft], list[tuple[str, str]]]:
        tool = payload.get("tool_name")
        if not isinstance(tool, str) or not tool:
            return [], []
        tin = _dict(payload.get("tool_input"))
        response = payload.get("tool_response")
        paths = [p for p in (self.rel(v) for v in _paths_of(tool, tin, response)) if p]
        # An excluded file is named (the agent touched it) but its content,
        # an edit's text or a command's output, is never recorded.
        hidden = any(self.excluder.excluded(p) for p in paths)
        paths = paths[:FILES_MAX]
        body: dict[str, Any] = {"kind": "tool_call", "tool": tool}
        journal: list[tuple[str, str]] = []
        if tool == "Bash":
            command = _str(tin.get("command"))
            hidden = hidden or self.excluder.mentioned(command)
            body.update(kind="command", input=command)
            if not hidden and not failed:
                body["result"] = _output(response)
            code = _exit_code(response)
            if code is not None:
                body["exit_code"] = code
            journal.append(("cmd", command))
        elif tool in EDIT_TOOLS:
            body["kind"] = "file_diff"
            if not hidden:
                body["input"] = _clip(_edit_summary(tool, tin), INPUT_CHARS)
            journal += [("file", p) for p in paths]
        elif tool in READ_TOOLS:
            query = tin.get("pattern") if tool in ("Grep", "Glob") else None
            if isinstance(query, str) and not hidden:
                body["input"] = _clip(query, INPUT_CHARS)
            journal += [("read", p) for p in paths]
        elif not hidden:  # MCP tools (mcp__server__tool) and every other tool
            if tin:
                body["input"] = _clip(_as_text(tin), INPUT_CHARS)
            if not failed and response is not None:
                body["result"] = _clip(_as_text(response), OUTPUT_HEAD + OUTPUT_TAIL)
        if paths:
            body["files"] = paths
        if failed:
            body["kind"] = "error"
            error = _str(payload.get("error"))
            body["result"] = _clip(error, OUTPUT_HEAD + OUTPUT_TAIL) if not hidden else ""
            if payload.get("is_interrupt") is True:
                body["result"] = ("interrupted by the user\n" + body["result"]).strip()
            journal.append(("error", f"{tool}: {error}".strip()))
        if not body.get("input"):
            body.pop("input", None)
        if not body.get("result"):
            body.pop("result", None)
        return [self._draft("observation", body, payload)], journal

    def subagent(
        self, payload: dict[str, Any], stop: bool
    ) -> tuple[list[Draft], list[tuple[str, str]]]:
        # An empty type: an agent Claude Code ran for itself (compaction_answer).
        own = payload.get("agent_type") == ""
        if stop and own and compaction_answer(_str(payload.get("last_assistant_message"))):
            return [], []  # compaction's summary: PostCompact records it, without the scratchpad
        kind = _str(payload.get("agent_type")) or "subagent"
        body: dict[str, Any] = {
            "kind": "message",
            "tool": "SubagentStop" if stop else "SubagentStart",
            "input": kind,
        }
        agent_id = _str(payload.get("agent_id"))
        if agent_id:
            body["input"] = f"{kind} {agent_id}"
        last = _str(payload.get("last_assistant_message"))
        if stop and last and not own:
            body["result"] = _clip(last, OUTPUT_HEAD + OUTPUT_TAIL)
        return [self._draft("observation", body, payload)], []

    def message(self, payload: dict[str, Any], text: str) -> Draft:
        """The assistant's own text (from the transcript, or Stop's last message)."""
        body = {"kind": "message", "tool": "assistant", "result": _clip(text, MESSAGE_CHARS)}
        return self._draft("observation", body, payload)

    def checkpoint(self, payload: dict[str, Any], entries: list[tuple[str, str]]) -> list[Draft]:
        """A checkpoint from what the session did lately (before compaction:
        the agent will lose the details, memory keeps where it was)."""
        body = checkpoint_body(entries, _str(payload.get("trigger")) or "auto")
        summary = compact_summary(_str(payload.get("compact_summary")))
        if summary:
            body["summary"] = _clip(summary, 4000)
        if not (body.get("summary") or body.get("next")):
            return []
        return [self._draft("checkpoint", body, payload)]

    def _draft(self, type: str, body: dict[str, Any], payload: dict[str, Any]) -> Draft:
        return Draft(type, body, session=session_of(payload), agent=self.agent)


def checkpoint_body(entries: list[tuple[str, str]], trigger: str) -> dict[str, Any]:
    """Where the session stood: the last prompt, files edited, commands run, errors."""
    prompts = [v for k, v in entries if k == "prompt"]
    edited = _last_distinct([v for k, v in entries if k == "file"], 10)
    commands = _last_distinct([v for k, v in entries if k == "cmd"], 5)
    errors = _last_distinct([v for k, v in entries if k == "error"], 3)
    ended = [v for k, v in entries if k == "ended"]  # how a resumed session had ended
    lines = []
    if prompts:
        lines.append(f"Working on: {prompts[-1]}")
    if edited:
        lines.append("Files edited: " + ", ".join(edited))
    if commands:
        lines.append("Recent commands: " + "; ".join(commands))
    if errors:
        lines.append("Recent errors: " + "; ".join(errors))
    if ended and not lines:
        lines.append(f"Before the resume: {ended[-1]}")
    body: dict[str, Any] = {}
    if lines:
        body["summary"] = f"Before compaction ({trigger}).\n" + "\n".join(lines)
    if prompts:
        body["next"] = f"Continue: {prompts[-1]}"
    if edited:
        body["paths"] = edited
    return body


def compaction_answer(text: str) -> bool:
    """Whether ``text`` has the shape of the model's answer to compaction's
    request: an ``<analysis>`` scratchpad and/or a ``<summary>``, tags closed.

    With an empty ``agent_type`` this tells compaction's SubagentStop
    (Claude Code 2.1.330 runs the summary request as an agent of its own:
    ``agent_type`` is ``""`` and no SubagentStart came before, where the
    model's subagents have a type, ``general-purpose``, ``Explore`` or a custom
    agent's name, and a SubagentStart). Its message is PostCompact's
    ``compact_summary`` again; the other agents Claude Code runs itself are
    recorded, without their text (Claude Code's machinery, not the work)."""
    return any(
        (start := text.find(f"<{tag}>")) >= 0 and text.find(f"</{tag}>", start) > start
        for tag in ("summary", "analysis")
    )


def compact_summary(text: str) -> str:
    """The summary in PostCompact's ``compact_summary``: Claude Code hands the
    model's whole answer (2.1.330), an ``<analysis>`` scratchpad and then the
    ``<summary>``; the model is shown the summary alone, and so is memory."""
    start, end = text.find("<summary>"), text.rfind("</summary>")
    if start >= 0 and end > start:
        return text[start + len("<summary>") : end].strip()
    start, end = text.find("<analysis>"), text.find("</analysis>")
    if start >= 0 and end > start:
        text = text[:start] + text[end + len("</analysis>") :]
    return text.strip()


def session_of(payload: dict[str, Any]) -> str | None:
    """The payload's session id, when it is a string a scope can hold."""
    value = payload.get("session_id")
    if not isinstance(value, str) or not value or len(value.encode("utf-8", "replace")) > 256:
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in value):
        return None
    return value


def _last_distinct(values: list[str], n: int) -> list[str]:
    out: list[str] = []
    for value in reversed(values):
        if value and value not in out:
            out.append(value)
        if len(out) == n:
            break
    return out[::-1]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n…[{len(text) - limit} characters cut]"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return ""


def _paths_of(tool: str, tin: dict[str, Any], response: Any) -> list[Any]:
    """The files a tool call names (its input, and for searches what it found)."""
    found: list[Any] = [tin.get("file_path"), tin.get("notebook_path")]
    listed = tin.get("files")  # the generic protocol's list of files
    if isinstance(listed, list):
        found += listed[:FILES_MAX]
    if tool in ("Grep", "Glob", "LS"):
        found.append(tin.get("path"))
        names = _dict(response).get("filenames")
        if isinstance(names, list):
            found += names[:FILES_MAX]
    out = []
    for item in found:
        if isinstance(item, str) and item and item not in out:
            out.append(item)
    return out


def _edit_summary(tool: str, tin: dict[str, Any]) -> str:
    """An edit as ``-old``/``+new`` lines; a whole-file write as its size."""
    if tool == "Write":
        content = _str(tin.get("content"))
        return f"wrote {len(content.splitlines())} lines" if content else "wrote the file"
    edits = tin.get("edits") if tool == "MultiEdit" else [tin]
    out = []
    for edit in edits if isinstance(edits, list) else []:
        edit = _dict(edit)
        old, new = _str(edit.get("old_string")), _str(edit.get("new_string"))
        if tool == "NotebookEdit":
            new = _str(edit.get("new_source"))
        out += ["-" + line for line in old.splitlines()] + ["+" + line for line in new.splitlines()]
    return "\n".join(out)


def _output(response: Any) -> str:
    """A command's output, head and tail kept (stderr after stdout)."""
    if isinstance(response, str):
        text = response
    else:
        data = _dict(response)
        parts = [_str(data.get("stdout")), _str(data.get("stderr"))]
        text = "\n".join(p for p in parts if p)
        if data.get("interrupted") is True:
            text = (text + "\n[interrupted]").strip()
    if len(text) <= OUTPUT_HEAD + OUTPUT_TAIL:
        return text
    cut = len(text) - OUTPUT_HEAD - OUTPUT_TAIL
    return text[:OUTPUT_HEAD] + f"\n…[{cut} characters cut]…\n" + text[-OUTPUT_TAIL:]


def _exit_code(response: Any) -> int | None:
    data = _dict(response)
    for key in ("exit_code", "exitCode", "returnCode", "return_code"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
            return value
    return None
