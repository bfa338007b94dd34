"""Prepare an event body for storage: normalise, scrub secrets, truncate.

Runs on the capture hot path: standard library only. Scrubbing happens before
truncation so a secret cut in half by the size limit cannot slip through.
"""

from __future__ import annotations

from gitmem.storage import canonical

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.capture.scrub import Scrubber

DEFAULT_MAX_FIELD_BYTES = 256 * 1024
TRUNCATION_MARKER = "\n…[gitmem: truncated {removed} bytes]"


class Prepared:
    """A body ready to seal, with what capture did to it.

    A plain class: dataclasses imports inspect (~5 ms) on the hook path.
    """

    __slots__ = ("body", "fields_truncated", "secrets_masked")

    def __init__(self, body: dict[str, Any], secrets_masked: int, fields_truncated: int) -> None:
        self.body = body
        self.secrets_masked = secrets_masked
        self.fields_truncated = fields_truncated


def truncate_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes plus an explicit marker."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    kept = data[:max_bytes].decode("utf-8", "ignore")  # never split a character
    removed = len(data) - len(kept.encode("utf-8"))
    return kept + TRUNCATION_MARKER.format(removed=removed), True


def _truncate(value: Any, max_bytes: int) -> tuple[Any, int]:
    if isinstance(value, str):
        text, cut = truncate_text(value, max_bytes)
        return text, int(cut)
    if isinstance(value, dict):
        count = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = _truncate(item, max_bytes)
            count += n
        return out, count
    if isinstance(value, list):
        count = 0
        items = []
        for item in value:
            new, n = _truncate(item, max_bytes)
            items.append(new)
            count += n
        return items, count
    return value, 0


def prepare_body(
    body: dict[str, Any],
    scrubber: Scrubber | None,
    max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
) -> Prepared:
    """Normalise ``body`` (raises UsageError on unstorable values), mask secrets
    in every string value, then truncate oversized strings with a marker."""
    data = canonical.normalize(body)
    masked = 0
    if scrubber is not None:
        data, masked = scrubber.scrub_value(data)
    data, truncated = _truncate(data, max_field_bytes)
    return Prepared(body=data, secrets_masked=masked, fields_truncated=truncated)
