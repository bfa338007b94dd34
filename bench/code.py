"""Benchmark the code graph on real code present on every machine, and print the figures.

    python bench/code.py [--site-packages] [--runs 7] [--keep DIR]

The corpus is this interpreter's standard library (``sysconfig``'s
``stdlib``, without ``site-packages`` and ``__pycache__``), copied into a
fresh git repository and committed; ``--site-packages`` adds the installed
packages (this environment's ``purelib``) under ``sp/`` for breadth.

* cold build: a fresh process, an empty cache: files/s (files indexed per
  second of the build call; the process's imports are shown apart), peak
  RSS (the builder and its worker processes);
* one file changed and committed: the next build by a fresh process (a git
  hook's worker, the command line without the daemon), which resolves every
  file again, and the next build in a process that built before (the daemon,
  a library user), p50 over ``--runs``;
* a switch to a branch that changes 20 files: the next build, p50;
* Parquet sizes and the facts cache's size;
* query p50s, for the queries listed in :data:`QUERIES` (hot: the view open).

Targets on a 2-core machine: >= 300 files/s cold (embeddings excluded),
<= 150 ms after changing one file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import isolated_env, machine, run_python  # noqa: E402


# Queries timed hot over the open view: (name, function of the view). The
# query work (find, callers, impact, map) adds its own here.
def _queries() -> list[tuple[str, Callable[[Any], object]]]:
    from gitmem.graph import query, rank

    return [
        ("code find parse", lambda v: query.find(v, "parse")),
        (
            "code callers lib/posixpath.py:join --depth 3",
            lambda v: query.callers(v, "lib/posixpath.py:join", 3),
        ),
        (
            "code impact lib/posixpath.py --depth 3",
            lambda v: query.impact(v, "lib/posixpath.py", 3),
        ),
        ("code map --budget 2000", lambda v: rank.repo_map(v, (), 2000)),
        (
            "code map --focus lib/json/decoder.py --budget 2000",
            lambda v: rank.repo_map(v, ("lib/json/decoder.py",), 2000),
        ),
    ]


COLD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from gitmem.graph.build import build
from gitmem.storage.locate import locate
imported = time.perf_counter() - t0
location = locate(sys.argv[1], any_format=True)
start = time.perf_counter()
report = build(location)
took = time.perf_counter() - start
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": took, "imports": imported, "rss_mb": own,
                  "worker_rss_mb": children, "report": report.to_json()}))
"""


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def copy_tree(source: Path, target: Path) -> int:
    """Copy the regular files under ``source`` (no caches, no site-packages)."""
    count = 0
    for directory, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "site-packages")]
        rel = Path(directory).relative_to(source)
        for name in files:
            src = Path(directory) / name
            if src.is_symlink() or not src.is_file():
                continue
            dst = target / rel / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            count += 1
    return count


def corpus(repo: Path, env: dict[str, str], site_packages: bool) -> None:
    repo.mkdir(parents=True)
    copied = copy_tree(Path(sysconfig.get_paths()["stdlib"]), repo / "lib")
    if site_packages:
        copied += copy_tree(Path(sysconfig.get_paths()["purelib"]), repo / "sp")
    git(repo, env, "init", "-q")
    git(repo, env, "config", "core.autocrlf", "false")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "corpus")
    print(f"corpus: {copied:,} files copied into {repo}", flush=True)


