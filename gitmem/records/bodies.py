"""The rules for bodies: bounded JSON, and the fields of each known event type.

Part of the event rules gathered by :mod:`gitmem.records.validate` (import
them from there); spec/storage.md §17 writes them down, and the msgspec
Structs in :mod:`gitmem.records.types` must agree with :data:`BODY_FIELDS`
(tested). Standard library only: it runs on the capture hot path.
"""

from __future__ import annotations

from gitmem.records import canonical
from gitmem.records.names import REQUIRED_FIELDS
from gitmem.records.values import INT_MAX, INT_MIN, MAX_DEPTH, MAX_KEY_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RESERVED_KEY_PREFIX = "$gitmem"  # stored bodies use "$gitmem-blob" for attachments

# Body field kinds of the known event types. A field not listed is free JSON
# (kept for forward compatibility, bounded like every body value).
STR, INT, OPT_STR, OPT_INT, STRS = "str", "int", "str?", "int?", "[str]"
REJECTED, STR_MAP, PAIRS = "[{idea,reason}]", "{str:str}", "[[str]]"
_LEARNING = {"text": STR, "topic": STR, "paths": STRS, "tags": STRS}
BODY_FIELDS: dict[str, dict[str, str]] = {
    "note": {"text": STR, "tags": STRS, "paths": STRS},
    "decision": {
        "key": STR,
        "value": STR,
        "reason": STR,
        "scope": STR,
        "paths": STRS,
        "tags": STRS,
        "supersedes": OPT_STR,
    },
    "ratify": {"target": STR, "note": STR},
    "checkpoint": {
        "next": STR,
        "summary": STR,
        "hypotheses": STRS,
        "rejected": REJECTED,
        "open_questions": STRS,
        "paths": STRS,
    },
    "observation": {
        "kind": STR,
        "tool": STR,
        "input": STR,
        "result": STR,
        "files": STRS,
        "exit_code": OPT_INT,
    },
    "prompt": {"text": STR},
    "capsule_open": {"kind": STR, "intent": STR, "parent": OPT_STR, "scope_ids": STR_MAP},
    "capsule_close": {"capsule": STR, "summary": STR},
    "pin": {"target": STR, "reason": STR, "expires": OPT_INT},
    "unpin": {"target": STR},
    "learning": _LEARNING,
    "pattern": _LEARNING,
    "mistake": _LEARNING,
    "commit_link": {"sha": STR, "branch": STR, "session": STR, "message": STR},
    "commit_rewrite": {"kind": STR, "map": PAIRS},
    "redaction": {"target": STR, "reason": STR},
}
# Fields whose value must be one of a few words.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("observation", "kind"): ("tool_call", "command", "file_diff", "error", "message"),
    ("capsule_open", "kind"): ("session", "workflow", "node"),
}


def json_problems(value: Any, *, what: str = "body", lenient: bool = False) -> list[str]:
    """Problems of free JSON data: types, depth, key sizes, integer range,
    UTF-8, reserved keys. Iterative, so no input can exhaust the stack.

    ``lenient`` (capture, before normalising) lets through what
    :func:`gitmem.records.canonical.normalize` repairs: tuples and lone
    surrogates (which become U+FFFD).
    """
    problems: list[str] = []
    stack: list[tuple[Any, str, int]] = [(value, what, 0)]
    while stack and len(problems) < 5:
        item, path, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                problems.append(f"{path} is an integer outside the 64-bit range")
        elif isinstance(item, str):
            if not lenient and canonical.has_surrogate(item):
                problems.append(f"{path} is not valid UTF-8 (a lone surrogate)")
        elif isinstance(item, float):
            problems.append(f"{path} is a floating-point number (store integers or strings)")
        elif isinstance(item, dict | list) or (lenient and isinstance(item, tuple)):
            if depth >= MAX_DEPTH:
                problems.append(f"{path} is nested deeper than {MAX_DEPTH} levels")
                continue
            if not isinstance(item, dict):
                stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))
                continue
            for key, sub in item.items():
                if not isinstance(key, str):
                    problems.append(f"{path} has a key that is not a string")
                    continue
                shown = key if len(key) <= 40 else key[:40] + "…"
                if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
                    problems.append(f"{path} has a key longer than {MAX_KEY_BYTES} bytes")
                elif key.startswith(RESERVED_KEY_PREFIX):
                    problems.append(f"{path} uses the reserved key {shown!r}")
                elif not lenient and canonical.has_surrogate(key):
                    problems.append(f"{path} has a key that is not valid UTF-8")
                stack.append((sub, f"{path}.{shown}", depth + 1))
        else:
            problems.append(f"{path} has a value of type {type(item).__name__}")
    return problems


def _kind_problem(kind: str, value: Any) -> bool:
    """True when ``value`` is not of field kind ``kind``."""
    if kind == STR:
        return not isinstance(value, str)
    if kind == OPT_STR:
        return value is not None and not isinstance(value, str)
    if kind in (INT, OPT_INT):
        if value is None:
            return kind == INT
        return not isinstance(value, int) or isinstance(value, bool)
    if kind == STRS:
        return not (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if kind == STR_MAP:
        return not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
    if kind == PAIRS:
        return not (
            isinstance(value, list)
            and all(isinstance(p, list) and all(isinstance(s, str) for s in p) for p in value)
        )
    if kind == REJECTED:
        return not (
            isinstance(value, list)
            and all(
                isinstance(r, dict)
                and isinstance(r.get("idea"), str)
                and isinstance(r.get("reason", ""), str)
                for r in value
            )
        )
    return False


def body_problems(event_type: str, body: Any) -> list[str]:
    """Problems of a logical body: free-JSON rules, and for a known type its
    required fields and field types (unknown fields are kept, not checked)."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    problems = json_problems(body)
    if problems:
        return problems
    fields = BODY_FIELDS.get(event_type)
    if fields is None:
        return []
    missing = [name for name in REQUIRED_FIELDS.get(event_type, ()) if name not in body]
    if missing:
        problems.append(f"a {event_type} event needs the field(s): {', '.join(missing)}")
    for name, kind in fields.items():
        if name in body and _kind_problem(kind, body[name]):
            problems.append(f"body.{name} must be {_KIND_WORDS[kind]}")
        allowed = ENUMS.get((event_type, name))
        if allowed and name in body and isinstance(body[name], str) and body[name] not in allowed:
            problems.append(f"body.{name} must be one of: {', '.join(allowed)}")
    return problems


_KIND_WORDS = {
    STR: "a string",
    OPT_STR: "a string or null",
    INT: "an integer",
    OPT_INT: "an integer or null",
    STRS: "a list of strings",
    STR_MAP: "an object of strings",
    PAIRS: "a list of lists of strings",
    REJECTED: "a list of {idea, reason} objects",
}
