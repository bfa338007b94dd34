"""Parse and format the times users type: ISO 8601, relative ("2h"), or microseconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from gitmem.errors import UsageError

_RELATIVE = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now_us: int) -> int:
    """Microseconds since the epoch for ``text``.

    Accepts an ISO 8601 date or date-time (UTC unless an offset is given),
    a relative age before ``now_us`` (``90s``, ``15m``, ``2h``, ``3d``, ``1w``),
    ``now``, or a plain integer of microseconds.
    """
    value = text.strip()
    if value == "now":
        return now_us
    if value.isdigit():
        return int(value)
    match = _RELATIVE.match(value)
    if match:
        return now_us - int(match.group(1)) * _UNITS[match.group(2)] * 1_000_000
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"cannot read the time {text!r}",
            "use ISO 8601 (2026-11-21 or 2026-11-21T09:30:00Z), an age like 2h or 3d, or microseconds",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1_000_000)


def format_time(time_us: int) -> str:
    """UTC ISO 8601 to the second (the same on every machine)."""
    return datetime.fromtimestamp(time_us / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
