"""Benchmark the built-in offline embedders and the embedding cache.

    python bench/embed.py [--runs 15] [--texts 1000] [--provider minilm static]

For each provider (``minilm``, the default, and ``static``):

* cold load from a fresh process: verifying the pinned files (with a warm
  stamp, and without one: hashing them), loading, and embedding one query,
  p50; timed inside the process with numpy already imported (as it is for
  any caller that searches vectors), and the import of numpy apart;
* the process's RSS after the load, and its peak after embedding the texts;
* query latency in a warm process, p50 / p95: a short query (~10 word
  pieces) and a long one (~40);
* throughput of ``embed`` on varied note- and commit-like texts (MiniLM on
  its threads, ``edda.embed.threads``, and on one), texts/s and
  word pieces (or tokens) per second, best of three;
* ``EmbeddingCache.embed_cached``: a cold pass (embed and store every text)
  and a warm pass (every text a cache hit), texts/s.

One BLAS thread, as ``git edda`` runs. Targets (2-core machine): a warm
short query well under 10 ms; cold load + first query <= 150 ms (MiniLM),
<= 80 ms (static); static >= 5,000 texts/s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import isolated_env, machine  # noqa: E402

SHORT_QUERY = "why does the build fail on CI?"
LONG_QUERY = (
    "which retry policy did we decide on for the payment webhook after the outage, "
    "and why was exponential backoff with jitter preferred over a fixed delay?"
)

# Runs in a fresh interpreter; prints its own timings as JSON.
COLD = """
import json, resource, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
from pathlib import Path
from gitmem.embed import get_embedder
stamp = Path(sys.argv[2]) if sys.argv[2] else None
embedder = get_embedder({"edda.embed.provider": [sys.argv[1]]}, stamp_dir=stamp)
embedder.load()
t2 = time.perf_counter()
embedder.embed([sys.argv[3]])
t3 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"numpy": t1 - t0, "load": t2 - t1, "query": t3 - t2, "rss": rss}))
"""

# The peak RSS of embedding the texts (sys.argv[2], a JSON file) in a fresh process.
PEAK = """
import json, resource, sys
from gitmem.embed import get_embedder
embedder = get_embedder({"edda.embed.provider": [sys.argv[1]]})
embedder.load()
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
embedder.embed(json.loads(open(sys.argv[2]).read()))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"loaded": loaded, "peak": peak}))
"""

WORDS = [
    "the",
    "build",
    "fails",
    "on",
    "CI",
    "pipeline",
    "broken",
    "flaky",
    "test",
    "retry",
    "cache",
    "memory",
    "branch",
    "merge",
    "commit",
    "refactor",
    "database",
    "query",
    "index",
    "vector",
    "schema",
    "migration",
    "timeout",
    "deadlock",
    "race",
    "lock",
    "file",
    "parser",
    "token",
    "error",
    "warning",
    "config",
    "option",
    "flag",
    "default",
    "path",
    "user",
    "session",
    "request",
    "response",
    "fix",
    "add",
    "remove",
    "rename",
    "update",
    "bump",
    "revert",
    "deploy",
    "release",
    "tag",
    "version",
    "docs",
    "readme",
    "api",
    "because",
    "we",
    "decided",
    "to",
    "keep",
    "the",
    "old",
    "behaviour",
    "until",
    "the",
    "next",
    "release",
]
EXTRA = ["日本語のテキスト", "Ünïcödé", "naïve café", "façade", "🎉", "ошибка сборки", "构建失败"]


def varied_texts(n: int, seed: int = 7) -> list[str]:
    """Note-, decision- and commit-message-like texts of varied length and content."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        words = rng.choices(WORDS, k=rng.choice([rng.randint(3, 12), rng.randint(10, 60)]))
        if rng.random() < 0.1:
            words.append(rng.choice(EXTRA))
        if rng.random() < 0.2:
            words.append(f"src/module_{rng.randint(0, 500)}.py:{rng.randint(1, 999)}")
        texts.append(f"{' '.join(words)} #{i}")
    return texts


