"""Claude Code's settings files as JSON values: add gitmem's hooks and MCP
server entry to what the user has, and take exactly them out again.

Pure functions on parsed JSON (no file access), so the merge rules can be
tested on any value. The rules:

* the user's keys keep their order and unknown keys are kept as they are;
* on an event the user already hooks, gitmem's matcher group comes after
  theirs; an event gitmem adds goes at the end of ``hooks``;
* gitmem's entries are recognised by their command (``… git-edda" hook
  claude …``), so installing again updates them where they are and never
  adds a second copy;
* removing takes out gitmem's handlers only, then the matcher groups,
  events and ``hooks`` object that are left empty by it.

Hook format (Claude Code 2.1, checked against the hooks reference):
``{"hooks": {EVENT: [{"matcher": "...", "hooks": [{"type": "command",
"command": "...", "timeout": SECONDS, "async": true}]}]}}``; ``matcher``
only where the event filters on it, ``async`` runs the handler in the
background (Claude Code does not wait for it, and ignores ``timeout``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitmem.errors import UsageError

MCP_SERVER = "gitmem"
"""The name of gitmem's server in ``.mcp.json`` (its tools: ``mcp__gitmem__*``)."""

ENTRY_POINTS = ("git-edda", "gitmem")
"""Script names whose ``hook claude`` commands are gitmem's."""


@dataclass(frozen=True)
class HookSpec:
    """One event gitmem registers: its matcher (None: the event has none, or
    every occurrence), whether it runs in the background, and its timeout."""

    event: str
    matcher: str | None = None
    background: bool = False
    timeout: int | None = None


# In lifecycle order (the order new events are added in). Events that inject
# context or must finish before Claude Code goes on run in the foreground
# with a timeout. Tool captures run in the foreground too (about 35 ms):
# Claude Code does not wait for background hooks when a session ends, and
# one still spooling then is cut off, its event lost (seen with claude -p).
# Only what a later event also covers runs in the background: Stop's
# message (SessionEnd reads the transcript again) and subagent notices.
HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", timeout=30),  # context pack; source startup|resume|clear|compact
    HookSpec("UserPromptSubmit", timeout=15),  # capture the prompt, inject relevant memory
    HookSpec("PreToolUse", matcher="Write|Edit|MultiEdit", timeout=10),  # warn on a file
    HookSpec("PostToolUse", timeout=10),  # observations
    HookSpec("PostToolUseFailure", timeout=10),  # errors
    HookSpec("SubagentStart", background=True),
    HookSpec("SubagentStop", background=True),
    HookSpec("PreCompact", timeout=60),  # checkpoint before the transcript is compacted
    # Claude Code's summary; it runs after SessionStart(compact) (2.1.330, seen
    # by tests/agents), so in the foreground for a session that ends right after.
    HookSpec("PostCompact", timeout=30),
    HookSpec("Stop", background=True),  # the assistant's last message
    HookSpec("StopFailure", background=True),
    HookSpec("SessionEnd", timeout=30),  # close the capsule (a background job could be cut off)
)


