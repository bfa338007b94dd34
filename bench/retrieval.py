"""Benchmark retrieval on a generated store, and print the figures.

    python bench/retrieval.py [--events 100000] [--sizes 100,500,2000,4000,5000,20000]
                              [--queries 50] [--cold 10]

In a fresh temporary repository, one store of generated events (notes,
observations, decisions, learnings, checkpoints over 1,000 sessions and a
year of time) grows through each of ``--sizes`` up to ``--events``; at each
size the index is refreshed (incrementally, every text embedded) and hot
search is timed, so the sizes around the vector index's exact/HNSW threshold
(4,096) are covered without building a store per size. At the final size:

* index build: events table + full text, then the embeddings and vector
  index separately (each in a fresh process, with its peak RSS);
* incremental refresh after 100 new events, embedding within
  ``edda.embed.budget`` as a query's refresh does (and how many it left);
* search latency in-process with warm indexes (hot), p50/p95;
* search as a fresh ``git edda search`` process (cold), p50/p95;
* ``git edda context QUERY --budget 2000`` as a fresh process;
* sidecar sizes.

Targets on a 2-core machine: hot search p50 <= 10 ms at every size, cold CLI
search p50 <= 400 ms, cold context pack <= 500 ms, incremental refresh of
100 events <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import calibration, isolated_env, machine, run_python, timed_edda  # noqa: E402

from gitmem.embed.registry import DEFAULT_PROVIDER  # noqa: E402

QUERIES = [
    "connection pool exhausted under load",
    "flaky test timezone",
    "why did we pick postgres",
    "retry with backoff on the payment webhook",
    "cache invalidation bug",
    "deploy failed on kubernetes",
    "jwt token refresh",
    "slow query in the reports page",
    "memory leak in the worker",
    "migrate the schema",
]

GENERATE = r"""
import random, sys
from gitmem.memory.api import Memory
from gitmem.capture.sealer import Draft

# events lo..hi-1 of a store of n: a store grown in steps is the same as one made at once
n, seed, start_us = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lo, hi = int(sys.argv[5]), int(sys.argv[6])
rng = random.Random(seed * 1_000_003 + lo)
nouns = ("pool connection cache token session query index worker queue webhook payment "
         "schema migration test fixture timezone deploy cluster pod container memory leak "
         "latency request handler router config secret retry backoff lock transaction "
         "report page export import parser tokenizer build pipeline release branch merge").split()
verbs = ("fails breaks times out leaks retries blocks slows crashes hangs drops "
         "returns rejects corrupts duplicates skips").split()
tools = ["Bash", "Edit", "Read", "Grep", "Write"]
files = [f"src/{a}/{b}.py" for a in ("db", "api", "auth", "jobs", "web", "core") for b in nouns[:12]]
def sentence():
    w = rng.sample(nouns, 4)
    return f"the {w[0]} {rng.choice(verbs)} when the {w[1]} {w[2]} is {rng.choice(['full','stale','missing','slow','large'])}; check {w[3]}"
drafts = []
year = 365 * 86400 * 10**6
for i in range(lo, hi):
    t = start_us + int(i * year / n)
    session = f"s{i * 1000 // n:04d}"
    r = rng.random()
    if r < 0.6:
        d = Draft("observation", {"kind": "tool_call", "tool": rng.choice(tools),
                  "input": f"{rng.choice(['pytest', 'git', 'grep', 'ruff'])} {rng.choice(files)}",
                  "result": sentence(), "files": [rng.choice(files)]}, session=session, time=t)
    elif r < 0.8:
        d = Draft("note", {"text": sentence() + ". " + sentence(), "paths": [rng.choice(files)]},
                  session=session, time=t)
    elif r < 0.85:
        d = Draft("decision", {"key": f"{rng.choice(nouns)}.{rng.choice(nouns)}",
                  "value": str(rng.randint(1, 100)), "reason": sentence()}, session=session, time=t)
    elif r < 0.95:
        d = Draft("learning", {"text": sentence(), "paths": [rng.choice(files)]},
                  session=session, time=t)
    else:
        d = Draft("checkpoint", {"summary": sentence(), "next": sentence()},
                  session=session, time=t)
    drafts.append(d)