def run(script: str, env: dict[str, str], *args: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark process failed: {proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def p50(results: list[dict[str, float]], *keys: str) -> float:
    return statistics.median(sum(r[k] for k in keys) for r in results) * 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def best_seconds(fn: object, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def latencies(embedder: object, text: str, n: int = 100) -> list[float]:
    embed = embedder.embed  # type: ignore[attr-defined]
    for _ in range(5):
        embed([text])
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        embed([text])
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bench(provider: str, args: argparse.Namespace, env: dict[str, str], tmp: Path) -> list[str]:
    from gitmem.embed import EmbeddingCache, get_embedder

    stamp = str(tmp / f"state-{provider}")
    run(COLD, env, provider, stamp, SHORT_QUERY)  # writes the stamp (and warms the page cache)
    stamped = [run(COLD, env, provider, stamp, SHORT_QUERY) for _ in range(args.runs)]
    unstamped = [run(COLD, env, provider, "", SHORT_QUERY) for _ in range(max(3, args.runs // 3))]

    embedder = get_embedder({"edda.embed.provider": [provider]})
    assert embedder is not None
    embedder.load()  # type: ignore[attr-defined]
    count = args.texts if provider == "minilm" else args.texts * 10
    texts = varied_texts(count)
    if provider == "minilm":
        pieces = sum(len(ids) for ids in embedder.token_ids(texts)) / len(texts)  # type: ignore[attr-defined]
    else:
        pieces = sum(len(embedder._token_ids([t])[0]) for t in texts) / len(texts)  # type: ignore[attr-defined]
    short = latencies(embedder, SHORT_QUERY)
    long = latencies(embedder, LONG_QUERY, 50)
    seconds = best_seconds(lambda: embedder.embed(texts), 3 if provider == "static" else 2)
    threads = getattr(embedder, "threads", 1)
    alone = ""
    if threads > 1:  # MiniLM on several threads (edda.embed.threads): the same on one
        embedder.threads = 1  # type: ignore[attr-defined]
        one = best_seconds(lambda: embedder.embed(texts), 2)
        embedder.threads = threads  # type: ignore[attr-defined]
        alone = f"; on one thread {len(texts) / one:.0f} texts/s"
    corpus = tmp / f"texts-{provider}.json"
    corpus.write_text(json.dumps(texts[: min(len(texts), 2000)]))
    peak = run(PEAK, env, provider, str(corpus))

    cache = EmbeddingCache(tmp / f"cache-{provider}", embedder.model_id, embedder.dim)
    cached_texts = texts[: min(len(texts), 500 if provider == "minilm" else 10_000)]
    t0 = time.perf_counter()
    cold = cache.embed_cached(embedder, cached_texts)
    cold_rate = len(cached_texts) / (time.perf_counter() - t0)
    warm_rate = len(cached_texts) / best_seconds(lambda: cache.embed_cached(embedder, cached_texts))
    assert (cold == cache.embed_cached(embedder, cached_texts)).all()

    unit = "word pieces" if provider == "minilm" else "tokens"
    return [
        f"[{provider}] {embedder.model_id}",
        f"  cold load + first query, stamp warm  p50 {p50(stamped, 'load', 'query'):6.1f} ms"
        f"  (load {p50(stamped, 'load'):.1f}, first query {p50(stamped, 'query'):.1f};"
        f" numpy already imported; {args.runs} runs)",
        f"  cold load + first query, no stamp    p50 {p50(unstamped, 'load', 'query'):6.1f} ms"
        "  (hashes the pinned files)",
        f"  import numpy                             {p50(stamped, 'numpy'):6.1f} ms",
        f"  RSS after load + one query               {statistics.median(r['rss'] for r in stamped):6.0f} MB;"
        f" peak embedding {min(len(texts), 2000)} texts {peak['peak']:.0f} MB",
        f"  query, warm, short ({len(embedder.token_ids([SHORT_QUERY])[0]) if provider == 'minilm' else '~10'} {unit})"  # type: ignore[attr-defined]
        f"   p50 {pct(short, 0.5):6.2f} ms, p95 {pct(short, 0.95):6.2f} ms",
        f"  query, warm, long ({len(embedder.token_ids([LONG_QUERY])[0]) if provider == 'minilm' else '~40'} {unit})"  # type: ignore[attr-defined]
        f"    p50 {pct(long, 0.5):6.2f} ms, p95 {pct(long, 0.95):6.2f} ms",
        f"  embed {len(texts)} texts (~{pieces:.0f} {unit} each)  {len(texts) / seconds:8.0f} texts/s,"
        f" {len(texts) * pieces / seconds:8.0f} {unit}/s ({threads} thread{'s' if threads > 1 else ''}"
        f"{alone})",
        f"  embed_cached, all misses           {cold_rate:8.0f} texts/s (embed + store)",
        f"  embed_cached, all hits             {warm_rate:8.0f} texts/s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--texts", type=int, default=1000, help="MiniLM's; static gets 10x")
    parser.add_argument("--provider", nargs="+", default=["minilm", "static"])
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as git edda runs (before numpy)

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = isolated_env(tmp / "home")
        env["OPENBLAS_NUM_THREADS"] = "1"
        os.environ.update(env)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "gitmem")], check=True, env=env
        )
        lines = [f"machine: {machine()}"]
        for provider in args.provider:
            lines += bench(provider, args, env, tmp)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
