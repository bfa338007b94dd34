"""Parse and format the times users type: ISO 8601, relative ("2h"), or microseconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from gitmem.errors import UsageError
from gitmem.records.validate import MAX_TIME_US

_RELATIVE = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

# The times a user may give: what datetime can show (years 1 to 9999), which
# also keeps every value inside the 64-bit integers of the index columns.
MIN_TIME_US = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
_MAX_DIGITS = 20  # more digits cannot be in range (and int() refuses 4,300)


def parse_time(text: str, now_us: int) -> int:
    """Microseconds since the epoch for ``text``.

    Accepts an ISO 8601 date or date-time (UTC unless an offset is given),
    a relative age before ``now_us`` (``90s``, ``15m``, ``2h``, ``3d``, ``1w``),
    ``now``, or a plain integer of microseconds. A time outside the years 1
    to 9999 is a UsageError.
    """
    value = text.strip()
    if value == "now":
        return _in_range(text, now_us)
    if value.isascii() and value.isdigit():  # "²".isdigit() is true, int() refuses it
        return _in_range(text, int(value) if len(value) <= _MAX_DIGITS else MAX_TIME_US + 1)
    match = _RELATIVE.match(value)
    if match:
        digits = match.group(1)
        if len(digits) > _MAX_DIGITS:
            return _in_range(text, MIN_TIME_US - 1)
        return _in_range(text, now_us - int(digits) * _UNITS[match.group(2)] * 1_000_000)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"cannot read the time {text!r}",
            "use ISO 8601 (2026-11-21 or 2026-11-21T09:30:00Z), an age like 2h or 3d, or microseconds",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        micros = int(parsed.timestamp() * 1_000_000)
    except (OverflowError, ValueError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        micros = MIN_TIME_US - 1
    return _in_range(text, micros)


def _in_range(text: str, time_us: int) -> int:
    if not MIN_TIME_US <= time_us <= MAX_TIME_US:
        raise UsageError(
            f"the time {text.strip()[:40]!r} is out of range",
            "times must lie between the years 1 and 9999: give a date such as"
            " 2026-11-21, or a shorter age such as 3d",
        )
    return time_us


def format_time(time_us: int) -> str:
    """UTC ISO 8601 to the second (the same on every machine)."""
    return datetime.fromtimestamp(time_us / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
