"""Retrieval quality on a development set: every search mode next to plain BM25.

    python bench/quality.py PATH [--slice 0.1] [--json] [--now T] [--fusion score|rrf]

PATH is a set folder in the format of ``../shared/evals/README.md`` (or the
folder holding several of them):

* ``locomo-dev/`` style (``turns.jsonl`` + ``questions.jsonl``): long
  conversations, each question with the ids of the turns that answer it. Each
  conversation becomes its own fresh store (a question searches only its own
  conversation), one ``note`` per turn as an agent's memory would hold what a
  person said: ``"<speaker>: <text> [<image caption>]"``, in the conversation's
  session (``scope.session``) at the turn's time.
* ``githist-*`` style (``commits.jsonl`` + ``queries.jsonl``): a project's
  commits and changelog entries, each with the commits that implemented it.
  The commits become ``commit_link`` events (sha and full message) at their
  author dates, as the post-commit hook records them.

The stores are built with gitmem's own library (batched ``append_many``,
then the index with the configured embedder) in temporary repositories, and
every query is searched with ``limit=10`` in each mode (hybrid, lexical,
vector). The baseline is computed in the same run and by the same method as
``evals/baseline_fts5.py``: an in-memory SQLite FTS5 table per corpus
(``tokenize='porter unicode61'``), the query as the OR of its distinct
lower-cased ``\\w+`` tokens, ranked by ``bm25()`` then insertion order.

Metrics, averaged with equal weight per query: recall@5 and recall@10 (share
of the gold items in the top k), hit@10 (any gold item in the top 10) and
MRR@10 (1 / rank of the first gold item within the top 10). Conversations
report evidence recall overall and per question category; commits MRR@10.

``--slice F`` keeps a deterministic fraction of the queries (by a hash of
their id) and, so that a slice is also fast to build, the gold items of those
queries plus the same fraction of the other items (the distractors). A slice
is smaller and easier than the whole set: compare modes within one run, never
a slice's figures with the whole set's.

``--now`` pins the time searches count recency from (default: one day after
the newest item of the set, so two runs give the same figures).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODES = ("hybrid", "lexical", "vector")
SYSTEMS = ("bm25", *MODES)
K = 10
DAY_US = 86_400_000_000
BATCH = 2000  # events per append_many: one memory commit per batch
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_WORD = re.compile(r"\w+", re.UNICODE)


# -- the data -------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def iso_us(text: str) -> int:
    """``YYYY-MM-DDTHH:MM:SSZ`` in microseconds since the epoch."""
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000


def kept(key: str, fraction: float) -> bool:
    """Whether ``key`` is in the deterministic ``fraction`` slice (a hash of it,
    so the slice does not depend on the file's order or on other items)."""
    if fraction >= 1.0:
        return True
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < fraction * 2**64


def turn_text(turn: dict[str, Any]) -> str:
    """A conversation turn as the baseline indexes it, and as the note's text."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [{turn['blip_caption']}]"
    return text


@dataclass
class Item:
    """One retrievable item: its key (turn or commit id), text, time and how it is stored."""

    key: str
    text: str
    time: int
    event_type: str
    body: dict[str, Any]
    session: str | None = None


@dataclass
class Query:
    id: str
    text: str
    gold: list[str]
    category: int | None = None


@dataclass
class Corpus:
    """What one store holds and the queries that search it."""

    name: str
    items: list[Item]
    queries: list[Query]


@dataclass
class DevSet:
    name: str
    kind: str  # "conversations" or "commits"
    corpora: list[Corpus]

    @property
    def queries(self) -> int:
        return sum(len(c.queries) for c in self.corpora)

    @property
    def items(self) -> int:
        return sum(len(c.items) for c in self.corpora)


def load(folder: Path, fraction: float = 1.0) -> DevSet:
    """The development set in ``folder`` (its kind told by the files it holds)."""
    if (folder / "turns.jsonl").is_file():
        return _conversations(folder, fraction)
    if (folder / "commits.jsonl").is_file():
        return _commits(folder, fraction)
    raise SystemExit(f"{folder}: neither turns.jsonl nor commits.jsonl")


def _conversations(folder: Path, fraction: float) -> DevSet:
    turns = read_jsonl(folder / "turns.jsonl")
    questions = [q for q in read_jsonl(folder / "questions.jsonl") if kept(q["id"], fraction)]
    gold = {(q["sample_id"], d) for q in questions for d in q["evidence"]}
    corpora: dict[str, Corpus] = {}
    for t in turns:
        sid = t["sample_id"]
        corpus = corpora.setdefault(sid, Corpus(sid, [], []))
        if (sid, t["dia_id"]) in gold or kept(f"{sid}:{t['dia_id']}", fraction):
            text = turn_text(t)
            corpus.items.append(
                Item(
                    t["dia_id"],
                    text,
                    iso_us(t["timestamp"]),
                    "note",
                    {"text": text},
                    session=f"{sid}-session-{t['session']}",
                )
            )
    for q in questions:
        corpora[q["sample_id"]].queries.append(
            Query(q["id"], q["question"], list(q["evidence"]), q["category"])
        )
    kept_corpora = [c for c in corpora.values() if c.queries]
    return DevSet(folder.name, "conversations", kept_corpora)


def _commits(folder: Path, fraction: float) -> DevSet:
    commits = read_jsonl(folder / "commits.jsonl")
    queries = [q for q in read_jsonl(folder / "queries.jsonl") if kept(q["id"], fraction)]
    gold = {sha for q in queries for sha in q["gold"]}
    items = [
        Item(
            c["sha"],
            c["message"],
            iso_us(c["date"]),
            "commit_link",
            {"sha": c["sha"], "message": c["message"]},
        )
        for c in commits
        if c["sha"] in gold or kept(c["sha"], fraction)
    ]
    found = [Query(q["id"], q["text"], list(q["gold"])) for q in queries]
    return DevSet(folder.name, "commits", [Corpus(folder.name, items, found)])


# -- the metrics ---------------------------------------------------------------------------
def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    return len(set(gold) & set(ranked[:k])) / len(set(gold))


def hit_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    return 1.0 if set(gold) & set(ranked[:k]) else 0.0


def mrr_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    for rank, key in enumerate(ranked[:k], 1):
        if key in gold:
            return 1.0 / rank
    return 0.0


METRICS: dict[str, Callable[[Sequence[str], Sequence[str]], float]] = {
    "recall@5": lambda r, g: recall_at(r, g, 5),
    "recall@10": lambda r, g: recall_at(r, g, 10),
    "hit@10": lambda r, g: hit_at(r, g, 10),
    "mrr@10": lambda r, g: mrr_at(r, g, 10),
}


@dataclass
class Scores:
    """Per-query metric values of one system, with each query's category."""

    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})
    categories: list[int | None] = field(default_factory=list)

    def add(self, ranked: Sequence[str], query: Query) -> None:
        for name, metric in METRICS.items():
            self.values[name].append(metric(ranked, query.gold))
        self.categories.append(query.category)

    def mean(self, category: int | None = None) -> dict[str, float]:
        rows = [i for i, c in enumerate(self.categories) if category is None or c == category]
        return {
            name: (sum(v[i] for i in rows) / len(rows) if rows else float("nan"))
            for name, v in self.values.items()
        }


