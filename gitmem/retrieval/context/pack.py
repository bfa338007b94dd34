"""The context pack as :func:`~gitmem.retrieval.context.build_context` returns
it: tiers of items, what was dropped, and its markdown and JSON forms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.memory.describe import short_id
from gitmem.retrieval.tokens import estimate_tokens

__all__ = [
    "CODE_TIERS",
    "NOUNS",
    "TIERS",
    "TITLES",
    "ContextPack",
    "PackItem",
    "PackTier",
    "render",
]

# name, section title, trailer noun (singular, plural)
TIER_SPECS: tuple[tuple[str, str, str, str], ...] = (
    ("pins", "Pinned", "pin", "pins"),
    ("capsule", "Open capsule", "capsule line", "capsule lines"),
    ("work", "Current work", "work item", "work items"),
    ("binding", "Decisions (binding)", "binding decision", "binding decisions"),
    (
        "proposed",
        "Proposed decisions (NOT BINDING until ratified)",
        "proposed decision",
        "proposed decisions",
    ),
    ("learnings", "Learnings about the files in play", "learning", "learnings"),
    ("hits", "Related to the query", "query hit", "query hits"),
    ("history", "Recent activity", "history line", "history lines"),
)
TIERS: tuple[str, ...] = tuple(spec[0] for spec in TIER_SPECS)
"""Tier names in priority order (of a pack without code)."""
# The code tier, in packs built with a code index: after the query hits, before the history.
CODE_SPEC = ("code", "Code related to the query", "code item", "code items")
CODE_TIERS: tuple[str, ...] = (*TIERS[: TIERS.index("hits") + 1], "code", "history")
"""Tier names in priority order of a pack with code."""
TITLES = {spec[0]: spec[1] for spec in (*TIER_SPECS, CODE_SPEC)}
NOUNS = {spec[0]: (spec[2], spec[3]) for spec in (*TIER_SPECS, CODE_SPEC)}


@dataclass(frozen=True)
class PackItem:
    """One line (or block) of a pack; ``id`` is the full event id it stands for."""

    id: str | None
    type: str
    time: int | None
    text: str

    @property
    def tokens(self) -> int:
        """Estimated tokens of the item's text."""
        return estimate_tokens(self.text)

    def to_json(self) -> dict[str, Any]:
        """``{id, short_id, type, time, text, tokens}``."""
        return {
            "id": self.id,
            "short_id": short_id(self.id) if self.id else None,
            "type": self.type,
            "time": self.time,
            "text": self.text,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class PackTier:
    """A tier's included items (display order) and how many were dropped."""

    name: str
    title: str
    items: tuple[PackItem, ...]
    dropped: int

    def to_json(self) -> dict[str, Any]:
        """``{name, title, items, dropped}``."""
        return {
            "name": self.name,
            "title": self.title,
            "items": [item.to_json() for item in self.items],
            "dropped": self.dropped,
        }


@dataclass(frozen=True)
class ContextPack:
    """A rendered-to-budget context pack (see the module docstring)."""

    branch: str | None
    now: int
    budget: int
    query: str | None
    header: str
    tiers: tuple[PackTier, ...]
    trailer: str

    @property
    def dropped(self) -> dict[str, int]:
        """Dropped items per tier (every tier named, in priority order)."""
        return {tier.name: tier.dropped for tier in self.tiers}

    @property
    def used(self) -> int:
        """Estimated tokens of :meth:`to_markdown`."""
        return estimate_tokens(self.to_markdown())

    def tier(self, name: str) -> PackTier:
        """The tier called ``name``."""
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)

    def to_markdown(self) -> str:
        """The pack as markdown; never more than ``budget`` estimated tokens."""
        return render(
            self.header, [(t.title, [i.text for i in t.items]) for t in self.tiers], self.trailer
        )

    def to_json(self) -> dict[str, Any]:
        """The pack as JSON-ready data: tiers with items, drops, budget and use."""
        return {
            "branch": self.branch,
            "now": self.now,
            "query": self.query,
            "budget": self.budget,
            "used": self.used,
            "tiers": [tier.to_json() for tier in self.tiers],
            "dropped": self.dropped,
            "trailer": self.trailer,
        }


def render(header: str, sections: Sequence[tuple[str, Sequence[str]]], trailer: str) -> str:
    """The pack's markdown: the header, a section per non-empty tier, the trailer."""
    blocks = [header] if header else []
    blocks.extend(f"## {title}\n" + "\n".join(items) for title, items in sections if items)
    if trailer:
        blocks.append(trailer)
    return "\n\n".join(blocks) + "\n" if blocks else ""
