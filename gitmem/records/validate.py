"""What a valid event is: the one check every way into memory goes through.

Capture (``gitmem-capture`` and in-process appends), spool flushes, bundle
imports and pulls from a remote all call :func:`event_problems` on each
event before anything is acknowledged or merged, so a value that passes
here can be read by every reader, indexed, exported and pushed, and a value
that fails is refused with a message naming the field. The rules are
written down in ``spec/storage.md`` ("What a valid event is"); this module
is their implementation, and the msgspec Structs in
:mod:`gitmem.records.types` must agree with :data:`BODY_FIELDS` (tested).

Standard library only: it runs on the capture hot path.
"""

from __future__ import annotations

from gitmem.records import canonical, layout
from gitmem.records.names import REQUIRED_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- limits ------------------------------------------------------------------------
MIN_TIME_US = 946_684_800_000_000  # 2000-01-01T00:00:00Z: older times are errors
MAX_TIME_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59Z: the last time readers can print
DEFAULT_SKEW_S = (
    86_400  # edda.maxClockSkew's default (one day): how far ahead of the wall clock a time may be
)
MAX_SCOPE_BYTES = 256  # a scope id (session, agent, user, repo, branch …)
MAX_KEY_BYTES = 1024  # an object key anywhere in a body
MAX_DEPTH = 64  # nesting of objects and arrays in a body
MAX_BODY_BYTES = 16 * 1024 * 1024  # a body's canonical encoding (the envelope's size)
MAX_ENVELOPE_BYTES = 64 * 1024  # an envelope's canonical encoding
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what Arrow, msgspec and git all read

# Plain string checks, not regexes: compiling five patterns cost every hook
# process about half a millisecond.
_LOWER_HEX = frozenset("0123456789abcdef")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
# C0, DEL, C1 and the Unicode line and paragraph separators: a scope id is
# one line of plain text wherever it is printed.
_CONTROL = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u2028", "\u2029"])


def _hex(text: str, length: int) -> bool:
    return len(text) == length and _LOWER_HEX.issuperset(text)


def _name(text: str, longest: int) -> bool:
    """``[a-z][a-z0-9_]{0,longest-1}``."""
    return 0 < len(text) <= longest and "a" <= text[0] <= "z" and _NAME_CHARS.issuperset(text)


def _has_control(text: str) -> bool:
    return not _CONTROL.isdisjoint(text)


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


class Limits:
    """The bounds that depend on configuration (a plain class: hot path);
    :func:`gitmem.storage.gitconfig.limits` reads them from git config."""

    __slots__ = ("skew_us",)

    def __init__(self, skew_s: int = DEFAULT_SKEW_S) -> None:
        self.skew_us = skew_s * 1_000_000


# -- single values -----------------------------------------------------------------
def branch_problem(name: Any) -> str | None:
    """Why ``name`` is not a branch name git accepts (None when it is).

    Git's rules for ``refs/heads/<name>`` (``git check-ref-format --branch``):
    no component starting with ``.`` or ending in ``.lock``; no ``..``, ``@{``,
    ``//``, control characters, space, ``~ ^ : ? * [ \\``; not starting with
    ``-`` or ``/``; not ending in ``/`` or ``.``; not ``@`` or ``HEAD``.
    """
    why = scope_value_problem(name)  # a string, short, one line, valid UTF-8
    if why:
        return why
    if name in ("@", "HEAD") or name.startswith("-"):
        return "is reserved by git"
    if any(c in name for c in " ~^:?*[\\"):
        return "has a character git forbids in branch names"
    if ".." in name or "@{" in name or "//" in name:
        return "has a sequence git forbids in branch names ('..', '@{' or '//')"
    if name.startswith("/") or name.endswith(("/", ".")):
        return "starts or ends with a character git forbids there"
    for part in name.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "has a component starting with '.' or ending in '.lock'"
    return None