# -- the baseline: plain SQLite FTS5, exactly as evals/baseline_fts5.py -----------------------
class FTS5:
    """An in-memory FTS5 table of one corpus, ranked by ``bm25()`` then insertion order."""

    def __init__(self, docs: Sequence[tuple[str, str]]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE d USING fts5(key UNINDEXED, body, tokenize='porter unicode61')"
        )
        self.db.executemany("INSERT INTO d(key, body) VALUES (?, ?)", docs)

    def search(self, query: str, k: int = K) -> list[str]:
        tokens: list[str] = []
        for token in _WORD.findall(query.lower()):
            if token not in tokens:
                tokens.append(token)
        if not tokens:
            return []
        expr = " OR ".join(f'"{t}"' for t in tokens)
        rows = self.db.execute(
            "SELECT key FROM d WHERE d MATCH ? ORDER BY bm25(d), rowid LIMIT ?", (expr, k)
        )
        return [str(r[0]) for r in rows]


def baseline(dev: DevSet) -> Scores:
    """The FTS5 BM25 baseline's per-query metrics on ``dev``."""
    scores = Scores()
    for corpus in dev.corpora:
        fts = FTS5([(item.key, item.text) for item in corpus.items])
        for query in corpus.queries:
            scores.add(fts.search(query.text, K), query)
    return scores


