"""What the parts of the scrubber share: the marker, results, the detector row, lazy regexes."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

# The marker the scrubber writes is MARKER_PREFIX + detector name + "]".
# Anything already shaped like it is left alone, which makes scrubbing
# idempotent.
MARKER_PREFIX = "[REDACTED:"


def marker(detector: str) -> str:
    """The text that replaces a secret found by ``detector``."""
    return f"{MARKER_PREFIX}{detector}]"


class Frozen:
    """Immutable value object with equality, hashing and repr by fields.

    Hand-written instead of ``@dataclass(frozen=True)``: dataclasses imports
    inspect, about 5 ms on every hook process.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Finding(Frozen):
    """One masked secret.

    ``start``/``end`` are offsets into the *original* text of the span that was
    replaced by ``[REDACTED:<detector>]``.
    """

    __slots__ = ("detector", "end", "start")
    detector: str
    start: int
    end: int

    def __init__(self, detector: str, start: int, end: int) -> None:
        object.__setattr__(self, "detector", detector)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)


class ScrubResult(Frozen):
    """The scrubbed text and what was masked in it, in text order."""

    __slots__ = ("findings", "text")
    text: str
    findings: tuple[Finding, ...]

    def __init__(self, text: str, findings: tuple[Finding, ...]) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "findings", findings)


class ScrubPatternError(ValueError):
    """An extra or allowlist pattern from configuration is not a valid regex."""


# (start, end, detector name) of the text to replace, as offsets into the text.
Span = tuple[int, int, str]
# Validates one match of a row's regex: ``check(match, text)`` returns the
# span to mask, or None to reject the match.  ``text`` is the original text
# (offsets are the same in its lower-cased copy).
Check = Callable[[re.Match[str], str], Span | None]
# Finds the positions a row is tried at: ``locate(text, lowered_text)``,
# sorted.  Computed at most once per scan and shared by the rows that name
# the same function.
Locator = Callable[[str, str], list[int]]


class Lazy:
    """A regex compiled on first use.

    Compiling every regex of the scrubber took about 8 ms of each hook
    process, while a typical tool call needs a handful of them: rows are
    skipped when their needles are absent, and the helpers of the checks run
    only on candidates.
    """

    __slots__ = ("_flags", "_pattern", "_regex")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._regex: re.Pattern[str] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lazy) and (self._pattern, self._flags) == (
            other._pattern,
            other._flags,
        )

    def __hash__(self) -> int:
        return hash((self._pattern, self._flags))

    def __repr__(self) -> str:
        return f"Lazy({self._pattern!r})"

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled regex (compiled now if this is the first use)."""
        if self._regex is None:
            self._regex = re.compile(self._pattern, self._flags)
        return self._regex

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.regex.finditer(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.regex.match(text, pos, endpos)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.regex.search(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.regex.fullmatch(text, pos, endpos)

    def findall(self, text: str) -> list[str]:
        return self.regex.findall(text)

    def split(self, text: str) -> list[str]:
        return self.regex.split(text)

    def subn(self, repl: str, text: str) -> tuple[str, int]:
        return self.regex.subn(repl, text)


class Detector(Frozen):
    """One row of the detector table: a regex, where to run it, and how to judge a match.

    * ``name``: the detector a match reports (``[REDACTED:<name>]``), unless
      ``check`` names it.  Row names are unique; rows that report the same
      detector, or whose check picks the name, say so in ``name``.
    * ``pattern``: the regex source, or an already compiled regex (configured
      patterns, compiled when the scrubber is made so errors surface then).
      A source is compiled on first use.
    * ``needles``: literals one of which every match contains, in the text the
      row runs on.  When none is present the row is skipped, and its regex is
      never even compiled.  Empty: always run.
    * ``lower``: run on a lower-cased copy of the text (same offsets) instead
      of the text.  ``re`` searches fast for a pattern's leading literal but
      crawls through case-insensitive alternations, so case-insensitive
      patterns are written in lower case and set this instead of
      ``re.IGNORECASE``.
    * ``at``: try the regex with ``match`` only at the positions this function
      finds (once per scan, shared by every row naming it), instead of
      searching the whole text.
    * ``check``: judges each match and returns the span to mask (see
      :data:`Check`).  None: the match is the secret, or only its ``secret``
      group when the pattern has one.
    """

    __slots__ = ("at", "check", "lower", "name", "needles", "pattern", "regex")
    name: str
    pattern: str | re.Pattern[str]
    needles: tuple[str, ...]
    lower: bool
    at: Locator | None
    check: Check | None
    regex: re.Pattern[str] | Lazy

    def __init__(
        self,
        name: str,
        pattern: str | re.Pattern[str],
        *,
        needles: tuple[str, ...] = (),
        lower: bool = False,
        at: Locator | None = None,
        check: Check | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "needles", needles)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "check", check)
        object.__setattr__(self, "regex", Lazy(pattern) if isinstance(pattern, str) else pattern)
