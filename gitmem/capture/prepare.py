"""Prepare an event body for storage: normalise, scrub secrets, truncate.

Runs on the capture hot path: standard library only. Scrubbing happens before
truncation so a secret cut in half by the size limit cannot slip through.
"""

from __future__ import annotations

from gitmem.records import canonical

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.capture.scrub import Scrubber

DEFAULT_MAX_FIELD_BYTES = 256 * 1024
TRUNCATION_MARKER = "\n…[gitmem: truncated {removed} bytes]"


# Scrubbing looks this far past the truncation point: a secret that straddles
# the cut is seen whole and masked, while a 50 MB tool output costs no more
# to scrub than max_field_bytes + 64 KiB.
SCRUB_MARGIN = 64 * 1024


def truncate_text(text: str, max_bytes: int, already_removed: int = 0) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes plus an explicit marker
    (``already_removed``: bytes an earlier cut took off the end)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes and not already_removed:
        return text, False
    kept = data[:max_bytes].decode("utf-8", "ignore")  # never split a character
    removed = len(data) - len(kept.encode("utf-8")) + already_removed
    return kept + TRUNCATION_MARKER.format(removed=removed), True


class _Fit:
    """Scrubs and truncates each string value of one body (keys are scrubbed
    by the scrubber's own walk)."""

    __slots__ = ("max_bytes", "scrubber")

    def __init__(self, scrubber: Scrubber, max_bytes: int) -> None:
        self.scrubber = scrubber
        self.max_bytes = max_bytes

    def text(self, value: str) -> tuple[str, int]:
        """(the stored form of ``value``, 1 when it differs, else 0)."""
        original = value
        removed = 0
        window = self.max_bytes + SCRUB_MARGIN
        if len(value) > window // 4:  # a str of n characters has at least n bytes
            data = value.encode("utf-8")
            if len(data) > window:
                value = data[:window].decode("utf-8", "ignore")
                removed = len(data) - len(value.encode("utf-8"))
        result = self.scrubber.scrub(value)
        value, _ = truncate_text(result.text, self.max_bytes, removed)
        return value, int(value != original)


def prepare_body(
    body: dict[str, Any], scrubber: Scrubber, max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES
) -> dict[str, Any]:
    """``body`` as stored: normalised (UsageError on unstorable values), secrets
    masked in every string (keys included), oversized strings truncated with
    a marker, in one pass."""
    fit = _Fit(scrubber, max_field_bytes)
    data, _ = scrubber.scrub_value(canonical.normalize(body), on_string=fit.text)
    assert isinstance(data, dict)
    return data