def parse(data: bytes, name: str) -> dict[str, Any]:
    """The JSON object in ``data`` (empty or blank: ``{}``).

    Refuses, rather than let a later write replace what it cannot read:
    bytes that are not UTF-8 JSON, a value that is not an object, a key
    given twice in one object (json keeps only the last, silently), and
    NaN or Infinity (not JSON)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"key {key!r} appears twice in one object")
            out[key] = value
        return out

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not JSON")

    try:
        text = data.decode("utf-8")
        if not text.strip():
            return {}
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(
            f"{name} is not valid JSON ({why}); nothing was changed",
            f"fix or move {name} away, then run the command again",
        ) from None
    if not isinstance(value, dict):
        raise UsageError(
            f"{name} holds a JSON {type(value).__name__}, not an object; nothing was changed",
            f"fix or move {name} away, then run the command again",
        )
    return value


def dumps(value: Mapping[str, Any], like: bytes | None = None) -> bytes:
    """``value`` as JSON, in the layout of ``like`` (the file's current text)
    when there is one: its indentation, or none for a one-line file, and its
    final newline or lack of one. New files: two spaces and a newline, as
    Claude Code writes them."""
    indent: str | None = "  "
    newline = True
    if like is not None and like.strip():
        text = like.decode("utf-8")
        newline = text.endswith("\n")
        lines = text.strip().splitlines()
        if len(lines) < 2:
            indent = None
        else:
            found = re.match(r"[ \t]+", lines[1])
            indent = found.group(0) if found else "  "
    if indent is None:
        out = json.dumps(value, ensure_ascii=False)
    else:
        out = json.dumps(value, indent=indent, ensure_ascii=False)
    return (out + ("\n" if newline else "")).encode("utf-8")


# -- commands ----------------------------------------------------------------------------

# Characters that are not literal inside double quotes in POSIX shells
# (sh, bash, zsh) or fish: a path holding one cannot be quoted the same way
# for all of them.
_UNQUOTABLE = set('"$`\\\n\r')


def hook_command(executable: str) -> str:
    """The command every hook runs: the entry point by absolute path (so it
    works from any directory, whatever PATH the agent has), told which
    repository to use by ``$CLAUDE_PROJECT_DIR`` (Claude Code sets it for
    hooks). Both in double quotes, which sh, bash, zsh and fish read alike."""
    if not os.path.isabs(executable) or _UNQUOTABLE & set(executable):
        raise UsageError(
            f"cannot register {executable!r}: an entry point path must be absolute and free of"
            ' the characters " $ ` \\ and line breaks',
            "install gitmem (pip, pipx or uv) into a directory with a plain path",
        )
    return f'"{executable}" hook claude -C "$CLAUDE_PROJECT_DIR"'


def is_ours(command: object) -> bool:
    """Whether a hook's command is gitmem's: ``<path>/git-edda hook claude …``."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) >= 3
        and os.path.basename(words[0]) in ENTRY_POINTS
        and words[1:3] == ["hook", "claude"]
    )


def _handler(spec: HookSpec, command: str) -> dict[str, Any]:
    handler: dict[str, Any] = {"type": "command", "command": command}
    if spec.timeout is not None:
        handler["timeout"] = spec.timeout
    if spec.background:
        handler["async"] = True
    return handler


