"""What a valid event is: the one check every way into memory goes through.

Capture (``gitmem-capture`` and in-process appends), spool flushes, bundle
imports and pulls from a remote all call :func:`event_problems` on each
event before anything is acknowledged or merged, so a value that passes
here can be read by every reader, indexed, exported and pushed, and a value
that fails is refused with a message naming the field. The rules are
written down in ``spec/storage.md`` ("What a valid event is"); this module
is their implementation. The rules for single values live in
:mod:`gitmem.records.values`, those for bodies in :mod:`gitmem.records.bodies`
(whose :data:`BODY_FIELDS` the msgspec Structs in :mod:`gitmem.records.types`
must agree with, tested); this module checks envelopes and whole events and
gathers them all: import every rule from here.

Standard library only: it runs on the capture hot path.
"""

from __future__ import annotations

from gitmem.records import canonical, layout
from gitmem.records.bodies import (
    BODY_FIELDS,
    ENUMS,
    INT,
    OPT_INT,
    OPT_STR,
    PAIRS,
    REJECTED,
    RESERVED_KEY_PREFIX,
    STR,
    STR_MAP,
    STRS,
    body_problems,
    json_problems,
)
from gitmem.records.names import REQUIRED_FIELDS
from gitmem.records.values import (
    DEFAULT_SKEW_S,
    INT_MAX,
    INT_MIN,
    MAX_BODY_BYTES,
    MAX_DEPTH,
    MAX_ENVELOPE_BYTES,
    MAX_KEY_BYTES,
    MAX_SCOPE_BYTES,
    MAX_TIME_US,
    MIN_TIME_US,
    Limits,
    branch_problem,
    capsule_problem,
    is_lower_hex,
    scope_value_problem,
    time_problem,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BODY_FIELDS",
    "DEFAULT_SKEW_S",
    "ENUMS",
    "INT",
    "INT_MAX",
    "INT_MIN",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_ENVELOPE_BYTES",
    "MAX_KEY_BYTES",
    "MAX_SCOPE_BYTES",
    "MAX_TIME_US",
    "MIN_TIME_US",
    "OPT_INT",
    "OPT_STR",
    "PAIRS",
    "PAYLOAD_MISMATCH",
    "REJECTED",
    "RESERVED_KEY_PREFIX",
    "STR",
    "STRS",
    "STR_MAP",
    "Limits",
    "body_problems",
    "branch_problem",
    "capsule_problem",
    "envelope_problems",
    "event_problems",
    "is_lower_hex",
    "json_problems",
    "memory_ref_problem",
    "payload_problem",
    "scope_value_problem",
    "time_problem",
]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _name(text: str, longest: int) -> bool:
    """``[a-z][a-z0-9_]{0,longest-1}``."""
    return 0 < len(text) <= longest and "a" <= text[0] <= "z" and _NAME_CHARS.issuperset(text)


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
    if not is_lower_hex(envelope["id"], 32):
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
    if not (
        isinstance(digest, str) and digest.startswith("sha256:") and is_lower_hex(digest[7:], 64)
    ):
        problems.append("field 'payload.digest' is malformed")
    salt = payload.get("salt")
    if not (isinstance(salt, str) and is_lower_hex(salt, 32)):
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