def time_problem(
    time_us: Any, now_us: int | None, limits: Limits, *, strict: bool = True
) -> str | None:
    """Why ``time_us`` is not an acceptable event time (None when it is).

    Times before 2000 are errors for new events (``strict``), before 1970 for
    any; with ``now_us``, so are times more than ``limits.skew_us`` ahead of it
    (a machine whose clock ran ahead, or a forged event that would drag every
    clone's clock into the future).
    """
    if not isinstance(time_us, int) or isinstance(time_us, bool):
        return "is not an integer (microseconds since the Unix epoch)"
    if time_us < (MIN_TIME_US if strict else 0):
        return "is before the year 2000" if strict else "is before 1970"
    if now_us is not None and time_us > now_us + limits.skew_us:
        ahead = (time_us - now_us) // 1_000_000
        return (
            f"is {ahead} s ahead of this machine's clock "
            f"(at most {limits.skew_us // 1_000_000} s: git config edda.maxClockSkew)"
        )
    if time_us > MAX_TIME_US:
        return "is after the year 9999"
    return None


def scope_value_problem(value: Any) -> str | None:
    """Why a scope id (session, agent, user, repo, capsule…) is unacceptable."""
    if not isinstance(value, str):
        return "is not a string"
    if not value:
        return "is empty"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_SCOPE_BYTES:
        return f"is longer than {MAX_SCOPE_BYTES} bytes"
    if canonical.has_surrogate(value):
        return "is not valid UTF-8"
    if _has_control(value):
        return "has a control character"
    return None


def capsule_problem(value: Any) -> str | None:
    """Why ``value`` is not a capsule id (the 32-hex id of its capsule_open event)."""
    if not isinstance(value, str) or not _hex(value, 32):
        return "is not an event id (32 lower-case hex digits)"
    return None


# -- bodies ------------------------------------------------------------------------
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


# -- envelopes ---------------------------------------------------------------------
def envelope_problems(
    envelope: Any,
    *,
    now_us: int | None = None,
    limits: Limits | None = None,
    strict: bool = True,
) -> list[str]:
    """Problems of a decoded envelope (empty when it is sound).

    Checks every field's type and form, the scope ids, the branch name, the
    time bounds (the upper one only with ``now_us``), the payload reference and
    that ``id`` re-derives from the content. Unknown fields are allowed (a
    newer gitmem may add them) but must be bounded JSON.

    ``strict`` (capture: events written now) adds the rules only new events
    must meet: a time after 2000, a branch git accepts, a capsule that is an
    event id. Memory that already exists (pulled, imported, spooled, verified)
    may predate them, and breaks no reader without them, so they are not
    applied there: otherwise a value an older gitmem let in would refuse
    every pull from that remote for good.
    """
    limits = limits or Limits()
    if not isinstance(envelope, dict):
        return ["envelope is not a JSON object"]
    problems: list[str] = []
    for key, kind in (("v", int), ("id", str), ("type", str), ("time", int)):
        if key not in envelope:
            problems.append(f"field '{key}' is missing")
        elif not isinstance(envelope[key], kind) or isinstance(envelope[key], bool):
            problems.append(f"field '{key}' has the wrong type")
    for key in ("scope", "payload"):
        if key not in envelope:
            problems.append(f"field '{key}' is missing")
        elif not isinstance(envelope[key], dict):
            problems.append(f"field '{key}' has the wrong type")
    if problems:
        return problems
    if not 1 <= envelope["v"] <= INT_MAX:
        problems.append("field 'v' is out of range")
    if not _hex(envelope["id"], 32):
        problems.append("field 'id' is not 32 lower-case hex digits")
    if not _name(envelope["type"], 64):
        problems.append("field 'type' is not an event type name (a-z, 0-9, _)")
    why = time_problem(envelope["time"], now_us, limits, strict=strict)
    if why:
        problems.append(f"field 'time' {why}")
    for key, value in envelope["scope"].items():
        if not isinstance(key, str) or not _name(key, 32):
            problems.append("field 'scope' has a malformed key")
            continue
        why = branch_problem(value) if key == "branch" and strict else scope_value_problem(value)
        if why:
            problems.append(f"field 'scope.{key}' {why}")
    if "capsule" in envelope:
        capsule = envelope["capsule"]
        why = capsule_problem(capsule) if strict else scope_value_problem(capsule)
        if why:
            problems.append(f"field 'capsule' {why}")
    payload = envelope["payload"]
    digest = payload.get("digest")
    if not (isinstance(digest, str) and digest.startswith("sha256:") and _hex(digest[7:], 64)):
        problems.append("field 'payload.digest' is malformed")
    salt = payload.get("salt")
    if not (isinstance(salt, str) and _hex(salt, 32)):
        problems.append("field 'payload.salt' is malformed")
    size = payload.get("size")
    if not isinstance(size, int) or isinstance(size, bool):
        problems.append("field 'payload.size' is malformed")
    elif not 0 <= size <= MAX_BODY_BYTES:
        problems.append(f"field 'payload.size' is outside 0..{MAX_BODY_BYTES}")
    extra = {k: v for k, v in envelope.items() if k not in _ENVELOPE_FIELDS}
    if extra:
        problems.extend(json_problems(extra, what="envelope"))
    try:
        encoded = canonical.encode({k: v for k, v in envelope.items() if k != "id"})
    except (ValueError, TypeError, UnicodeEncodeError):
        return [*problems, "envelope cannot be encoded canonically"]
    if len(encoded) > MAX_ENVELOPE_BYTES:
        problems.append(f"envelope is larger than {MAX_ENVELOPE_BYTES} bytes")
    elif canonical.sha256_hex(encoded)[: canonical.ID_HEX_LENGTH] != envelope["id"]:
        problems.append("field 'id' does not match the envelope's content")
    return problems