# -- gitmem's side -------------------------------------------------------------------------
@contextmanager
def isolated_git(home: Path) -> Iterator[None]:
    """No user or system git config for the stores built here (a fixed identity),
    and no GIT_*/GITMEM_* variables from the caller; restored afterwards."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / ".gitconfig"
    config.write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(("GIT_", "GITMEM_")):
            del os.environ[name]
    os.environ.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(config),
        GITMEM_DAEMON="0",
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def build_store(repo: Path, corpus: Corpus) -> dict[str, str]:
    """A fresh repository at ``repo`` holding ``corpus`` as memory, its index
    built; returns item key by event id."""
    from gitmem.capture.sealer import Draft
    from gitmem.index.refresh import refresh
    from gitmem.index.view import IndexView
    from gitmem.memory.api import Memory

    repo.mkdir(parents=True)
    for args in (
        ("init", "-q"),
        ("config", "edda.fsync", "false"),  # durability is not what is measured here
        ("commit", "-q", "--allow-empty", "-m", "initial"),
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    drafts = [
        Draft(item.event_type, item.body, session=item.session, time=item.time)
        for item in corpus.items
    ]
    keys: dict[str, str] = {}
    with Memory.open(repo) as mem:
        for start in range(0, len(drafts), BATCH):
            written = mem.append_many(drafts[start : start + BATCH])
            for event, item in zip(written, corpus.items[start : start + BATCH], strict=True):
                keys[event.id] = item.key
        # Every vector now, as `git edda index` does: a query's refresh embeds
        # within edda.embed.budget and leaves the rest for later.
        refresh(mem, embed_all=True)
    IndexView.open(repo).close()  # opens what was built (events, full text, vectors)
    return keys


def evaluate(
    folder: Path,
    *,
    fraction: float = 1.0,
    now: int | None = None,
    fusion: str | None = None,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Every system's metrics on the set in ``folder`` (see the module docstring).

    ``fusion`` overrides how hybrid fuses the two lists (``score`` or ``rrf``;
    None: the default). ``workdir`` holds the temporary stores (default: a
    fresh temporary directory, removed afterwards).
    """
    from gitmem.index.view import IndexView
    from gitmem.retrieval.search import search

    dev = load(folder, fraction)
    if now is None:
        newest = max(item.time for c in dev.corpora for item in c.items)
        now = newest + DAY_US
    scores = {system: Scores() for system in MODES}
    start = time.perf_counter()
    scores["bm25"] = baseline(dev)
    timings = {
        "build_s": 0.0,
        "search_ms": {m: 0.0 for m in MODES},
        "bm25_ms": (time.perf_counter() - start) * 1000,
    }
    options = {} if fusion is None else {"fusion": fusion}
    model = None
    with tempfile.TemporaryDirectory(dir=workdir, prefix="gitmem-quality-") as tmp:
        base = Path(tmp)
        with isolated_git(base / "home"):
            for number, corpus in enumerate(dev.corpora):
                start = time.perf_counter()
                keys = build_store(base / f"store{number}", corpus)
                timings["build_s"] += time.perf_counter() - start
                with IndexView.open(base / f"store{number}", refresh=False) as view:
                    model = view.manifest.model or "none"
                    for query in corpus.queries:
                        for mode in MODES:
                            start = time.perf_counter()
                            result = search(
                                view,
                                query.text,
                                limit=K,
                                now=now,
                                mode=mode,
                                all_branches=True,
                                **options,
                            )
                            timings["search_ms"][mode] += (time.perf_counter() - start) * 1000
                            scores[mode].add([keys[h.event.id] for h in result.hits], query)
    n = dev.queries
    report: dict[str, Any] = {
        "set": dev.name,
        "kind": dev.kind,
        "slice": fraction,
        "now": now,
        "model": model,
        "fusion": fusion or "default",
        "stores": len(dev.corpora),
        "items": dev.items,
        "queries": n,
        "build_s": round(timings["build_s"], 2),
        "search_ms_per_query": {m: round(timings["search_ms"][m] / max(n, 1), 2) for m in MODES}
        | {"bm25": round(timings["bm25_ms"] / max(n, 1), 2)},
        "overall": {s: _rounded(scores[s].mean()) for s in SYSTEMS},
    }
    if dev.kind == "conversations":
        report["categories"] = {
            f"{c} {name}": {
                "n": scores["bm25"].categories.count(c),
                **{s: _rounded(scores[s].mean(c)) for s in SYSTEMS},
            }
            for c, name in CATEGORIES.items()
            if c in scores["bm25"].categories
        }
    return report


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items()}


