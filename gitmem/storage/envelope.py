"""Sealing events: body + scope -> (envelope, canonical body bytes).

The envelope is what stays in the hashed chain; the body bytes go to the
rewritable payload store. Standard library only (capture hot path).
"""

from __future__ import annotations

import os

from gitmem.storage import canonical

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECORD_VERSION = 1
SALT_BYTES = 16


def seal(
    event_type: str,
    body: dict[str, Any],
    *,
    scope: dict[str, str | None],
    time_us: int,
    capsule: str | None = None,
    salt_hex: str | None = None,
) -> tuple[dict[str, Any], bytes]:
    """Build the envelope for an already-normalised body.

    ``scope`` keys with empty values are left out. Returns the envelope (with
    its derived ``id``) and the canonical body bytes its digest covers.
    """
    body_bytes = canonical.encode(body)
    salt = salt_hex if salt_hex is not None else os.urandom(SALT_BYTES).hex()
    envelope: dict[str, Any] = {
        "v": RECORD_VERSION,
        "type": event_type,
        "time": time_us,
        "scope": {k: v for k, v in scope.items() if v},
        "payload": {
            "digest": canonical.payload_digest(salt, body_bytes),
            "salt": salt,
            "size": len(body_bytes),
        },
    }
    if capsule:
        envelope["capsule"] = capsule
    envelope["id"] = canonical.event_id(envelope)
    return envelope, body_bytes


def envelope_problems(envelope: Any) -> list[str]:
    """Structural problems of a decoded envelope (empty when it is sound).

    Checks field presence and types and that ``id`` is re-derivable. A record
    with ``v`` above :data:`RECORD_VERSION` is reported by the caller, not here.
    """
    problems: list[str] = []
    if not isinstance(envelope, dict):
        return ["envelope is not a JSON object"]
    expect: dict[str, type | tuple[type, ...]] = {
        "v": int,
        "id": str,
        "type": str,
        "time": int,
        "scope": dict,
        "payload": dict,
    }
    for key, kind in expect.items():
        if key not in envelope:
            problems.append(f"field '{key}' is missing")
        elif not isinstance(envelope[key], kind) or isinstance(envelope[key], bool):
            problems.append(f"field '{key}' has the wrong type")
    if "capsule" in envelope and not isinstance(envelope["capsule"], str):
        problems.append("field 'capsule' has the wrong type")
    payload = envelope.get("payload")
    if isinstance(payload, dict):
        digest = payload.get("digest")
        if not (isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 71):
            problems.append("field 'payload.digest' is malformed")
        salt = payload.get("salt")
        if not (isinstance(salt, str) and len(salt) == 2 * SALT_BYTES and _is_hex(salt)):
            problems.append("field 'payload.salt' is malformed")
        if not isinstance(payload.get("size"), int):
            problems.append("field 'payload.size' is malformed")
    if not problems:
        without_id = {k: v for k, v in envelope.items() if k != "id"}
        if canonical.event_id(without_id) != envelope["id"]:
            problems.append("field 'id' does not match the envelope's content")
    return problems


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True
