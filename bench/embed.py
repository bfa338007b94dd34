"""Benchmark the default (static) embedder and the embedding cache.

    python bench/embed.py [--runs 15] [--texts 10000]

Measures:

* cold load from a fresh process: verifying the pinned files (with a warm
  stamp, and without one: hashing ~18 MB), memory-mapping the weights,
  building the tokenizer and embedding one query, p50; timed inside the
  process, both with numpy already imported (as it is for any caller that
  searches vectors) and including the import of numpy itself;
* throughput of ``StaticEmbedder.embed`` on varied texts, texts/s;
* ``EmbeddingCache.embed_cached``: a cold pass (embed and store every text)
  and a warm pass (every text a cache hit), texts/s.

Targets (2-core machine): load + first query <= 80 ms; >= 5,000 texts/s.
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

# Runs in a fresh interpreter; prints its own timings as JSON.
COLD = """
import json, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
from pathlib import Path
from gitmem.embed import StaticEmbedder
stamp = Path(sys.argv[1]) if sys.argv[1] else None
embedder = StaticEmbedder(stamp_dir=stamp)
embedder.load()
t2 = time.perf_counter()
embedder.embed(["why does the build fail on CI?"])
t3 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "load": t2 - t1, "query": t3 - t2}))
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
]
EXTRA = ["日本語のテキスト", "Ünïcödé", "naïve café", "façade", "🎉", "ошибка сборки", "构建失败"]


def varied_texts(n: int, seed: int = 7) -> list[str]:
    """Short commit-message / note-like texts of varied length and content."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        words = rng.choices(WORDS, k=rng.randint(2, 30))
        if rng.random() < 0.1:
            words.append(rng.choice(EXTRA))
        if rng.random() < 0.2:
            words.append(f"src/module_{rng.randint(0, 500)}.py:{rng.randint(1, 999)}")
        texts.append(f"{' '.join(words)} #{i}")
    return texts


def cold_runs(env: dict[str, str], stamp: str, runs: int) -> list[dict[str, float]]:
    results = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", COLD, stamp], env=env, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"cold load failed: {proc.stderr}")
        results.append(json.loads(proc.stdout))
    return results


def p50(results: list[dict[str, float]], *keys: str) -> float:
    return statistics.median(sum(r[k] for k in keys) for r in results) * 1000


def rate(fn: object, n: int, repeat: int = 3) -> float:
    """Best of ``repeat`` runs, in items per second."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--texts", type=int, default=10_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = isolated_env(home)
        os.environ.update(env)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "gitmem")], check=True, env=env
        )
        stamp = str(Path(tmp) / "state")
        cold_runs(env, stamp, 1)  # writes the stamp (and warms the page cache)
        stamped = cold_runs(env, stamp, args.runs)
        unstamped = cold_runs(env, "", max(3, args.runs // 3))

        import numpy as np

        from gitmem.embed import EmbeddingCache, StaticEmbedder

        embedder = StaticEmbedder()
        embedder.load()
        texts = varied_texts(args.texts)
        tokens = sum(len(embedder._token_ids([t])[0]) for t in texts[:1000]) / 1000
        embed_rate = rate(lambda: embedder.embed(texts), len(texts))
        single_rate = rate(lambda: [embedder.embed([t]) for t in texts[:2000]], 2000)

        cache = EmbeddingCache(Path(tmp) / "cache", embedder.model_id, embedder.dim)
        t0 = time.perf_counter()
        cold = cache.embed_cached(embedder, texts)
        cold_rate = len(texts) / (time.perf_counter() - t0)
        warm_rate = rate(lambda: cache.embed_cached(embedder, texts), len(texts))
        warm = cache.embed_cached(embedder, texts)
        assert np.array_equal(cold, warm)
        reopen_t0 = time.perf_counter()
        EmbeddingCache(Path(tmp) / "cache", embedder.model_id, embedder.dim)
        reopen_ms = (time.perf_counter() - reopen_t0) * 1000

    print(f"machine: {machine()}")
    print(
        f"cold load + first query, stamp warm   p50 {p50(stamped, 'load', 'query'):6.1f} ms"
        f"  (numpy already imported; target <= 80 ms, {args.runs} runs)"
    )
    print(
        f"  of which: load {p50(stamped, 'load'):5.1f} ms, first query {p50(stamped, 'query'):4.1f} ms;"
        f" import numpy {p50(stamped, 'numpy'):5.1f} ms"
    )
    print(
        f"  including import numpy              p50 {p50(stamped, 'numpy', 'load', 'query'):6.1f} ms"
    )
    print(
        f"cold load + first query, no stamp     p50 {p50(unstamped, 'load', 'query'):6.1f} ms"
        "  (hashes both pinned files)"
    )
    print(
        f"embed, batch of {len(texts)}            {embed_rate:8.0f} texts/s"
        f"  (~{tokens:.0f} tokens/text; target >= 5,000)"
    )
    print(f"embed, one text per call          {single_rate:8.0f} texts/s")
    print(f"embed_cached, all misses          {cold_rate:8.0f} texts/s (embed + store)")
    print(f"embed_cached, all hits            {warm_rate:8.0f} texts/s")
    print(f"reopen cache of {len(texts)} vectors      {reopen_ms:6.1f} ms")


if __name__ == "__main__":
    main()