def python_files(repo: Path, view: Any) -> list[Path]:
    """The indexed Python files outside the tests (those a change re-parses)."""
    paths = view.files.column("path").to_pylist()
    return [repo / p for p in sorted(paths) if p.endswith(".py") and "/test" not in p]


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def p50(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-packages", action="store_true")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the corpus here and keep it")
    args = parser.parse_args()
    print(machine(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        env = isolated_env(base / "home")
        os.environ.update(env)  # the in-process builds below see the same git config
        repo = base / "corpus"
        corpus(repo, env, args.site_packages)

        # The targets exclude embeddings: the code index is full text only
        # until the last step below, which times adding its vectors.
        git(repo, env, "config", "edda.code.embed", "false")
        # cold build in a fresh process
        cold = json.loads(run_python(COLD, str(repo), env=env))
        report = cold["report"]
        rate = report["files"] / cold["seconds"]
        print(
            f"cold build: {report['files']:,} files indexed ({report['seen']:,} seen,"
            f" skipped {report['skipped']}), {report['nodes']:,} nodes, {report['edges']:,} edges"
            f" in {cold['seconds']:.2f} s = {rate:,.0f} files/s"
            f" (+{cold['imports']:.2f} s of imports); peak RSS {cold['rss_mb']:.0f} MB,"
            f" largest worker {cold['worker_rss_mb']:.0f} MB",
            flush=True,
        )

        from gitmem.graph.build import build, graph_root
        from gitmem.graph.paths import cache_path
        from gitmem.graph.view import GraphView
        from gitmem.storage.locate import locate

        location = locate(repo, any_format=True)
        build(location)  # warm: imports and the page cache
        files = python_files(repo, GraphView.open(repo))

        def change(target: Path, name: str) -> None:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef {name}():\n    return 1\n")
            git(repo, env, "commit", "-q", "-am", name)

        # One file changed, built by a fresh process (a git hook's worker, the
        # command line without the daemon): it has no resolver in memory, so it
        # resolves every file again from the cached facts.
        fresh: list[float] = []
        for i in range(min(3, args.runs)):
            change(files[(i * 53 + 11) % len(files)], f"_bench_fresh_{i}")
            fresh.append(json.loads(run_python(COLD, str(repo), env=env))["seconds"] * 1000)
        # The same in this process, whose graph a fresh process built: its first
        # build that changes something resolves everything too.
        change(files[7], "_bench_first")
        start = time.perf_counter()
        build(location)
        first = (time.perf_counter() - start) * 1000
        print(
            f"after changing one file, a fresh process: p50 {p50(fresh):.0f} ms"
            f" (min {min(fresh):.0f}); a process's first build after a change: {first:.0f} ms"
            " (both resolve every file; later builds in a process resolve what changed)",
            flush=True,
        )

        # one file changed, in a process that built before (the daemon, a library user)
        one: list[float] = []
        for i in range(args.runs):
            target = files[(i * 37) % len(files)]
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef _bench_added_{i}():\n    return {i}\n")
            git(repo, env, "commit", "-q", "-am", f"change {i}")
            start = time.perf_counter()
            changed = build(location)
            one.append((time.perf_counter() - start) * 1000)
            assert changed.parsed == 1, changed
        print(
            f"after changing one file, in a process that built before: p50 {p50(one):.0f} ms"
            f" (min {min(one):.0f}, max {max(one):.0f})",
            flush=True,
        )

        # a branch switch that changes 20 files
        switch: list[float] = []
        for i in range(args.runs):
            branch = f"b{i}"
            git(repo, env, "checkout", "-q", "-b", branch, "main")
            for j in range(20):
                target = files[(i * 101 + j * 13) % len(files)]
                with open(target, "a", encoding="utf-8") as handle:
                    handle.write(f"\n\nBENCH_{i}_{j} = {j}\n")
            git(repo, env, "commit", "-q", "-am", f"branch {i}")
            git(repo, env, "checkout", "-q", "main")
            build(location)
            git(repo, env, "checkout", "-q", branch)
            start = time.perf_counter()
            switched = build(location)
            switch.append((time.perf_counter() - start) * 1000)
            assert switched.parsed == 20, switched
            git(repo, env, "checkout", "-q", "main")
            build(location)
        print(
            f"after switching to a branch that changes 20 files: p50 {p50(switch):.0f} ms",
            flush=True,
        )

        # sizes
        root = graph_root(location)
        manifest = json.loads((root / "manifest.json").read_text())
        generation = root / manifest["generation"]
        sizes = {  # nodes and edges: the sum of their shards
            n: sum(p.stat().st_size for p in (generation / n).glob("**/*.parquet"))
            if (generation / n).is_dir()
            else (generation / n).stat().st_size
            for n in ("files.parquet", "nodes", "edges")
        }
        print(
            "parquet: "
            + ", ".join(f"{n} {mb(s)}" for n, s in sizes.items())
            + f"; facts cache {mb(size(Path(cache_path(location))))}",
            flush=True,
        )

        # opening and queries
        opens: list[float] = []
        for _ in range(args.runs):
            start = time.perf_counter()
            view = GraphView.open(repo)
            opens.append((time.perf_counter() - start) * 1000)
        print(f"GraphView.open (current graph, in-process): p50 {p50(opens):.0f} ms", flush=True)
        for name, query in _queries():
            times: list[float] = []
            for _ in range(max(args.runs, 20)):
                start = time.perf_counter()
                query(view)
                times.append((time.perf_counter() - start) * 1000)
            print(f"{name}: p50 {p50(times):.1f} ms (hot)", flush=True)
        # The same traversals from 200 functions and methods picked at random
        # (seeded): the typical query, where the named ones above are busy.
        import random

        from gitmem.graph import query as graph_query

        ix = graph_query.graph_index(view)
        defs = [i for i, k in enumerate(ix.kind) if k in ("function", "method")]
        picked = [ix.ids[i] for i in random.Random(7).sample(defs, min(200, len(defs)))]
        for name, run in (
            ("callers", graph_query.callers),
            ("callees", graph_query.callees),
            ("impact", graph_query.impact),
        ):
            run(view, picked[0], 3)
            times = []
            for node_id in picked:
                start = time.perf_counter()
                run(view, node_id, 3)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            print(
                f"code {name} --depth 3 of 200 random functions: p50 {p50(times):.2f} ms,"
                f" p95 {times[int(len(times) * 0.95)]:.2f} ms (hot)",
                flush=True,
            )
        git(repo, env, "config", "edda.code.embed", "true")
        start = time.perf_counter()
        embedded = build(location)
        print(
            f"code search vectors for every chunk (edda.code.embed true, a rebuild):"
            f" {time.perf_counter() - start:.1f} s for {embedded.files:,} files",
            flush=True,
        )
        if args.keep is None:
            shutil.rmtree(repo, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
