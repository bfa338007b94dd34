"""Canonical encoding, digests and ids of stored records (format v1).

The rules (spec/storage.md, "Canonical encoding"):

* JSON text encoded as UTF-8, no byte-order mark, no insignificant white space.
* Object keys sorted by Unicode code point; keys are unique.
* Numbers are integers only (no floats, no exponent), written in decimal.
* Strings are written as UTF-8, never ``\\u``-escaped except the characters
  JSON requires: ``"`` and ``\\`` are backslash-escaped, and U+0000..U+001F use
  the short escapes ``\\b \\f \\n \\r \\t`` or ``\\u00XX`` (lower-case hex).
  Lone surrogates cannot be encoded and are replaced by U+FFFD at capture.
* ``true``, ``false``, ``null`` as in JSON.

Python's ``json.dumps(sort_keys=True, ensure_ascii=False, separators=(",", ":"))``
produces exactly this for the values we allow, so the capture hot path needs no
third-party encoder. This module is on the hot path: standard library only.
"""

from __future__ import annotations

import json

from gitmem.errors import UsageError

try:  # the builtin module loads in microseconds; hashlib pulls in OpenSSL (~3 ms)
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Python builds
    from hashlib import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ID_HEX_LENGTH = 32  # 128 bits of SHA-256: collisions are not a practical concern
_SURROGATES = {i: 0xFFFD for i in range(0xD800, 0xE000)}


def _check(value: Any, path: str) -> Any:
    """Validate and normalise a value for canonical encoding (raises UsageError)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        # Lone surrogates (e.g. from surrogateescape'd bytes) are not UTF-8.
        return value.translate(_SURROGATES) if has_surrogate(value) else value
    if isinstance(value, float):
        raise UsageError(
            f"floating-point number at {path or 'top level'} cannot be stored",
            "store numbers as integers (e.g. milliseconds) or as strings",
        )
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(f"object key {key!r} at {path or 'top level'} is not a string")
            out[_check(key, path)] = _check(item, f"{path}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [_check(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise UsageError(
        f"value of type {type(value).__name__} at {path or 'top level'} cannot be stored"
    )


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def normalize(value: Any) -> Any:
    """Return ``value`` as plain JSON data that :func:`encode` accepts.

    Tuples become lists and lone surrogates become U+FFFD; floats and other
    types are rejected with :class:`~gitmem.errors.UsageError`.
    """
    return _check(value, "")


def encode(value: Any) -> bytes:
    """Canonical bytes of already-normalised JSON data."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def decode(data: bytes) -> Any:
    """Parse canonical (or any JSON) bytes; raises ValueError on malformed input."""
    return json.loads(data.decode("utf-8"))


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not canonical (floating-point)")


def decode_exact(data: bytes) -> Any:
    """:func:`decode`, refusing what no canonical encoding holds: floating-point
    numbers, ``NaN`` and ``Infinity`` (ValueError)."""
    return json.loads(
        data.decode("utf-8"), parse_float=_refuse_constant, parse_constant=_refuse_constant
    )


def is_canonical(data: bytes, value: Any = None) -> bool:
    """True when ``data`` is exactly the canonical encoding of what it decodes
    to. ``value``: ``data`` already decoded by :func:`decode_exact`.

    Decoded JSON needs no :func:`normalize`: floats are refused while
    decoding, and a lone surrogate (an escape in ``data``) cannot be encoded
    as UTF-8, so neither is canonical, as normalising would have found at the
    cost of a walk through the value."""
    try:
        return encode(decode_exact(data) if value is None else value) == data
    except (ValueError, UnicodeEncodeError):
        return False


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return str(sha256(data).hexdigest())


def payload_digest(salt_hex: str, body_bytes: bytes) -> str:
    """The salted payload digest stored in an envelope: ``sha256:`` + hex."""
    return "sha256:" + str(sha256(bytes.fromhex(salt_hex) + body_bytes).hexdigest())


def event_id(envelope_without_id: dict[str, Any]) -> str:
    """Derive an event id: the first 128 bits (hex) of SHA-256 of the canonical
    envelope without its ``id`` field."""
    return sha256_hex(encode(envelope_without_id))[:ID_HEX_LENGTH]
