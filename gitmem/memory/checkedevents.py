"""The events a check has met, each kept as the few bytes its payload check
needs: ``verify`` reads every envelope of every chain, and a pull every
incoming one, before checking the payloads, and holding the decoded
envelopes took 2-3 KB an event (3 GB for a verification at a million
events, 1.7 GB for a fresh clone's first pull). An event here is its id,
its type, its payload's size, salt and digest (packed: 62 bytes) and where
it was met (an index into the places met)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

_DIGEST = "sha256:"
_ROW = struct.Struct("<QIH16s32s")  # size, place, type, salt, digest


class CheckedEvents:
    """Sound events by id, in the order first met, each with its place (the
    ref and commit it was first met at) and its envelope's payload record."""

    def __init__(self) -> None:
        self._rows: dict[str, bytes] = {}
        self._odd: dict[str, tuple[int, dict[str, Any]]] = {}  # payloads that do not pack
        self._places: list[tuple[str, str]] = []
        self._place_of: dict[tuple[str, str], int] = {}
        self._types: list[str] = []
        self._type_of: dict[str, int] = {}
        self.redactions: list[str] = []  # the ids of redaction events, in order met

    def add(self, event_id: str, envelope: dict[str, Any], ref: str, commit: str) -> bool:
        """Keep a sound event met on ``ref`` at ``commit``; False (nothing
        kept) when it was met before."""
        if event_id in self._rows or event_id in self._odd:
            return False
        place = self._place_of.get((ref, commit))
        if place is None:
            place = self._place_of[(ref, commit)] = len(self._places)
            self._places.append((ref, commit))
        kind = str(envelope.get("type"))
        number = self._type_of.get(kind)
        if number is None:
            number = self._type_of[kind] = len(self._types)
            self._types.append(kind)
        payload = envelope["payload"]
        row = _pack(payload, place, number) if number < 1 << 16 else None
        if row is None:
            self._odd[event_id] = (place, {"type": kind, "payload": payload})
        else:
            self._rows[event_id] = row
        if envelope.get("type") == "redaction":
            self.redactions.append(event_id)
        return True

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._rows or event_id in self._odd

    def __iter__(self) -> Iterator[str]:
        yield from self._rows
        yield from self._odd

    def __len__(self) -> int:
        return len(self._rows) + len(self._odd)

    def where(self, event_id: str) -> tuple[str, str]:
        """(ref, commit) where the event was first met."""
        row = self._rows.get(event_id)
        place = self._odd[event_id][0] if row is None else _ROW.unpack(row)[1]
        return self._places[place]

    def payload(self, event_id: str) -> dict[str, Any]:
        """The envelope's payload record: ``{"size", "salt", "digest"}``."""
        payload: dict[str, Any] = self.envelope(event_id)["payload"]
        return payload

    def envelope(self, event_id: str) -> dict[str, Any]:
        """What the payload checks read of the envelope: ``{"id", "type", "payload"}``."""
        row = self._rows.get(event_id)
        if row is None:
            odd = self._odd[event_id][1]
            return {"id": event_id, "type": odd["type"], "payload": odd["payload"]}
        size, _place, kind, salt, digest = _ROW.unpack(row)
        payload = {"size": size, "salt": salt.hex(), "digest": _DIGEST + digest.hex()}
        return {"id": event_id, "type": self._types[kind], "payload": payload}


def _pack(payload: Any, place: int, kind: int) -> bytes | None:
    """The payload record as a row, or None when it is not in the usual shape
    (then kept as it is: the check reports what is wrong with it)."""
    try:
        size, salt, digest = payload["size"], payload["salt"], payload["digest"]
        if (
            type(size) is not int
            or not 0 <= size < 1 << 64
            or not isinstance(salt, str)
            or not isinstance(digest, str)
            or not digest.startswith(_DIGEST)
        ):
            return None
        raw_salt, raw_digest = bytes.fromhex(salt), bytes.fromhex(digest[len(_DIGEST) :])
        if len(raw_salt) != 16 or len(raw_digest) != 32:
            return None
        if raw_salt.hex() != salt or raw_digest.hex() != digest[len(_DIGEST) :]:
            return None  # upper case: kept as written, so the check compares it as written
        return _ROW.pack(size, place, kind, raw_salt, raw_digest)
    except (KeyError, TypeError, ValueError):
        return None
