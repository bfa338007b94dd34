"""From events to index rows: the searchable text of each event type.

The text an event is found by is built per type (a decision by its key,
value and reason; an observation by its tool, input and result …), with
paths and tags appended and CamelCase identifiers also spelt as separate
words, so ``RetryPolicy`` is found by "retry policy".
"""

from __future__ import annotations

import re
from typing import Any

# The fields each type is searched by, most telling first; other string
# fields of unknown (newer) types are searched too.
TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "note": ("text",),
    "decision": ("key", "value", "reason", "scope"),
    "ratify": ("note",),
    "checkpoint": ("summary", "next", "hypotheses", "rejected", "open_questions"),
    "observation": ("tool", "input", "result"),
    "prompt": ("text",),
    "capsule_open": ("intent", "kind"),
    "capsule_close": ("summary",),
    "pin": ("reason",),
    "unpin": (),
    "learning": ("topic", "text"),
    "pattern": ("topic", "text"),
    "mistake": ("topic", "text"),
    "commit_link": ("message", "sha"),
    "commit_rewrite": ("kind",),
    "redaction": ("reason",),
}
_LIST_FIELDS = ("paths", "files", "tags")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"\b(?=\w*[a-z][A-Z])\w+\b")
MAX_TEXT = 8000  # characters indexed per event: long tool output adds noise, not recall

# Hiragana, Katakana, CJK ideographs (incl. extension A and compatibility), Hangul.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


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


def event_text(event_type: str, body: dict[str, Any] | None) -> str:
    """The text an event is searched and embedded by ('' when it has no body)."""
    if body is None:
        return ""
    names = TEXT_FIELDS.get(event_type)
    if names is None:
        names = tuple(k for k in sorted(body) if k not in _LIST_FIELDS)
    parts = [s for name in names for s in _strings(body.get(name))]
    for name in _LIST_FIELDS:
        parts.extend(_strings(body.get(name)))
    text = "\n".join(p.strip() for p in parts if p and p.strip())
    idents = sorted(set(_IDENT.findall(text)))
    if idents:
        text += "\n" + " ".join(" ".join(_CAMEL.findall(i)) for i in idents)
    return text[:MAX_TEXT]


def cjk_grams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character stays a
    unigram): CJK text has no spaces, so words are matched by their bigrams."""
    grams: list[str] = []
    for run in _CJK.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def paths_of(body: dict[str, Any] | None) -> list[str]:
    """The file paths an event is about (``paths`` and ``files``)."""
    if body is None:
        return []
    out: list[str] = []
    for name in ("paths", "files"):
        value = body.get(name)
        if isinstance(value, list):
            out.extend(str(v) for v in value)
    return out