with Memory.open(sys.argv[1]) as m:
    for s in range(0, len(drafts), 5000):
        m.append_many(drafts[s:s + 5000])
"""

PHASE = r"""
import json, resource, sys, time
from gitmem.memory.api import Memory
from gitmem.index.refresh import refresh
start = time.perf_counter()
from gitmem.index.manifest import index_root, read_manifest
with Memory.open(sys.argv[1]) as m:
    # "all": every text embedded, as 'git edda index' does; otherwise within
    # edda.embed.budget, as a query's refresh does (the rest waits for later).
    report = refresh(m, rebuild=sys.argv[2] == "rebuild", embed=sys.argv[3] != "no-embed",
                     embed_all=sys.argv[3] == "all")
    manifest = read_manifest(index_root(m.location))
took = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": took, "rss_mb": rss, "report": report.to_json(),
                  "unembedded": manifest.unembedded if manifest else None}))
"""

HOT = r"""
import json, statistics, sys, time
import pyarrow.compute as pc
from gitmem.index.view import IndexView
from gitmem.retrieval.search import search
queries = json.loads(sys.argv[2])
view = IndexView.open(sys.argv[1], refresh=False)
# "now" a day after the newest event, as when the store is in use: a query
# about time ("... today") then weighs recency over events of many ages
now = pc.max(view.table.column("time")).as_py() + 86_400_000_000
for q in queries[:3]:
    search(view, q, now=now)  # warm: first use opens the full-text reader and embedder