def _group(spec: HookSpec, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if spec.matcher is not None:
        group["matcher"] = spec.matcher
    group["hooks"] = [_handler(spec, command)]
    return group


def _is_our_handler(handler: object) -> bool:
    return (
        isinstance(handler, dict)
        and handler.get("type") == "command"
        and is_ours(handler.get("command"))
    )


def _hooks_object(settings: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise UsageError(
            f'"hooks" in {name} is a JSON {type(hooks).__name__}, not an object; nothing was changed',
            f'fix "hooks" in {name}, then run the command again',
        )
    return hooks


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts keep their key order)."""
    return json.loads(json.dumps(value))


def without_ours(
    settings: Mapping[str, Any],
    name: str = "settings",
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``settings`` with gitmem's hook handlers taken out, and the groups,
    events and ``hooks`` object that held nothing else.

    ``baseline`` is the file as it was before gitmem was installed: an
    event list or ``hooks`` object that was there, empty, stays (empty)."""
    out: dict[str, Any] = _copy(settings)
    hooks = _hooks_object(out, name)
    if hooks is None:
        return out
    before = baseline.get("hooks") if baseline is not None else None
    before_hooks: Mapping[str, Any] = before if isinstance(before, dict) else {}
    emptied = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        changed = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(_is_our_handler(h) for h in inner):
                kept_groups.append(group)
                continue
            changed = True
            rest = [h for h in inner if not _is_our_handler(h)]
            if rest:
                group["hooks"] = rest
                kept_groups.append(group)
        if not changed:
            continue
        if kept_groups or before_hooks.get(event) == []:
            hooks[event] = kept_groups
        else:
            del hooks[event]
            emptied = True
    if emptied and not hooks and before is None:
        del out["hooks"]
    return out


def with_ours(settings: Mapping[str, Any], command: str, name: str = "settings") -> dict[str, Any]:
    """``settings`` with gitmem's hooks registered (see the module's rules):
    an existing gitmem handler is replaced where it is, a duplicate removed,
    a missing one added in a group of its own after the user's groups, and
    gitmem handlers on events it no longer registers removed."""
    out: dict[str, Any] = _copy(settings)
    hooks = _hooks_object(out, name)
    if hooks is None:
        hooks = out["hooks"] = {}
    wanted = {spec.event: spec for spec in HOOKS}
    for event in list(hooks):
        groups = hooks[event]
        spec = wanted.get(event)
        if not isinstance(groups, list):
            if spec is not None:
                raise UsageError(
                    f'"hooks.{event}" in {name} is not a list; nothing was changed',
                    f'fix "hooks.{event}" in {name}, then run the command again',
                )
            continue
        placed = False
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(_is_our_handler(h) for h in inner):
                kept_groups.append(group)
                continue
            rest: list[Any] = []
            for handler in inner:
                if not _is_our_handler(handler):
                    rest.append(handler)
                elif spec is not None and not placed:
                    rest.append(_handler(spec, command))
                    placed = True
            if not rest:
                continue  # held only a handler of an event gitmem no longer registers
            if spec is not None and len(rest) == 1 and _is_our_handler(rest[0]):
                # gitmem's own group: its matcher is gitmem's to keep current too
                if spec.matcher is not None:
                    group["matcher"] = spec.matcher
                else:
                    group.pop("matcher", None)
            group["hooks"] = rest
            kept_groups.append(group)
        if spec is not None and not placed:
            kept_groups.append(_group(spec, command))
        if kept_groups or not groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    for spec in HOOKS:
        if spec.event not in hooks:
            hooks[spec.event] = [_group(spec, command)]
    return out


def any_ours(settings: Mapping[str, Any], name: str = "settings") -> bool:
    """Whether ``settings`` registers any gitmem hook."""
    return bool(ours(settings, name))


def ours(settings: Mapping[str, Any], name: str = "settings") -> dict[str, list[str]]:
    """gitmem's hook commands in ``settings``, by event."""
    hooks = _hooks_object(settings, name)
    found: dict[str, list[str]] = {}
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for handler in inner if isinstance(inner, list) else ():
                if _is_our_handler(handler):
                    found.setdefault(event, []).append(handler["command"])
    return found


def executable_of(command: str) -> str:
    """The program a hook command runs (its first word)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return words[0] if words else command


# -- .mcp.json ------------------------------------------------------------------------------


def mcp_entry(executable: str) -> dict[str, Any]:
    """gitmem's server in ``.mcp.json``: the entry point by absolute path, run as ``mcp``."""
    return {"type": "stdio", "command": executable, "args": ["mcp"]}


def _servers(config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    servers = config.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise UsageError(
            f'"mcpServers" in {name} is not an object; nothing was changed',
            f'fix "mcpServers" in {name}, then run the command again',
        )
    return servers


def mcp_is_ours(entry: object) -> bool:
    """Whether an ``mcpServers`` entry runs gitmem's entry point."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and os.path.basename(entry["command"]) in ENTRY_POINTS
    )


def with_mcp(config: Mapping[str, Any], executable: str, name: str = ".mcp.json") -> dict[str, Any]:
    """``config`` with gitmem's server entry (updated in place when there);
    refuses a server of the same name that is not gitmem's."""
    out: dict[str, Any] = _copy(config)
    servers = _servers(out, name)
    if servers is None:
        servers = out["mcpServers"] = {}
    current = servers.get(MCP_SERVER)
    if current is not None and not mcp_is_ours(current):
        raise UsageError(
            f"{name} already has an MCP server named {MCP_SERVER!r} that is not gitmem's;"
            " nothing was changed",
            f"rename or remove that server in {name}, or install with --no-mcp",
        )
    entry = mcp_entry(executable)
    if isinstance(current, dict):
        # keep what the user added (env, …); ours are command, args and type
        entry = {**current, **entry}
    servers[MCP_SERVER] = entry
    return out


def without_mcp(
    config: Mapping[str, Any],
    name: str = ".mcp.json",
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``config`` without gitmem's server entry, and without ``mcpServers``
    when that leaves it empty and ``baseline`` (the file before gitmem was
    installed) did not have it."""
    out: dict[str, Any] = _copy(config)
    servers = _servers(out, name)
    if servers is None or not mcp_is_ours(servers.get(MCP_SERVER)):
        return out
    del servers[MCP_SERVER]
    if not servers and (baseline is None or "mcpServers" not in baseline):
        del out["mcpServers"]
    return out