_ENVELOPE_FIELDS = ("v", "id", "type", "time", "scope", "capsule", "payload")


def event_problems(
    envelope: Any,
    body: Any,
    *,
    now_us: int | None = None,
    limits: Limits | None = None,
    known_types_only: bool = False,
    strict: bool = False,
) -> list[str]:
    """Everything wrong with an event arriving from outside (empty when it is valid).

    ``body`` is the logical body (attachments joined), or None for an event
    that travels without one (redacted). The envelope must be sound, the
    body valid for its type and matching the envelope's digest and size.
    ``known_types_only`` refuses types this gitmem does not know (capture
    writes only known types; pulls and imports keep a newer gitmem's types).
    """
    problems = envelope_problems(envelope, now_us=now_us, limits=limits, strict=strict)
    if problems:
        return problems
    if known_types_only and envelope["type"] not in REQUIRED_FIELDS:
        return [f"unknown event type {envelope['type']!r}"]
    if body is None:
        return []
    why = payload_problem(envelope, body)
    return [why] if why else []


def payload_problem(envelope: dict[str, Any], body: Any) -> str | None:
    """Why ``body`` is not the valid payload of the (sound) ``envelope``:
    invalid for its type, or not what the envelope's size and salted digest
    pin. Readers call this on every body they hand out, so forged or damaged
    text is never shown as if it were the event's."""
    problems = body_problems(str(envelope["type"]), body)
    if problems:
        return problems[0]
    payload = envelope["payload"]
    try:
        data = canonical.encode(body)
    except (ValueError, TypeError, UnicodeEncodeError):
        return "body cannot be encoded canonically"
    if len(data) != payload["size"] or (
        canonical.payload_digest(payload["salt"], data) != payload["digest"]
    ):
        return PAYLOAD_MISMATCH
    return None


PAYLOAD_MISMATCH = "payload does not match its envelope"


def memory_ref_problem(ref: str) -> str | None:
    """Why a name under ``refs/edda/`` is not one a valid store can hold
    (chain refs must name a valid branch in the canonical escaping)."""
    if ref in (layout.DETACHED_REF, layout.PAYLOAD_REF):
        return None
    if not ref.startswith(layout.BRANCH_PREFIX):
        return None  # unknown refs are ignored by readers (spec/storage.md §2)
    component = ref[len(layout.BRANCH_PREFIX) :]
    branch = layout.unescape_branch(component)
    why = branch_problem(branch)
    if why:
        return f"names the branch {branch!r}, which {why}"
    if layout.escape_branch(branch) != component:
        return "is not in the canonical escaping (spec/storage.md §2)"
    return None
