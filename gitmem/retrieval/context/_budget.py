"""Fitting a pack to its budget: items included or dropped whole, tier by
tier, so that the rendered markdown, trailer included, never exceeds it
(see "Budget" in :mod:`gitmem.retrieval.context`)."""

from __future__ import annotations

from dataclasses import dataclass

from gitmem.memory.describe import plural
from gitmem.retrieval.context.pack import NOUNS, TITLES, PackItem, PackTier, render
from gitmem.retrieval.tokens import chars_for


@dataclass
class Candidate:
    """An item offered to a tier, before the budget decides."""

    tier: str
    priority: int  # selection order within the tier (0 first)
    order: int  # display order within the tier
    item: PackItem
    requires: int | None = None  # priority of an item this one only makes sense with


def trailer_text(counts: dict[str, int], total: int, style: str) -> str:
    """The line saying what was dropped (``style``: full, compact or none);
    ``counts`` has every tier of the pack, in priority order."""
    if style == "none":
        return ""
    if total == 0:
        return "_Nothing recorded in memory for this branch yet._"
    dropped = sum(counts.values())
    if not dropped:
        return ""
    if style == "compact":
        return f"_Dropped {plural(dropped, 'item')} to fit the budget (raise --budget)._"
    parts = []
    for name in counts:
        if counts[name]:
            one, many = NOUNS[name]
            parts.append(f"{counts[name]} {one if counts[name] == 1 else many}")
    return f"_Dropped to fit the budget: {', '.join(parts)} (raise --budget)._"


def fit(
    header: str, candidates: dict[str, list[Candidate]], budget: int
) -> tuple[tuple[PackTier, ...], str, str]:
    """Choose items whole, in priority order, so the rendering fits ``budget``.
    ``candidates`` has every tier of the pack, in priority order."""
    limit = chars_for(budget)
    sizes = {name: len(items) for name, items in candidates.items()}
    total = sum(sizes.values())
    worst_full = len(trailer_text(sizes, total, "full"))
    styles = ("full", "compact", "none") if worst_full <= limit // 4 else ("compact", "none")
    for title in (header, ""):
        for style in styles:
            chosen = fill(title, candidates, limit, style, total)
            tiers, trailer = assemble(candidates, chosen, total, style)
            while True:
                text = render(title, [(t.title, [i.text for i in t.items]) for t in tiers], trailer)
                if len(text) <= limit or not chosen:
                    break
                chosen.pop()  # safety net: the fill's arithmetic already ensures this fits
                tiers, trailer = assemble(candidates, chosen, total, style)
            if len(text) <= limit:
                return tiers, trailer, title
    empty = tuple(PackTier(n, TITLES[n], (), sizes[n]) for n in candidates)
    return empty, "", ""


def fill(
    header: str, candidates: dict[str, list[Candidate]], limit: int, style: str, total: int
) -> list[Candidate]:
    """Greedy choice: an item goes in when the pack, with a trailer that assumes
    every item not yet decided is dropped, still fits."""
    tiers = tuple(candidates)
    pending = {name: len(candidates[name]) for name in tiers}
    dropped = dict.fromkeys(tiers, 0)
    content = len(header)  # characters of every block but the trailer
    blocks = 1 if header else 0
    chosen: list[Candidate] = []
    trailers: dict[tuple[int, ...], str] = {}

    def length(content: int, blocks: int, trailer: str) -> int:
        count = blocks + (1 if trailer else 0)
        return content + len(trailer) + 2 * (count - 1) + 1 if count else 0

    for name in tiers:
        opened = False
        taken: set[int] = set()
        for candidate in candidates[name]:
            pending[name] -= 1
            if candidate.requires is not None and candidate.requires not in taken:
                dropped[name] += 1
                continue
            worst = tuple(dropped[n] + pending[n] for n in tiers)
            trailer = trailers.get(worst)
            if trailer is None:  # the same while items are dropped: computed once
                trailer = trailers[worst] = trailer_text(
                    dict(zip(tiers, worst, strict=True)), total, style
                )
            text = len(candidate.item.text)
            if opened:
                grown, more = content + 1 + text, blocks
            else:
                grown, more = content + len(f"## {TITLES[name]}\n") + text, blocks + 1
            if length(grown, more, trailer) <= limit:
                content, blocks, opened = grown, more, True
                chosen.append(candidate)
                taken.add(candidate.priority)
            else:
                dropped[name] += 1
    return chosen


def assemble(
    candidates: dict[str, list[Candidate]], chosen: list[Candidate], total: int, style: str
) -> tuple[tuple[PackTier, ...], str]:
    """The tiers of the chosen candidates, in display order, and the trailer."""
    picked = {id(c) for c in chosen}
    tiers = []
    counts: dict[str, int] = {}
    for name in candidates:
        kept = [c for c in candidates[name] if id(c) in picked]
        kept.sort(key=lambda c: c.order)
        counts[name] = len(candidates[name]) - len(kept)
        tiers.append(PackTier(name, TITLES[name], tuple(c.item for c in kept), counts[name]))
    return tuple(tiers), trailer_text(counts, total, style)
