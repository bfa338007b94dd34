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


class _Walk:
    """One pass over a body: scrub every string (keys too), then truncate."""

    __slots__ = ("masked", "max_bytes", "scrubber", "truncated")

    def __init__(self, scrubber: Scrubber | None, max_bytes: int) -> None:
        self.scrubber = scrubber
        self.max_bytes = max_bytes
        self.masked = 0
        self.truncated = 0

    def text(self, value: str, *, cut: bool = True) -> str:
        removed = 0
        window = self.max_bytes + SCRUB_MARGIN
        if cut and len(value) > window // 4:  # a str of n chars has at least n bytes
            data = value.encode("utf-8")
            if len(data) > window:
                value = data[:window].decode("utf-8", "ignore")
                removed = len(data) - len(value.encode("utf-8"))
        if self.scrubber is not None:
            result = self.scrubber.scrub(value)
            if result.findings:
                self.masked += len(result.findings)
                value = result.text
        if cut:
            value, was_cut = truncate_text(value, self.max_bytes, removed)
            self.truncated += was_cut
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                # Keys are stored too, so a token used as a key is masked like
                # any other; two keys masked alike both survive, numbered.
                name = self.text(key, cut=False) if self.scrubber is not None else key
                if name in out:
                    n = 2
                    while f"{name}#{n}" in out:
                        n += 1
                    name = f"{name}#{n}"
                out[name] = self.value(item)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value


def prepare_body(
    body: dict[str, Any],
    scrubber: Scrubber | None,
    max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
) -> Prepared:
    """Normalise ``body`` (raises UsageError on unstorable values), mask secrets
    in every string (keys included), then truncate oversized strings with a marker."""
    walk = _Walk(scrubber, max_field_bytes)
    data = walk.value(canonical.normalize(body))
    return Prepared(body=data, secrets_masked=walk.masked, fields_truncated=walk.truncated)
