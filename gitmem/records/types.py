"""The stored records of format v1 as msgspec Structs.

Two kinds of record live in the ledger:

* the **envelope** (:class:`Envelope`), kept in the hashed commit chain forever;
* the **body** of each event type (``Note``, ``Decision`` …), kept in the
  rewritable payload store so that redaction can remove it.

Readers keep the raw decoded dicts next to these typed views, so fields and
whole event types written by a newer gitmem survive reading and re-export:
the Structs validate what this version writes, they never filter what it reads.
``formats/`` holds the JSON Schema generated from these classes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

ObservationKind = Literal["tool_call", "command", "file_diff", "error", "message"]
CapsuleKind = Literal["session", "workflow", "node"]


class _Body(msgspec.Struct, omit_defaults=True, kw_only=True, forbid_unknown_fields=False):
    """Base of every event body: optional fields left at their default are not stored."""


# Constraints of spec/storage.md §17, so that formats/ (generated from these
# Structs) carries them; gitmem.records.validate enforces them on the hot path
# without msgspec, and tests/boundary/test_validate_rules.py checks they agree.
_ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$"
ScopeId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=256,
        pattern=_ONE_LINE,
        # JSON Schema counts characters; the rule (values.py) is 256 UTF-8 bytes.
        description="at most 256 UTF-8 bytes (so at most 256 characters), one line",
    ),
]
Hex32 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]


class Scope(msgspec.Struct, omit_defaults=True, kw_only=True, forbid_unknown_fields=False):
    """Who and where: the scope ids every event carries."""

    repo: ScopeId | None = None
    branch: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=256,
                pattern=_ONE_LINE,
                description=(
                    "at most 256 UTF-8 bytes; a branch name git accepts"
                    " (git check-ref-format --branch) in events written now"
                ),
            ),
        ]
        | None
    ) = None
    session: ScopeId | None = None
    agent: ScopeId | None = None
    user: ScopeId | None = None


class PayloadRef(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """How the envelope pins its body: a salted SHA-256 and the body's size."""

    # "sha256:" + 64 hex of sha256(salt bytes + canonical body)
    digest: Annotated[str, msgspec.Meta(pattern="^sha256:[0-9a-f]{64}$")]
    salt: Hex32  # 32 hex characters (16 random bytes)
    # length in bytes of the canonical body
    size: Annotated[int, msgspec.Meta(ge=0, le=16 * 1024 * 1024)]


class Envelope(msgspec.Struct, omit_defaults=True, kw_only=True, forbid_unknown_fields=False):
    """The part of an event that stays in the hashed chain forever."""

    v: Annotated[int, msgspec.Meta(ge=1)]  # record format version (1)
    id: Hex32  # sha256(canonical envelope without "id")[:32]
    type: Annotated[str, msgspec.Meta(pattern="^[a-z][a-z0-9_]{0,63}$")]
    # hybrid-logical microseconds since the Unix epoch, 2000-01-01 .. 9999-12-31
    time: Annotated[int, msgspec.Meta(ge=946_684_800_000_000, le=253_402_300_799_999_999)]
    scope: Scope
    capsule: Hex32 | None = None
    payload: PayloadRef


class Note(_Body):
    text: str
    tags: list[str] = []
    paths: list[str] = []


class Decision(_Body):
    """A decision on ``key``; a later decision on the same key supersedes it."""

    key: str
    value: str
    reason: str = ""
    scope: str = ""  # what it applies to, e.g. "repo", "module:storage"
    paths: list[str] = []
    tags: list[str] = []
    supersedes: str | None = None  # id of the decision it replaced when recorded


class Ratify(_Body):
    """Makes an agent's decision binding."""

    target: str
    note: str = ""


class RejectedIdea(msgspec.Struct, omit_defaults=True, kw_only=True, forbid_unknown_fields=False):
    idea: str
    reason: str = ""


class Checkpoint(_Body):
    next: str = ""
    summary: str = ""
    hypotheses: list[str] = []
    rejected: list[RejectedIdea] = []
    open_questions: list[str] = []
    paths: list[str] = []


class Observation(_Body):
    kind: ObservationKind
    tool: str = ""
    input: str = ""  # summary of the input
    result: str = ""  # summary of the result
    files: list[str] = []
    exit_code: int | None = None


class Prompt(_Body):
    text: str


class CapsuleOpen(_Body):
    """Opens a capsule; the capsule's id is this event's id."""

    kind: CapsuleKind
    intent: str = ""
    parent: str | None = None
    scope_ids: dict[str, str] = {}


class CapsuleClose(_Body):
    capsule: str
    summary: str = ""


class Pin(_Body):
    """Pins an event (or ``summary:<capsule id>``) into every context pack."""

    target: str
    reason: str = ""
    expires: int | None = None  # microseconds since the epoch


class Unpin(_Body):
    target: str


class Learning(_Body):
    text: str
    topic: str = ""
    paths: list[str] = []
    tags: list[str] = []


class Pattern(Learning):
    pass


class Mistake(Learning):
    pass


class CommitLink(_Body):
    sha: str  # a code commit, as a string: never a parent or tree entry
    branch: str = ""
    session: str = ""
    message: str = ""


class CommitRewrite(_Body):
    """Code commits rewritten by amend or rebase: ``map`` pairs [old sha, new sha]."""

    kind: str  # "amend", "rebase", or what git's post-rewrite hook names
    map: list[list[str]]


class Redaction(_Body):
    target: str
    reason: str


BODY_TYPES: dict[str, type[_Body]] = {
    "note": Note,
    "decision": Decision,
    "ratify": Ratify,
    "checkpoint": Checkpoint,
    "observation": Observation,
    "prompt": Prompt,
    "capsule_open": CapsuleOpen,
    "capsule_close": CapsuleClose,
    "pin": Pin,
    "unpin": Unpin,
    "learning": Learning,
    "pattern": Pattern,
    "mistake": Mistake,
    "commit_link": CommitLink,
    "commit_rewrite": CommitRewrite,
    "redaction": Redaction,
}


def validate_body(event_type: str, body: dict[str, Any]) -> dict[str, Any]:
    """Validate ``body`` for a known type and return it in stored form.

    Unknown fields are kept (a newer writer may add them); defaults are
    dropped. Raises :class:`msgspec.ValidationError` when a field is invalid.
    """
    struct = msgspec.convert(body, BODY_TYPES[event_type])
    stored: dict[str, Any] = msgspec.to_builtins(struct)
    known = set(type(struct).__struct_fields__)
    for key, value in body.items():
        if key not in known:
            stored[key] = value
    return stored


def typed_body(event_type: str, body: dict[str, Any]) -> _Body | None:
    """A typed view of a stored body, or None for an unknown type or invalid body."""
    cls = BODY_TYPES.get(event_type)
    if cls is None:
        return None
    try:
        return msgspec.convert(body, cls)
    except msgspec.ValidationError:
        return None
