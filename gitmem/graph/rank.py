"""A repository map: the symbols that matter most, as elided signatures
grouped by file, within a token budget.

Importance is PageRank over the code graph (numpy power iteration). Rank
flows along each edge, weighted by its kind (:data:`WEIGHTS`) times its
confidence, and back against it at a third of that weight, so that a
function many callers reach and the callers of a focus file both rise. With
focus files, the random surfer restarts only at those files and their
definitions (personalised PageRank): the map then shows what surrounds the
work in hand. Without focus it restarts anywhere.

Tokens are counted as characters / 4 (the usual average for code and
English text with BPE tokenisers), rounded up; the map never exceeds the
budget by that count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitmem.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from gitmem.graph.query import GraphIndex
    from gitmem.graph.view import GraphView

CHARS_PER_TOKEN = 4
WEIGHTS = {
    "calls": 1.0,
    "extends": 1.0,
    "implements": 1.0,
    "references": 0.6,
    "imports": 0.5,
    "contains": 0.3,
    "documents": 0.1,
}
BACKWARD = 1 / 3  # rank also flows from callee to caller, at this share
FOCUS_SHARE = 0.9  # of the restart mass, on the focus (the rest anywhere)
DAMPING = 0.85
TOLERANCE = 1e-5  # L1 change between iterations at which to stop (ranks sum to 1)
MAX_ITERATIONS = 60
SHOWN = frozenset({"class", "interface", "type", "function", "method", "constant"})
MAX_LINE = 160  # characters of one signature line
MIN_BUDGET, MAX_BUDGET = 50, 1_000_000


@dataclass(frozen=True)
class MapEntry:
    id: str
    kind: str
    qualname: str
    line: int
    text: str  # the elided signature as shown
    rank: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "qualname": self.qualname,
            "line": self.line,
            "signature": self.text,
            "rank": round(self.rank, 8),
        }


@dataclass(frozen=True)
class RepoMap:
    """The map: files in order of their best symbol's rank, each with its
    chosen symbols in source order; ``text`` renders it."""

    files: tuple[tuple[str, tuple[MapEntry, ...]], ...]
    text: str
    tokens: int
    budget: int
    focus: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "focus": list(self.focus),
            "files": [
                {"path": path, "symbols": [e.to_json() for e in entries]}
                for path, entries in self.files
            ],
            "text": self.text,
        }


def tokens(text: str) -> int:
    """The token count this module budgets with: characters / 4, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def pagerank(view: GraphView, focus_files: Iterable[str] = ()) -> npt.NDArray[np.float64]:
    """Each node's rank (summing to 1), personalised on ``focus_files``."""
    import numpy as np

    from gitmem.graph.query import graph_index

    ix = graph_index(view)
    focus = tuple(sorted(set(focus_files)))
    key = f"pagerank:{focus}"
    if key in ix.cache:
        return ix.cache[key]  # type: ignore[no-any-return]
    n = len(ix.ids)
    if n == 0:
        return np.zeros(0)
    src, dst, share, dangling = _transitions(ix)
    restart = np.full(n, 1.0 / n)
    if focus:
        chosen: list[int] = []
        for path in focus:
            i = ix.by_path.get(path)
            if i is not None:
                chosen.append(i)
                chosen.extend(ix.contained(i))
        if chosen:
            restart *= 1 - FOCUS_SHARE
            restart[np.array(sorted(set(chosen)))] += FOCUS_SHARE / len(set(chosen))
    rank = restart.copy()
    for _ in range(MAX_ITERATIONS):
        flow = np.bincount(dst, weights=rank[src] * share, minlength=n)
        lost = rank[dangling].sum()
        following = DAMPING * (flow + lost * restart) + (1 - DAMPING) * restart
        change = float(np.abs(following - rank).sum())
        rank = following
        if change < TOLERANCE:
            break
    ranks = [k for k in ix.cache if k.startswith("pagerank:")]
    if len(ranks) > 16:  # a few focus sets per view
        for old in ranks:
            del ix.cache[old]
    ix.cache[key] = rank
    return rank