def sets_in(path: Path) -> list[Path]:
    """``path`` itself when it is a set, else the sets directly inside it."""
    if (path / "turns.jsonl").is_file() or (path / "commits.jsonl").is_file():
        return [path]
    found = sorted(
        p
        for p in path.iterdir()
        if (p / "turns.jsonl").is_file() or (p / "commits.jsonl").is_file()
    )
    if not found:
        raise SystemExit(f"{path}: no development set here")
    return found


# -- output --------------------------------------------------------------------------------
LABELS = {
    "bm25": "FTS5 BM25 (baseline)",
    "lexical": "lexical",
    "vector": "vector",
    "hybrid": "hybrid",
}


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['set']} ({report['kind']}): {report['items']:,} items in "
        f"{report['stores']} store(s), {report['queries']} queries, slice {report['slice']}, "
        f"model {report['model']}, fusion {report['fusion']}; built in {report['build_s']} s",
        "",
        "| system | recall@5 | recall@10 | hit@10 | MRR@10 | ms/query |",
        "|---|---|---|---|---|---|",
    ]
    head = "recall@10" if report["kind"] == "conversations" else "mrr@10"
    for system in ("bm25", "lexical", "vector", "hybrid"):
        m = report["overall"][system]
        delta = m[head] - report["overall"]["bm25"][head]
        mark = "" if system == "bm25" else f" ({delta * 100:+.1f})"
        bold = {head: f"**{m[head]:.3f}**{mark}"}
        cells = [bold.get(k, f"{m[k]:.3f}") for k in ("recall@5", "recall@10", "hit@10", "mrr@10")]
        ms = report["search_ms_per_query"][system]
        lines.append(f"| {LABELS[system]} | {' | '.join(cells)} | {ms} |")
    if "categories" in report:
        lines += [
            "",
            "| recall@10 by category | n | BM25 | lexical | vector | hybrid |",
            "|---|---|---|---|---|---|",
        ]
        for name, row in report["categories"].items():
            cells = [f"{row[s]['recall@10']:.3f}" for s in ("bm25", "lexical", "vector", "hybrid")]
            lines.append(f"| {name} | {row['n']} | {' | '.join(cells)} |")
    return "\n".join(lines)


def parse_now(text: str) -> int:
    """Microseconds since the epoch, or an ISO-8601 date or time (UTC unless it says)."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="a development set folder, or one holding sets")
    parser.add_argument(
        "--slice", type=float, default=1.0, metavar="FRACTION", help="deterministic subset"
    )
    parser.add_argument("--now", type=parse_now, default=None, help="µs or ISO time")
    parser.add_argument("--fusion", choices=("score", "rrf"), default=None)
    parser.add_argument("--json", action="store_true", help="one JSON report per line")
    args = parser.parse_args(argv)
    if not 0.0 < args.slice <= 1.0:
        parser.error("--slice must be in (0, 1]")
    for folder in sets_in(args.path):
        report = evaluate(folder, fraction=args.slice, now=args.now, fusion=args.fusion)
        if args.json:
            print(json.dumps(report, sort_keys=True), flush=True)
        else:
            print(markdown(report) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
