"""How each event type reads: one table, used by every listing, index and pack.

For each type, :data:`KINDS` holds

* ``summary``: the short text listings show after the type (``log``, ``search``);
* ``line``: the one-line, id-less description context packs and ``ask``
  print (``decision `key` = value — reason``), also stored in the index;
* ``text_fields``: the body fields the type is searched and embedded by, most
  telling first (paths and tags are always added).

A type this gitmem does not know (written by a newer one) falls back to its
first text-like field for the summary and to every string field for search.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitmem.memory.event import Event

Body = dict[str, Any]

SHORT_ID = 12
"""Hex characters of an id in human output (``git edda show`` accepts them)."""

LINE_WIDTH = 200
"""Characters of an event's text on a compact line (the index stores each
decision's line at this width)."""

LIST_FIELDS = ("paths", "files", "tags")
"""List fields appended to every type's searchable text."""

MAX_TEXT = 8000  # characters indexed per event: long tool output adds noise, not recall

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"\b(?=\w*[a-z][A-Z])\w+\b")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# -- small shared helpers -------------------------------------------------------------
def one_line(text: str, width: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 event``, ``2 events`` (``words``: the plural when it is not ``word + "s"``)."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def short_id(event_id: str) -> str:
    """The first :data:`SHORT_ID` hex characters of an id."""
    return event_id[:SHORT_ID]


def ref(event_id: str) -> str:
    """An id as shown in compact lines: ``[a1b2c3d4e5f6]``."""
    return f"[{short_id(event_id)}]"


def iso_minute(time_us: int) -> str:
    """``2025-01-02T03:04Z`` (UTC, minute precision)."""
    return (_EPOCH + timedelta(microseconds=time_us)).strftime("%Y-%m-%dT%H:%MZ")


def iso_date(time_us: int) -> str:
    """``2025-01-02`` (UTC)."""
    return (_EPOCH + timedelta(microseconds=time_us)).strftime("%Y-%m-%d")


def paths_of(body: Body | None) -> list[str]:
    """The file paths an event is about (its ``paths`` and ``files`` fields)."""
    if body is None:
        return []
    out: list[str] = []
    for name in ("paths", "files"):
        value = body.get(name)
        if isinstance(value, list):
            out.extend(str(v) for v in value)
    return out


def _target(body: Body) -> str:
    return str(body.get("target", "")).removeprefix("summary:")


# -- summaries (after the type in listings) --------------------------------------------
def _summary_decision(b: Body) -> str:
    reason = f" ({b['reason']})" if b.get("reason") else ""
    return f"{b.get('key', '')} = {b.get('value', '')}{reason}"


def _short_target(value: Any) -> str:
    """An event id (or ``summary:<id>``) cut to :data:`SHORT_ID`; other text as is."""
    text = str(value or "")
    kind, _, target = text.rpartition(":")
    if len(target) == 32 and all(c in "0123456789abcdef" for c in target):
        return f"{kind}:{short_id(target)}" if kind else short_id(target)
    return text


def _summary_targeted(b: Body) -> str:
    extra = b.get("reason") or b.get("note") or ""
    return _short_target(b.get("target")) + (f": {extra}" if extra else "")


def _summary_observation(b: Body) -> str:
    parts = [str(b.get("kind", "")), str(b.get("tool", "")), str(b.get("input", ""))]
    return " ".join(p for p in parts if p)


def _summary_commit_rewrite(b: Body) -> str:
    return f"{b.get('kind', '')}: {plural(len(b.get('map') or []), 'commit')} rewritten"


def _summary_fallback(b: Body) -> str:
    for key in ("text", "summary", "message", "value"):
        if isinstance(b.get(key), str):
            return str(b[key])
    return ""


# -- compact lines (context packs, ask) --------------------------------------------------
def _line_decision(e: Event, width: int) -> str:
    reason = str(e.field("reason", "") or "")
    text = f"`{e.field('key', '')}` = {e.field('value', '')}" + (f" — {reason}" if reason else "")
    return "decision " + one_line(text, width)


def _line_knowledge(e: Event, width: int) -> str:
    paths = paths_of(e.body)
    where = f"{', '.join(paths[:3])}{', …' if len(paths) > 3 else ''}"
    about = f" ({one_line(where, 80)})" if paths else ""
    return f"{e.type}{about}: {one_line(str(e.field('text', '')), width)}"


def _line_capsule_open(e: Event, width: int) -> str:
    return f"{e.field('kind', '')} capsule opened: {one_line(str(e.field('intent', '')), width)}"


def _line_capsule_close(e: Event, width: int) -> str:
    summary = str(e.field("summary", "") or "")
    return "capsule closed" + (f": {one_line(summary, width)}" if summary else "")


def _line_commit_link(e: Event, width: int) -> str:
    sha = str(e.field("sha", ""))[:SHORT_ID]
    return f"commit {sha}: {one_line(str(e.field('message', '')), width)}".rstrip(": ")


def _line_targeted(e: Event, width: int) -> str:
    extra = e.field("reason") or e.field("note")
    head = f"{e.type} {ref(_target(e.body or {}))}"
    return head + (f": {one_line(str(extra), width)}" if extra else "")


@dataclass(frozen=True)
class Description:
    """How one event type reads (see the module docstring)."""

    summary: Callable[[Body], str]
    text_fields: tuple[str, ...]
    line: Callable[[Event, int], str] | None = None  # None: "type: summary"


def _field(name: str, default: str = "") -> Callable[[Body], str]:
    return lambda b: str(b.get(name) or default)


KINDS: dict[str, Description] = {
    "note": Description(_field("text"), ("text",)),
    "decision": Description(_summary_decision, ("key", "value", "reason", "scope"), _line_decision),
    "ratify": Description(_summary_targeted, ("note",), _line_targeted),
    "checkpoint": Description(
        lambda b: str(b.get("summary") or b.get("next") or "checkpoint"),
        ("summary", "next", "hypotheses", "rejected", "open_questions"),
    ),
    "observation": Description(_summary_observation, ("tool", "input", "result")),
    "prompt": Description(_field("text"), ("text",)),
    "capsule_open": Description(
        lambda b: f"{b.get('kind', '')}: {b.get('intent', '')}".strip(": "),
        ("intent", "kind"),
        _line_capsule_open,
    ),
    "capsule_close": Description(
        lambda b: f"{_short_target(b.get('capsule'))} {b.get('summary', '')}".strip(),
        ("summary",),
        _line_capsule_close,
    ),
    "pin": Description(_summary_targeted, ("reason",), _line_targeted),
    "unpin": Description(_summary_targeted, (), _line_targeted),
    "learning": Description(_field("text"), ("topic", "text"), _line_knowledge),
    "pattern": Description(_field("text"), ("topic", "text"), _line_knowledge),
    "mistake": Description(_field("text"), ("topic", "text"), _line_knowledge),
    "commit_link": Description(
        lambda b: f"{str(b.get('sha', ''))[:SHORT_ID]} {b.get('message', '')}".strip(),
        # Not the sha: 40 hex characters are longer than any word full text
        # keeps, and in an embedding they drowned a short message (commit
        # search MRR@10 0.34 with it, 0.56 without, bench/quality.py).
        ("message",),
        _line_commit_link,
    ),
    "commit_rewrite": Description(_summary_commit_rewrite, ("kind",)),
    "redaction": Description(_summary_targeted, ("reason",)),
}


# -- what callers use --------------------------------------------------------------------
def summary_text(event_type: str, body: Body) -> str:
    """The summary of a body of ``event_type`` (may span lines; callers cut it)."""
    kind = KINDS.get(event_type)
    text = kind.summary(body) if kind else _summary_fallback(body)
    return text or event_type


def describe(event: Event, width: int = LINE_WIDTH) -> str:
    """A one-line, id-less description of an event: ``type: text``."""
    if event.redacted:
        return f"{event.type}: [redacted]"
    kind = KINDS.get(event.type)
    if kind is not None and kind.line is not None and event.body is not None:
        return kind.line(event, width)
    return f"{event.type}: {event.summary(width)}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    return []


def event_text(event_type: str, body: Body | None) -> str:
    """The text an event is searched and embedded by ('' when it has no body):
    its type's text fields, then paths and tags, with CamelCase identifiers
    also spelt as words (``RetryPolicy`` is found by "retry policy")."""
    if body is None:
        return ""
    kind = KINDS.get(event_type)
    names = (
        kind.text_fields
        if kind is not None
        else tuple(k for k in sorted(body) if k not in LIST_FIELDS)
    )
    parts = [s for name in names for s in _strings(body.get(name))]
    for name in LIST_FIELDS:
        parts.extend(_strings(body.get(name)))
    text = "\n".join(p.strip() for p in parts if p and p.strip())
    idents = sorted(set(_IDENT.findall(text)))
    if idents:
        text += "\n" + " ".join(" ".join(_CAMEL.findall(i)) for i in idents)
    return text[:MAX_TEXT]


def visible(event: Event) -> bool:
    """Whether an event may be shown at all: not redacted, payload present."""
    return not event.redacted and event.body is not None