def _transitions(
    ix: GraphIndex,
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]
]:
    """Edges both ways with each source's out-weights normalised to 1, and
    the nodes with no way out (their rank restarts)."""
    import numpy as np

    cached = ix.cache.get("transitions")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    n = len(ix.ids)
    by_kind = np.array([WEIGHTS.get(k, 0.1) for k in ix.edge_kinds])
    weight = by_kind[ix.ekind] * ix.conf.astype(np.float64)
    src = np.concatenate([ix.src, ix.dst])
    dst = np.concatenate([ix.dst, ix.src])
    weight = np.concatenate([weight, weight * BACKWARD])
    # one transition per (src, dst): a pair with calls on ten lines is one
    # heavier edge, and each iteration walks a third fewer entries
    pairs, inverse = np.unique(src * n + dst, return_inverse=True)
    weight = np.bincount(inverse, weights=weight)
    src, dst = pairs // n, pairs % n
    total = np.bincount(src, weights=weight, minlength=n)
    share = weight / np.where(total[src] > 0, total[src], 1.0)
    dangling = total == 0
    found = (src, dst, share, dangling)
    ix.cache["transitions"] = found
    return found


def repo_map(
    view: GraphView, focus_files: Iterable[str] = (), budget_tokens: int = 2000
) -> RepoMap:
    """The most important symbols (PageRank, personalised on
    ``focus_files``), as elided signatures grouped by file, in at most
    ``budget_tokens`` tokens (characters / 4)."""
    import numpy as np

    from gitmem.graph.query import graph_index

    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise UsageError(
            f"the budget must be between {MIN_BUDGET:,} and {MAX_BUDGET:,} tokens, not {budget_tokens:,}"
        )
    ix = graph_index(view)
    focus = tuple(sorted(set(focus_files)))
    rank = pagerank(view, focus)
    room = budget_tokens * CHARS_PER_TOKEN
    order = np.lexsort((np.arange(len(rank)), -rank))  # by rank, then by id
    chosen: dict[str, dict[int, MapEntry]] = {}
    used = 0
    misses = 0
    for i in order:
        i = int(i)
        if ix.kind[i] not in SHOWN or not ix.path[i]:
            continue
        path = ix.path[i]
        entries = chosen.get(path)
        if entries is not None and i in entries:
            continue
        new: dict[int, MapEntry] = {}
        parent = _parent(ix, i)
        if parent is not None and (entries is None or parent not in entries):
            new[parent] = _entry(ix, parent, float(rank[parent]))
        new[i] = _entry(ix, i, float(rank[i]))
        cost = sum(len(_line(ix, e)) + 1 for e in new.values())
        if entries is None:
            cost += len(path) + 1
        if used + cost > room:
            misses += 1
            if misses > 200 or room - used < 24:  # nothing more is likely to fit
                break
            continue
        used += cost
        chosen.setdefault(path, {}).update(new)
    files = sorted(
        chosen.items(),
        key=lambda item: (-max(e.rank for e in item[1].values()), item[0]),
    )
    rendered: list[str] = []
    out: list[tuple[str, tuple[MapEntry, ...]]] = []
    for path, entries in files:
        ordered = sorted(entries.items(), key=lambda kv: (ix.start[kv[0]] or 0, kv[1].qualname))
        rendered.append(path)
        rendered.extend(_line(ix, e) for _, e in ordered)
        out.append((path, tuple(e for _, e in ordered)))
    text = "\n".join(rendered) + ("\n" if rendered else "")
    return RepoMap(tuple(out), text, tokens(text), budget_tokens, focus)


def _parent(ix: GraphIndex, i: int) -> int | None:
    """The enclosing class of a method (shown with it), if it is a node."""
    qual = ix.qualname[i]
    if "." not in qual:
        return None
    parent = qual.rpartition(".")[0]
    for j in ix.by_qualname(parent):
        if ix.path[j] == ix.path[i] and ix.kind[j] in SHOWN:
            return j
    return None


def _entry(ix: GraphIndex, i: int, rank: float) -> MapEntry:
    return MapEntry(ix.ids[i], ix.kind[i], ix.qualname[i], ix.start[i] or 0, _elided(ix, i), rank)


def _elided(ix: GraphIndex, i: int) -> str:
    """A one-line signature with its body elided: ``def f(x) -> int: …``."""
    signature = " ".join(ix.symbol(i).signature.split())
    if not signature:
        signature = f"{ix.kind[i]} {ix.name[i]}"
    if len(signature) > MAX_LINE:
        signature = signature[: MAX_LINE - 1] + "…"
    elif ix.kind[i] != "constant":
        signature = signature.rstrip(":{ ") + " …"
    return signature


def _line(ix: GraphIndex, entry: MapEntry) -> str:
    depth = entry.qualname.count(".")
    return "  " * (depth + 1) + entry.text
