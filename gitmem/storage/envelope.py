"""Sealing events: body + scope -> (envelope, canonical body bytes).

The envelope is what stays in the hashed chain; the body bytes go to the
rewritable payload store. Standard library only (capture hot path).
"""

from __future__ import annotations

import os

from gitmem.records import canonical
from gitmem.records.validate import envelope_problems

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RECORD_VERSION", "SALT_BYTES", "envelope_problems", "seal"]

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
