"""The engine: runs the rows of a detector table over text and masks what they find.

It knows nothing about any particular secret; the rows (``table.py``) do.
How candidates become the masked text:

* Overlapping candidates are merged: the earliest start wins, then the longest,
  then the row listed first; the replaced span is widened to cover
  everything the overlapping candidates matched, so no tail of a secret leaks.
  A :class:`Finding` describes the span actually replaced.
* Text that is already a ``[REDACTED:...]`` marker is never matched again,
  and the output is rescanned until nothing new turns up (masking one secret
  can change the context of its neighbour), so scrubbing is idempotent.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable

from gitmem.capture.scrub.base import (
    MARKER_PREFIX,
    Detector,
    Finding,
    Lazy,
    Locator,
    ScrubPatternError,
    ScrubResult,
    Span,
    marker,
)
from gitmem.capture.scrub.table import DETECTORS

_CONFIG_HINT = "fix or remove it in git config edda.scrubPattern / edda.scrubAllow"
_MARKER = Lazy(r"\[REDACTED:[A-Za-z0-9_.-]*\]")

# Rescans after masking (see ``Scrubber.scrub``); one is the norm, more is
# pathological input, and the cap bounds the work.
_MAX_ROUNDS = 8

# (start, -end, row index, detector): sorting gives earliest start, then
# longest, then row order -- fully deterministic.
_Candidate = tuple[int, int, int, str]
# (offset in output, offset in original, length) of each unmasked stretch.
_Segment = tuple[int, int, int]


class Scrubber:
    """Finds and masks secrets in text.

    ``extra_patterns`` are regexes (``git config edda.scrubPattern``) reported
    as detector ``custom``; when a pattern has a named group ``secret`` only
    that group is masked.  A candidate whose secret text ``re.fullmatch``-es
    any ``allowlist`` regex (``edda.scrubAllow``) is left unchanged.  Raises
    :class:`ScrubPatternError` if any pattern is not a valid regex.

    ``detectors`` replaces the built-in table (``table.DETECTORS``), for
    instance to try one row on its own.
    """

    __slots__ = ("_allow", "_detectors")

    def __init__(
        self,
        extra_patterns: Iterable[str] = (),
        allowlist: Iterable[str] = (),
        *,
        detectors: Iterable[Detector] = DETECTORS,
    ) -> None:
        """Compile the configured patterns (the table's compile on first use, once per process)."""
        # A lone string is one pattern, not an iterable of one-character ones.
        if isinstance(extra_patterns, str):
            extra_patterns = (extra_patterns,)
        if isinstance(allowlist, str):
            allowlist = (allowlist,)
        custom = tuple(Detector("custom", _compile_user(p, "extra")) for p in extra_patterns)
        self._allow: tuple[re.Pattern[str], ...] = tuple(
            _compile_user(p, "allowlist") for p in allowlist
        )
        self._detectors: tuple[Detector, ...] = (*detectors, *custom)

    def scrub(self, text: str) -> ScrubResult:
        """Return ``text`` with every detected secret replaced by ``[REDACTED:<detector>]``."""
        findings = self._find(text)
        if not findings:
            return ScrubResult(text, ())
        # Masking changes the context other candidates see (a token that was
        # glued to the tail of a private key stands alone once the key became
        # a marker), so rescan the output until nothing new turns up.  This is
        # what makes scrub() idempotent; it only costs anything when
        # something was found, and one extra pass is the norm.
        for _ in range(_MAX_ROUNDS):
            out, segments = _render(text, findings)
            extra = self._find(out)
            if not extra:
                break
            findings = sorted(findings + _map_back(extra, segments), key=lambda f: f.start)
        else:
            out, _ = _render(text, findings)
        return ScrubResult(out, tuple(findings))

    def _find(self, text: str) -> list[Finding]:
        """Non-overlapping findings in ``text``, sorted by start."""
        if not text:
            return []
        scan = _Scan(text)
        candidates: list[_Candidate] = []
        for prio, det in enumerate(self._detectors):
            hay = scan.low if det.lower else text
            if det.needles and not any(n in hay for n in det.needles):
                continue
            matches: Iterable[re.Match[str]]
            if det.at is None:
                matches = det.regex.finditer(hay)
            else:
                matches = _match_at(det.regex, hay, scan.positions(det.at))
            check = det.check
            for m in matches:
                span = _whole_or_secret(m, det.name) if check is None else check(m, text)
                if span is not None:
                    candidates.append((span[0], -span[1], prio, span[2]))
        if candidates and self._allow:
            candidates = [
                c
                for c in candidates
                if not any(a.fullmatch(text[c[0] : -c[1]]) for a in self._allow)
            ]
        if candidates and MARKER_PREFIX in text:
            candidates = _drop_marker_overlaps(text, candidates)
        candidates.sort()
        merged: list[Finding] = []
        for s, neg_e, _prio, name in candidates:
            e = -neg_e
            if merged and s < merged[-1].end:
                # Overlap: the earlier/longer candidate keeps its name, but the
                # span grows so no part of the other candidate survives.
                if e > merged[-1].end:
                    merged[-1] = Finding(merged[-1].detector, merged[-1].start, e)
                continue
            merged.append(Finding(name, s, e))
        return merged

    def scrub_value(
        self, value: object, *, on_string: Callable[[str], tuple[str, int]] | None = None
    ) -> tuple[object, int]:
        """Recursively scrub every str inside dicts/lists/tuples, dict keys included;
        returns (new value, number of findings). Non-str scalars pass through unchanged.

        A key that changes keeps its masked form.  When masked keys collide
        with each other or with a key that did not change, the unchanged key
        keeps its name and the later masked ones, in the dict's order, get
        the first free suffix ``#2``, ``#3``, ... (``[REDACTED:github-token]#2``),
        so no entry is lost and the result is deterministic.

        A container without findings is returned as the same object; a changed
        one is rebuilt as a plain ``dict``/``list``/``tuple``.  Reference cycles
        are not followed.

        ``on_string`` replaces how a string value (not a key) is treated: it
        returns (new text, number of changes), and a non-zero count makes the
        containers around it rebuilt. Capture uses it to scrub and truncate in
        one pass (gitmem.capture.prepare).
        """
        return self._scrub_value(value, set(), on_string)

    def _scrub_value(
        self,
        value: object,
        active: set[int],
        on_string: Callable[[str], tuple[str, int]] | None = None,
    ) -> tuple[object, int]:
        if isinstance(value, str):
            if on_string is not None:
                return on_string(value)
            r = self.scrub(value)
            return (r.text, len(r.findings)) if r.findings else (value, 0)
        if not isinstance(value, dict | list | tuple) or id(value) in active:
            return value, 0
        active.add(id(value))
        try:
            total = 0
            if isinstance(value, dict):
                items: list[tuple[object, object]] = []
                masked_keys: list[int] = []
                for k, v in value.items():
                    nk: object = k
                    if isinstance(k, str):
                        r = self.scrub(k)
                        if r.findings:
                            nk = r.text
                            total += len(r.findings)
                            masked_keys.append(len(items))
                    nv, n = self._scrub_value(v, active, on_string)
                    total += n
                    items.append((nk, nv))
                if not total:
                    return value, 0
                if masked_keys:
                    items = _dedupe_keys(items, masked_keys)
                return dict(items), total
            seq: list[object] = []
            for v in value:
                nv, n = self._scrub_value(v, active, on_string)
                total += n
                seq.append(nv)
            if not total:
                return value, 0
            return (tuple(seq) if isinstance(value, tuple) else seq), total
        finally:
            active.discard(id(value))


@functools.cache
def default_scrubber() -> Scrubber:
    """The shared scrubber with only the built-in detectors (created once per process)."""
    return Scrubber()


def _compile_user(pattern: str, kind: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ScrubPatternError(
            f"invalid scrub {kind} pattern {pattern!r}: {exc}; {_CONFIG_HINT}"
        ) from exc


class _Scan:
    """Per-call state: the lower-cased text and the rows' positions, computed lazily."""

    __slots__ = ("_low", "_positions", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None
        self._positions: dict[Locator, list[int]] = {}

    @property
    def low(self) -> str:
        if self._low is None:
            self._low = _lower_same_length(self.text)
        return self._low

    def positions(self, locate: Locator) -> list[int]:
        """What ``locate`` finds in this text, computed once per scan."""
        found = self._positions.get(locate)
        if found is None:
            found = self._positions[locate] = locate(self.text, self.low)
        return found


def _lower_same_length(text: str) -> str:
    """``text.lower()`` with offsets preserved.

    A few characters (e.g. U+0130) lower-case to two code points, which would
    shift every later offset; those are kept as they are.
    """
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)


def _whole_or_secret(m: re.Match[str], name: str) -> Span | None:
    """Span of the ``secret`` group if the pattern has one, else of the whole match."""
    if "secret" in m.re.groupindex:
        s, e = m.span("secret")
    else:
        s, e = m.span()
    if s < 0 or s >= e:
        return None
    return (s, e, name)


def _match_at(regex: re.Pattern[str] | Lazy, low: str, starts: list[int]) -> list[re.Match[str]]:
    """``regex.match`` at each start, skipping starts inside the previous match.

    Like ``finditer``, matches never overlap, which keeps runs such as
    "password=password=password=..." linear.
    """
    out: list[re.Match[str]] = []
    end = 0
    for st in starts:
        if st < end:
            continue
        m = regex.match(low, st)
        if m is not None:
            out.append(m)
            end = m.end()
    return out


def _dedupe_keys(
    items: list[tuple[object, object]], masked: list[int]
) -> list[tuple[object, object]]:
    """Suffix masked keys (at indexes ``masked``) that collide, so none is lost."""
    masked_set = set(masked)
    # Keys that did not change keep their names whatever comes later.
    used = {k for i, (k, _) in enumerate(items) if i not in masked_set}
    out = list(items)
    for i in masked:
        key, val = out[i]
        if key in used:
            n = 2
            while f"{key}#{n}" in used:
                n += 1
            key = f"{key}#{n}"
            out[i] = (key, val)
        used.add(key)
    return out


def _render(text: str, findings: list[Finding]) -> tuple[str, list[_Segment]]:
    """Replace each finding by its marker; also return the unmasked segments."""
    out: list[str] = []
    segments: list[_Segment] = []
    pos = 0
    size = 0
    for f in findings:
        segments.append((size, pos, f.start - pos))
        out.append(text[pos : f.start])
        mark = marker(f.detector)
        out.append(mark)
        size += f.start - pos + len(mark)
        pos = f.end
    segments.append((size, pos, len(text) - pos))
    out.append(text[pos:])
    return "".join(out), segments


def _map_back(extra: list[Finding], segments: list[_Segment]) -> list[Finding]:
    """Translate findings in rendered output back to original offsets.

    Findings never overlap a marker (``_drop_marker_overlaps``), so each lies
    inside one unmasked segment, which maps to the original by a shift.
    """
    out_starts = [seg[0] for seg in segments]
    mapped = []
    for f in extra:
        out_pos, orig_pos, _length = segments[bisect.bisect_right(out_starts, f.start) - 1]
        shift = orig_pos - out_pos
        mapped.append(Finding(f.detector, f.start + shift, f.end + shift))
    return mapped


def _drop_marker_overlaps(text: str, candidates: list[_Candidate]) -> list[_Candidate]:
    """Remove candidates that touch an existing ``[REDACTED:...]`` marker."""
    spans = [m.span() for m in _MARKER.finditer(text)]
    if not spans:
        return candidates
    starts = [s for s, _ in spans]
    kept = []
    for c in candidates:
        s, e = c[0], -c[1]
        # Markers never overlap each other, so only the last one starting
        # before the candidate's end can overlap it.
        k = bisect.bisect_left(starts, e) - 1
        if k >= 0 and spans[k][1] > s:
            continue
        kept.append(c)
    return kept
