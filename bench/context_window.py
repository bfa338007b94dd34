"""Time context packs and ``ask`` read through the index on a generated store.

    python bench/context_window.py [--events 100000] [--repo DIR] [--cold 5]

Generates the store of ``bench/retrieval.py`` (observations and notes over
1,000 sessions, 5% decisions, 10% learnings with paths, 5% checkpoints) in
``DIR`` (reused when it already holds one), builds the indexes, then reports:

* ``build_context`` and ``ask`` (overview, a key's timeline, free text)
  in-process over a warm :class:`~gitmem.index.view.IndexView`, best and
  median of 9 runs: without a search function (the library's own work) and
  with the CLI's hybrid search; with ``--memory``, the same calls over
  ``Memory`` once, for scale (term matching instead of a search);
* ``git edda context QUERY --budget 2000``, ``git edda ask QUERY``,
  ``git edda show ID`` and ``git edda log --limit 20`` as fresh processes.

Target: each in-process call <= 100 ms at 100,000 events; a cold context
process <= 500 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from benchenv import calibration, isolated_env, machine, run_python, timed_edda  # noqa: E402
from retrieval import GENERATE, PHASE  # noqa: E402

HOT = r"""
import json, statistics, sys, time
from gitmem.app.retrieve import search_fn as _search_fn
from gitmem.index.view import IndexView
from gitmem.memory.api import Memory
from gitmem.retrieval.ask import ask
from gitmem.retrieval.context import build_context

repo, memory_too = sys.argv[1], sys.argv[2] == "yes"
NOW = 1_767_225_600_000_000  # 2026-01-01
view = IndexView.open(repo)
hybrid = _search_fn(view, NOW)
hybrid("warm up", 10, ())  # the first search opens the full-text reader and the embedder
none = lambda query, limit, types: []  # the library's own work, without a search
key = view.window({}).decisions().keys[0]
calls = {
    "context (no search)": lambda s, f: build_context(
        s, query="connection pool", budget=2000, now=NOW, paths=["src/db/pool.py"], search=f
    ),
    "context (hybrid search)": lambda s, f: build_context(
        s, query="connection pool", budget=2000, now=NOW, paths=["src/db/pool.py"], search=f
    ),
    "ask: overview": lambda s, f: ask(s),
    "ask: key timeline": lambda s, f: ask(s, key),
    "ask: free text (hybrid search)": lambda s, f: ask(s, "pool connection retry", search=f),
}
out = {}
for name, call in calls.items():
    fn = hybrid if "hybrid" in name else none
    times = []
    for _ in range(9):
        t = time.perf_counter()
        call(view, fn)
        times.append((time.perf_counter() - t) * 1000)
    row = {"view_best": min(times), "view_median": statistics.median(times)}
    if memory_too and "hybrid" not in name:
        with Memory.open(repo) as mem:
            t = time.perf_counter()
            call(mem, None)
            row["memory"] = (time.perf_counter() - t) * 1000
    out[name] = row
print(json.dumps({"calls": out, "an_id": view.events(limit=1)[0].id}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repo", type=Path, default=None, help="keep the store here")
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--memory", action="store_true", help="also time the Memory path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-ctx-") as tmp:
        base = args.repo.resolve() if args.repo else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        home = base / "home"
        env = isolated_env(home)
        repo = base / "repo"
        if not (repo / ".git").exists():
            repo.mkdir()
            subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
            subprocess.run(
                ["git", "commit", "-q", "--allow-empty", "-m", "i"], cwd=repo, env=env, check=True
            )
            t = time.perf_counter()
            run_python(GENERATE, str(repo), str(args.events), "1", "1735689600000000", env=env)
            print(f"generated {args.events} events in {time.perf_counter() - t:.0f} s")
            t = time.perf_counter()
            run_python(PHASE, str(repo), "rebuild", "embed", env=env)
            print(f"built the indexes in {time.perf_counter() - t:.0f} s")
        hot = json.loads(run_python(HOT, str(repo), "yes" if args.memory else "no", env=env))
        print(f"context/ask over the index, {args.events} events, {machine()}")
        for name, row in hot["calls"].items():
            extra = f", Memory {row['memory']:.0f} ms" if "memory" in row else ""
            print(
                f"  {name:<32} best {row['view_best']:6.1f} ms, "
                f"median {row['view_median']:6.1f} ms{extra}"
            )
        now = ["--now", "2026-01-01"]
        for label, cli_args in (
            (
                "cold `context QUERY --budget 2000`",
                ["context", "connection pool", "--budget", "2000", *now],
            ),
            ("cold `ask QUERY`", ["ask", "pool connection retry", *now]),
            ("cold `show ID` (an id a pack prints)", ["show", hot["an_id"][:12]]),
            ("cold `log --limit 20`", ["log", "--limit", "20", *now]),
        ):
            times = [timed_edda(repo, env, *cli_args) for _ in range(args.cold)]
            print(f"  {label:<40} p50 {statistics.median(times):.0f} ms, best {min(times):.0f} ms")
        print(f"  calibration loop after the run: {calibration():.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