times = []
for q in queries:
    t = time.perf_counter()
    search(view, q, limit=10, now=now)
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps(times))
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",") if n],
        default=[100, 500, 2_000, 4_000, 5_000, 20_000],
        help="store sizes below --events at which hot search is also timed",
    )
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument(
        "--provider",
        default=None,
        help="edda.embed.provider (default: gitmem's, minilm, which embeds ~100 texts/s a core;"
        " static for every text embedded at large sizes)",
    )
    args = parser.parse_args()
    provider = args.provider or f"{DEFAULT_PROVIDER} (the default)"
    start = calibration()
    rng = random.Random(7)
    queries = [
        rng.choice(QUERIES) + f" {rng.choice(['', 'again', 'today'])}" for _ in range(args.queries)
    ]
    rows: list[tuple[str, str]] = []
    by_size: list[tuple[int, str, float, list[float]]] = []
    with tempfile.TemporaryDirectory(
        prefix="gitmem-bench-retrieval-", ignore_cleanup_errors=True
    ) as tmp:
        base = Path(tmp)
        # "Cold" means a fresh process doing the work: no warm daemon answering
        # for it (bench/agent_hooks.py measures the daemon).
        env = isolated_env(base) | {"GITMEM_DAEMON": "0"}
        # One BLAS thread, as git edda runs (gitmem.cli.main): MiniLM's small
        # matrix products on threads fighting a loaded machine took a query's
        # embedding from ~15 ms to ~700 ms.
        env["OPENBLAS_NUM_THREADS"] = "1"
        repo = base / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
        if args.provider:
            subprocess.run(
                ["git", "config", "edda.embed.provider", args.provider],
                cwd=repo,
                env=env,
                check=True,
            )
        subprocess.run(
            ["git", "commit", "-q", "--allow-empty", "-m", "i"], cwd=repo, env=env, check=True
        )
        start_us = (
            1_704_067_200_000_000  # 2024-01-01: the store and the 100 added later lie in the past
        )
        sizes = sorted({n for n in args.sizes if 0 < n < args.events} | {args.events})
        generated, made = 0.0, 0
        for size in sizes:
            t = time.perf_counter()
            run_python(
                GENERATE, str(repo), str(args.events), "1", str(start_us), str(made), str(size),
                env=env,
            )  # fmt: skip
            generated += time.perf_counter() - t
            made = size
            # Every text embedded at each size (as `git edda index` and the
            # daemon leave a store), so the vector side searched is the size's
            # whole: within the budget, MiniLM left most of a large step unembedded.
            step = json.loads(run_python(PHASE, str(repo), "refresh", "all", env=env))
            times = json.loads(run_python(HOT, str(repo), json.dumps(queries), env=env))
            by_size.append((size, step["report"]["mode"], step["seconds"], times))
        rows.append((f"generate {args.events} events (not a target)", f"{generated:.1f} s"))
        # The build below starts cold, as on a new clone: no embedding cache.
        shutil.rmtree(repo / ".git" / "edda" / "index" / "embeddings", ignore_errors=True)

        build = json.loads(run_python(PHASE, str(repo), "rebuild", "no-embed", env=env))
        rows.append(
            (
                "index build: table + full text",
                f"{build['seconds']:.1f} s, peak RSS {build['rss_mb']:.0f} MB",
            )
        )
        vec = json.loads(run_python(PHASE, str(repo), "refresh", "all", env=env))
        rows.append(
            (
                "index build: embeddings + vector index (git edda index)",
                f"{vec['seconds']:.1f} s ({vec['report']['embedded']} distinct texts), peak RSS {vec['rss_mb']:.0f} MB",
            )
        )
        later = str(start_us + 366 * 86400 * 10**6)
        run_python(GENERATE, str(repo), "100", "2", later, "0", "100", env=env)
        inc = json.loads(run_python(PHASE, str(repo), "refresh", "embed", env=env))
        rows.append(
            (
                "incremental refresh, 100 new events (embeddings within edda.embed.budget)",
                f"{inc['report']['seconds'] * 1000:.0f} ms in refresh, {inc['seconds'] * 1000:.0f} ms with open;"
                f" {inc['report']['vectors']} embedded, {inc['unembedded']} left for later",
            )
        )
        hot = json.loads(run_python(HOT, str(repo), json.dumps(queries), env=env))
        rows.append(
            (
                "search, hot (in-process) p50 / p95",
                f"{_pct(hot, 0.5):.1f} / {_pct(hot, 0.95):.1f} ms",
            )
        )
        cold = [
            timed_edda(repo, env, "search", queries[i % len(queries)], "--now", "2026-01-01")
            for i in range(args.cold)
        ]
        rows.append(
            (
                "search, cold CLI process p50 / p95",
                f"{_pct(cold, 0.5):.0f} / {_pct(cold, 0.95):.0f} ms",
            )
        )
        ctx = [
            timed_edda(
                repo,
                env,
                "context",
                queries[i % len(queries)],
                "--budget",
                "2000",
                "--now",
                "2026-01-01",
            )
            for i in range(args.cold)
        ]
        rows.append(
            (
                "context pack, cold CLI process p50 / p95",
                f"{_pct(ctx, 0.5):.0f} / {_pct(ctx, 0.95):.0f} ms",
            )
        )
        index = repo / ".git" / "edda" / "index"
        manifest = json.loads((index / "manifest.json").read_text())
        gen = index / manifest["generation"]
        sizes = {
            "events table": sum(_size(gen / n) for n in manifest.get("segments", ["events.arrow"])),
            "members.arrow": _size(gen / "members.arrow"),
            "full text": _size(gen / manifest["fulltext"]),
            "vectors": sum(_size(p) for p in gen.glob("vectors*.usearch")),
            "embedding cache": _size(index / "embeddings"),
        }
        rows.append(
            ("sidecar sizes", ", ".join(f"{k} {v / 2**20:.1f} MB" for k, v in sizes.items()))
        )
    print(
        f"retrieval benchmark: {args.events} events, {machine()} (at the start: {start:.0f} ms);"
        f" embeddings: {provider}, observations not embedded (edda.embed.types)"
    )
    print(
        "  hot hybrid search as the store grows (in-process, warm;"
        " refresh of the step before it, every text embedded):"
    )
    for size, mode, seconds, times in by_size:
        print(
            f"    {size:>8,} events  p50 {_pct(times, 0.5):5.1f} ms  p95 {_pct(times, 0.95):5.1f} ms"
            f"  ({mode} refresh {seconds:.1f} s)"
        )
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"  (median of hot searches: {statistics.median(hot):.1f} ms over {len(hot)} queries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
