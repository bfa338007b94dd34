"""The rules for single values: the limits, event times, branch names,
scope ids and capsule ids.

Part of the event rules gathered by :mod:`gitmem.records.validate` (import
them from there); spec/storage.md §17 writes them down. Standard library
only: it runs on the capture hot path.
"""

from __future__ import annotations

from gitmem.records import canonical

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- limits ------------------------------------------------------------------------
MIN_TIME_US = 946_684_800_000_000  # 2000-01-01T00:00:00Z: older times are errors
MAX_TIME_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59Z: the last time readers can print
DEFAULT_SKEW_S = (
    86_400  # edda.maxClockSkew's default (one day): how far ahead of the wall clock a time may be
)
MAX_SCOPE_BYTES = 256  # a scope id (session, agent, user, repo, branch …)
MAX_KEY_BYTES = 1024  # an object key anywhere in a body
MAX_DEPTH = 64  # nesting of objects and arrays in a body
MAX_BODY_BYTES = 16 * 1024 * 1024  # a body's canonical encoding (the envelope's size)
MAX_ENVELOPE_BYTES = 64 * 1024  # an envelope's canonical encoding
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what Arrow, msgspec and git all read

# Plain string checks, not regexes: compiling five patterns cost every hook
# process about half a millisecond.
_LOWER_HEX = frozenset("0123456789abcdef")
# C0, DEL, C1 and the Unicode line and paragraph separators: a scope id is
# one line of plain text wherever it is printed.
_CONTROL = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u2028", "\u2029"])


def is_lower_hex(text: str, length: int) -> bool:
    """``text`` is exactly ``length`` lower-case hex digits."""
    return len(text) == length and _LOWER_HEX.issuperset(text)


class Limits:
    """The bounds that depend on configuration (a plain class: hot path);
    :func:`gitmem.storage.gitconfig.limits` reads them from git config."""

    __slots__ = ("skew_us",)

    def __init__(self, skew_s: int = DEFAULT_SKEW_S) -> None:
        self.skew_us = skew_s * 1_000_000


def branch_problem(name: Any) -> str | None:
    """Why ``name`` is not a branch name git accepts (None when it is).

    Git's rules for ``refs/heads/<name>`` (``git check-ref-format --branch``):
    no component starting with ``.`` or ending in ``.lock``; no ``..``, ``@{``,
    ``//``, control characters, space, ``~ ^ : ? * [ \\``; not starting with
    ``-`` or ``/``; not ending in ``/`` or ``.``; not ``@`` or ``HEAD``.
    """
    why = scope_value_problem(name)  # a string, short, one line, valid UTF-8
    if why:
        return why
    if name in ("@", "HEAD") or name.startswith("-"):
        return "is reserved by git"
    if any(c in name for c in " ~^:?*[\\"):
        return "has a character git forbids in branch names"
    if ".." in name or "@{" in name or "//" in name:
        return "has a sequence git forbids in branch names ('..', '@{' or '//')"
    if name.startswith("/") or name.endswith(("/", ".")):
        return "starts or ends with a character git forbids there"
    for part in name.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "has a component starting with '.' or ending in '.lock'"
    return None


def time_problem(
    time_us: Any, now_us: int | None, limits: Limits, *, strict: bool = True
) -> str | None:
    """Why ``time_us`` is not an acceptable event time (None when it is).

    Times before 2000 are errors for new events (``strict``), before 1970 for
    any; with ``now_us``, so are times more than ``limits.skew_us`` ahead of it
    (a machine whose clock ran ahead, or a forged event that would drag every
    clone's clock into the future).
    """
    if not isinstance(time_us, int) or isinstance(time_us, bool):
        return "is not an integer (microseconds since the Unix epoch)"
    if time_us < (MIN_TIME_US if strict else 0):
        return "is before the year 2000" if strict else "is before 1970"
    if now_us is not None and time_us > now_us + limits.skew_us:
        ahead = (time_us - now_us) // 1_000_000
        return (
            f"is {ahead} s ahead of this machine's clock "
            f"(at most {limits.skew_us // 1_000_000} s: git config edda.maxClockSkew)"
        )
    if time_us > MAX_TIME_US:
        return "is after the year 9999"
    return None


def scope_value_problem(value: Any) -> str | None:
    """Why a scope id (session, agent, user, repo, capsule…) is unacceptable."""
    if not isinstance(value, str):
        return "is not a string"
    if not value:
        return "is empty"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_SCOPE_BYTES:
        return f"is longer than {MAX_SCOPE_BYTES} bytes"
    if canonical.has_surrogate(value):
        return "is not valid UTF-8"
    if not _CONTROL.isdisjoint(value):
        return "has a control character"
    return None


def capsule_problem(value: Any) -> str | None:
    """Why ``value`` is not a capsule id (the 32-hex id of its capsule_open event)."""
    if not isinstance(value, str) or not is_lower_hex(value, 32):
        return "is not an event id (32 lower-case hex digits)"
    return None
