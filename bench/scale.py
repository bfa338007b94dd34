"""A year of a busy team: measure gitmem on a store of a million events.

    python bench/scale.py [--events 1000000] [--branches 20] [--dir /dev/shm]
                          [--store DIR] [--provider static] [--queries 30] [--cold 5]

Ten agents capturing every tool call write about 5,000 events a day, so a
shared repository reaches a million within a year. ``bench/scalegen.py``
generates such a store (sessions as capsules, mostly observations as hooks
write them, on ``--branches`` branches forked from the trunk); this script
then measures, each command a fresh process with no daemon
(``GITMEM_DAEMON=0``) unless said otherwise:

* generation rate (the batched library path) and ``git gc`` with the object
  store's size before and after;
* capture at scale: ``gitmem-capture`` of one event, flushing 10 spooled
  events (``git edda flush``), ``append_many`` of 1,000 events in-process;
* sharing: the first ``git edda push`` to a local bare remote, a fresh
  clone's memory fetch (``git edda init``), then 10,000 events written in
  the clone, ``git edda sync`` there (push) and in the first repository
  (fetch and merge);
* the index: a full build (``git edda index --rebuild``: time and peak RSS),
  the incremental refresh that takes in the synced 10,000 events, and one
  after 100 more;
* reads: hot search in-process (p50/p95), ``search``, ``context``, ``log``,
  ``show``, ``status`` as fresh processes (p50 over ``--cold`` runs);
* ``verify`` in full (time and peak RSS), then incrementally (only what is
  new since the last verified tips), and ``export`` (JSON bundle and
  Parquet: time and peak RSS);
* what the Claude Code ``SessionEnd`` hook reads (a fresh capsule's events),
  and ``git edda redact`` of one event (time and peak RSS, the index
  refreshed without its text).

Searches run on a feature branch (its own memory, what it inherited from the
trunk at its fork, and the trunk's decisions it follows).

Targets: index build peak RSS <= 1 GB, hot hybrid search p50 <= 15 ms,
``sync`` of 10,000 new events <= 3 s, every read command <= 1 s, incremental
``verify`` <= 1 s.

``--store DIR`` keeps the generated store (after ``git gc``) in DIR and
reuses it on later runs (each run works on a copy). Stores go under
``--dir`` (default /dev/shm when it has room, else the system temporary
directory) and are deleted at the end unless kept.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchenv import calibration, isolated_env, machine  # noqa: E402

from gitmem.embed.registry import DEFAULT_PROVIDER  # noqa: E402

START_US = 1_732_000_000_000_000  # 2024-11-19: the year of events ends a year later
SEARCH_BRANCH = "feature/15"  # or the newest feature branch of a store with fewer

GENERATE = r"""
import json, sys
sys.path.insert(0, sys.argv[6])
from pathlib import Path
import scalegen
report = scalegen.generate(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                           batch=int(sys.argv[5]), per_commit=10, seed=int(sys.argv[7]))
print(json.dumps(report))
"""

APPEND = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
import random, scalegen
from gitmem.capture.sealer import Draft
from gitmem.memory.api import Memory
text = scalegen.Text(random.Random(5))
n, start = int(sys.argv[2]), int(sys.argv[3])
# argv[5] "branch": on the checked-out branch, whose memory a sync pushes;
# else on the detached-HEAD chain, which edda.push=tracked keeps local
where = {} if sys.argv[5:] == ["branch"] else {"branch": None}
drafts = [Draft("observation", {"kind": "command", "tool": "Bash", "input": f"pytest -q {text.file()}",
          "result": text.output()}, "late-session", "agent-late", None, time=start + i, **where)
          for i in range(n)]
with Memory.open(sys.argv[1]) as m:
    m.flush()
    t = time.perf_counter()
    m.append_many(drafts)
    print(json.dumps({"seconds": time.perf_counter() - t}))
"""

SESSION_END = r"""
import json, sys, time
from gitmem.memory.api import Memory
with Memory.open(sys.argv[1]) as m:
    capsule = m.open_capsule("session", "bench").id
    for i in range(5):
        m.note(f"bench note {i}", capsule=capsule)
t = time.perf_counter()
with Memory.open(sys.argv[1]) as m:
    events = m.capsule_events(capsule)
print(json.dumps({"seconds": time.perf_counter() - t, "events": len(events)}))
"""

HOT = r"""
import json, sys, time
import pyarrow.compute as pc
from gitmem.index.view import IndexView
from gitmem.retrieval.search import search
queries = json.loads(sys.argv[2])
view = IndexView.open(sys.argv[1], refresh=False)
now = pc.max(view.table.column("time")).as_py() + 86_400_000_000  # a day after the newest
for q in queries[:3]:
    search(view, q, now=now)
result = {}
for mode in ("hybrid", "lexical", "vector"):
    times = []
    for q in queries:
        t = time.perf_counter()
        search(view, q, limit=10, now=now, mode=mode)
        times.append((time.perf_counter() - t) * 1000)
    result[mode] = times
print(json.dumps(result))
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _mb(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size / 2**10:,.0f} KB"


class Runner:
    """Fresh processes with their wall time and peak RSS."""

    def __init__(self, env: dict[str, str], scratch: Path) -> None:
        self.env = env
        self.scratch = scratch

    def run(
        self, cmd: list[str], cwd: Path, *, stdin: bytes | None = None
    ) -> tuple[float, float, str]:
        """(seconds, peak RSS in MB, stdout) of ``cmd``; exits on failure. The
        child is reaped with ``wait4``, whose rusage is that child's alone."""
        out_path, err_path = self.scratch / "stdout", self.scratch / "stderr"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.perf_counter()
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=self.env, stdin=subprocess.PIPE, stdout=out, stderr=err
            )
            assert proc.stdin is not None
            if stdin:
                proc.stdin.write(stdin)
            proc.stdin.close()
            _pid, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(
                f"{' '.join(cmd)} failed ({proc.returncode}):\n{err_path.read_text()[-3000:]}"
            )
        return seconds, usage.ru_maxrss / 1024, out_path.read_text()

    def edda(self, repo: Path, *args: str) -> tuple[float, float, str]:
        return self.run([sys.executable, "-m", "gitmem.cli.main", *args], repo)

    def python(self, code: str, *args: str, cwd: Path) -> tuple[float, float, str]:
        return self.run([sys.executable, "-c", code, *args], cwd)

    def git(self, repo: Path, *args: str) -> float:
        return self.run(["git", *args], repo)[0]

    def cold(self, repo: Path, runs: int, *args: str) -> list[float]:
        return [self.edda(repo, *args)[0] * 1000 for _ in range(runs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--branches", type=int, default=20)
    parser.add_argument("--batch", type=int, default=20_000, help="events per generated batch")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument(
        "--store", type=Path, default=None, help="keep/reuse the generated store here"
    )
    parser.add_argument(
        "--provider",
        default=None,
        help="edda.embed.provider for the index (default: gitmem's, minilm, which embeds"
        " ~100 texts/s a core; static for every text embedded at large sizes)",
    )
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated phases to skip: capture, share, index, reads, verify, export, redact",
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    started = time.perf_counter()
    calib = calibration()
    base_dir = args.dir
    if base_dir is None:
        shm = Path("/dev/shm")
        room = shutil.disk_usage(shm).free if shm.is_dir() else 0
        base_dir = shm if room > max(8 << 30, args.events * 6000) else Path(tempfile.gettempdir())
    rows: list[tuple[str, str, str]] = []

    def row(what: str, figure: str, target: str = "") -> None:
        rows.append((what, figure, target))
        print(f"  {what}: {figure}" + (f"   [{target}]" if target else ""), flush=True)

    work = Path(tempfile.mkdtemp(prefix="gitmem-bench-scale-", dir=base_dir))
    try:
        env = isolated_env(work / "home") | {"GITMEM_DAEMON": "0", "GITMEM_NO_AUTO_GC": "1"}
        env["OPENBLAS_NUM_THREADS"] = "1"
        (work / "scratch").mkdir()
        runner = Runner(env, work / "scratch")
        remote = work / "remote.git"
        a = work / "a"
        store = args.store
        if store is not None and (store / "a").is_dir():
            print(f"reusing the store in {store}", flush=True)
            shutil.copytree(store / "a", a, symlinks=True)
            shutil.copytree(store / "remote.git", remote, symlinks=True)
            # the kept store's origin is the bare remote of the run that made it
            runner.git(a, "remote", "set-url", "origin", remote.as_uri())
            meta = json.loads((store / "generated.json").read_text())
        else:
            meta = _generate(runner, work, a, remote, args, row)
            if store is not None:
                store.mkdir(parents=True, exist_ok=True)
                shutil.copytree(a, store / "a", symlinks=True, dirs_exist_ok=True)
                shutil.copytree(remote, store / "remote.git", symlinks=True, dirs_exist_ok=True)
                (store / "generated.json").write_text(json.dumps(meta))
        events = meta["events"]
        if args.provider:
            runner.git(a, "config", "edda.embed.provider", args.provider)
        provider = _config(a, env, "edda.embed.provider") or f"{DEFAULT_PROVIDER} (the default)"
        types = _config(a, env, "edda.embed.types") or "every type but observation (the default)"
        provider += f", edda.embed.types: {types}"
        print(f"store: {events:,} events, {meta['commits']:,} memory commits, "
              f"{meta['branches']} branches; embeddings: {provider}", flush=True)  # fmt: skip
        if "capture" not in skip:
            _capture(runner, a, row, events)
        b = _share(runner, a, remote, work, row, skip)
        _index(runner, a, b, row, env, skip)
        if "reads" not in skip:
            _reads(runner, a, row, args, env, _search_branch(meta["branches"]))
        _verify_export(runner, a, work, row, skip)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    print()
    print(f"scale benchmark: {meta['events']:,} events on {meta['branches']} branches, "
          f"{machine()} (at the start: {calib:.0f} ms); embeddings: {provider}; "
          f"{total / 60:.0f} min")  # fmt: skip
    print()
    print("| what | figure | target |")
    print("|---|---|---|")
    for what, figure, target in rows:
        print(f"| {what} | {figure} | {target} |")
    return 0


def _config(repo: Path, env: dict[str, str], key: str) -> str:
    proc = subprocess.run(
        ["git", "config", "--get", key], cwd=repo, env=env, capture_output=True, text=True
    )
    return proc.stdout.strip()


def _generate(
    runner: Runner, work: Path, a: Path, remote: Path, args: Any, row: Any
) -> dict[str, Any]:
    runner.run(["git", "init", "-q", "--bare", str(remote)], work)
    runner.run(["git", "clone", "-q", remote.as_uri(), str(a)], work)
    runner.git(a, "commit", "-q", "--allow-empty", "-m", "initial")
    runner.git(a, "push", "-q", "origin", "main")
    runner.edda(a, "init", "--no-fetch", "--no-hooks")
    seconds, _rss, out = runner.python(
        GENERATE, str(a), str(args.events), str(args.branches), str(START_US), str(args.batch),
        str(Path(__file__).resolve().parent), "1", cwd=a,
    )  # fmt: skip
    meta = json.loads(out.strip().splitlines()[-1])
    row(
        "generate the store (sealing and batched writes, not a target)",
        f"{meta['events']:,} events in {seconds / 60:.1f} min = {meta['events'] / seconds:,.0f} events/s;"
        f" {meta['sessions']:,} sessions, {meta['commits']:,} memory commits",
    )
    objects = a / ".git" / "objects"
    before = _du(objects)
    gc_seconds = runner.git(a, "gc", "--quiet")
    packed = _du(objects / "pack")
    loose = _du(objects) - packed
    row(
        "`git gc` of the generated store",
        f"{gc_seconds:.0f} s; objects {_mb(before)} before, after: **{_mb(packed)} packed**"
        f" (every reachable object) and {_mb(loose)} of unreachable loose objects"
        " (replaced payload-store snapshots, kept two weeks by git)",
    )
    runner.git(a, "prune", "--expire=now")
    meta["objects_packed"] = packed
    return meta


def _capture(runner: Runner, a: Path, row: Any, events: int) -> None:
    captures = []
    event = b'{"type": "observation", "body": {"kind": "command", "tool": "Bash", "input": "pytest -q", "result": "3 passed"}}'
    script = Path(sys.executable).parent / "gitmem-capture"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "gitmem.capture.main"]
    for _ in range(10):
        captures.append(runner.run(cmd, a, stdin=event)[0] * 1000)
    row(
        "capture one event, fresh `gitmem-capture` (spooled, durable)",
        f"p50 {_pct(captures, 0.5):.0f} ms",
    )
    objects = a / ".git" / "objects"
    before = _du(objects)
    seconds = runner.edda(a, "flush")[0]
    written = _du(objects) - before
    row(
        "flush 10 spooled events into git (`git edda flush`)",
        f"{seconds * 1000:,.0f} ms, {_mb(written)} of new objects",
    )
    before = _du(objects)
    out = runner.python(APPEND, str(a), "1000", str(START_US + 366 * 86400 * 10**6),
                        str(Path(__file__).resolve().parent), cwd=a)[2]  # fmt: skip
    took = json.loads(out.strip().splitlines()[-1])["seconds"]
    row(
        "`append_many` of 1,000 events in-process",
        f"{took * 1000:,.0f} ms = {1000 / took:,.0f} events/s, {_mb(_du(objects) - before)} of new objects",
    )


def _share(
    runner: Runner, a: Path, remote: Path, work: Path, row: Any, skip: set[str]
) -> Path | None:
    if "share" in skip:
        return None
    # every branch's code is on the remote, as a team's is: every chain is shared
    runner.git(a, "push", "-q", "origin", "--all")
    seconds = runner.edda(a, "push")[0]
    row("first `git edda push` of the whole store to a local bare remote", f"{seconds:.1f} s")
    b = work / "b"
    runner.run(["git", "clone", "-q", remote.as_uri(), str(b)], work)
    seconds = runner.edda(b, "init", "--no-hooks")[0]
    row("fresh clone: `git edda init` fetches all memory", f"{seconds:.1f} s")
    # 10,000 new events in the clone, then sync on both sides
    out = runner.python(APPEND, str(b), "10000", str(START_US + 367 * 86400 * 10**6),
                        str(Path(__file__).resolve().parent), "branch", cwd=b)[2]  # fmt: skip
    del out
    seconds = runner.edda(b, "sync")[0]
    row("`git edda sync` pushing 10,000 new events", f"**{seconds:.2f} s**", "≤ 3 s")
    seconds = runner.edda(a, "sync")[0]
    row(
        "`git edda sync` receiving 10,000 new events (fetch, merge)",
        f"**{seconds:.2f} s**",
        "≤ 3 s",
    )
    seconds = runner.edda(a, "sync")[0]
    row("`git edda sync` with nothing to do", f"{seconds:.2f} s")
    return b


def _index(
    runner: Runner, a: Path, b: Path | None, row: Any, env: dict[str, str], skip: set[str]
) -> None:
    if "index" in skip:
        return
    if True:
        # the build as a new clone does it: no sidecar, no embedding cache
        shutil.rmtree(a / ".git" / "edda" / "index", ignore_errors=True)
        seconds, rss, out = runner.edda(a, "index", "--rebuild", "--json")
        report = json.loads(out)
        row(
            "index build from scratch (`git edda index --rebuild`)",
            f"{seconds:.0f} s ({report.get('embedded', 0):,} texts embedded), peak RSS **{rss:,.0f} MB**",
            "peak RSS ≤ 1 GB",
        )
    APPEND_NOTE = str(START_US + 368 * 86400 * 10**6)
    runner.python(APPEND, str(a), "100", APPEND_NOTE, str(Path(__file__).resolve().parent), cwd=a)
    seconds, rss, out = runner.edda(a, "index", "--json")
    report = json.loads(out)
    row(
        "incremental refresh, 100 new events",
        f"{seconds * 1000:,.0f} ms (fresh process), peak RSS {rss:,.0f} MB",
    )
    del report, b


def _search_branch(branches: int) -> str:
    import scalegen

    names = scalegen.branch_names(branches)
    return SEARCH_BRANCH if SEARCH_BRANCH in names else names[-1]


def _reads(runner: Runner, a: Path, row: Any, args: Any, env: dict[str, str], branch: str) -> None:
    import scalegen

    runner.git(a, "checkout", "-q", branch)
    runner.edda(a, "index")  # the pending fork intent, if any
    queries = list(scalegen.iter_queries(random.Random(7), args.queries))
    _, rss, out = runner.python(HOT, str(a), json.dumps(queries), cwd=a)
    hot = json.loads(out)
    row(
        f"search in-process, hot, on `{branch}` (hybrid) p50 / p95",
        f"**{_pct(hot['hybrid'], 0.5):.1f}** / {_pct(hot['hybrid'], 0.95):.1f} ms (process RSS {rss:,.0f} MB)",
        "p50 ≤ 15 ms",
    )
    row(
        "the same, lexical / vector only, p50",
        f"{_pct(hot['lexical'], 0.5):.1f} / {_pct(hot['vector'], 0.5):.1f} ms",
    )
    cold = [runner.edda(a, "search", queries[i])[0] * 1000 for i in range(args.cold)]
    row(
        "`git edda search` fresh process p50 / max",
        f"**{_pct(cold, 0.5):,.0f}** / {max(cold):,.0f} ms",
        "≤ 1 s",
    )
    cold = [
        runner.edda(a, "context", queries[i], "--budget", "2000")[0] * 1000
        for i in range(args.cold)
    ]
    row(
        "`git edda context QUERY --budget 2000` p50 / max",
        f"**{_pct(cold, 0.5):,.0f}** / {max(cold):,.0f} ms",
        "≤ 1 s",
    )
    cold = runner.cold(a, args.cold, "log", "--limit", "20")
    row("`git edda log --limit 20` p50", f"**{_pct(cold, 0.5):,.0f}** ms", "≤ 1 s")
    some = runner.edda(a, "log", "--limit", "1", "--all-branches", "--reverse")[2].split()[0]
    cold = runner.cold(a, args.cold, "show", some)
    row("`git edda show ID` (the oldest event) p50", f"**{_pct(cold, 0.5):,.0f}** ms", "≤ 1 s")
    cold = runner.cold(a, args.cold, "status")
    row("`git edda status` p50", f"**{_pct(cold, 0.5):,.0f}** ms", "≤ 1 s")
    cold = runner.cold(a, args.cold, "branches")
    row("`git edda branches` p50", f"{_pct(cold, 0.5):,.0f} ms", "≤ 1 s")


def _verify_export(runner: Runner, a: Path, work: Path, row: Any, skip: set[str]) -> None:
    if "verify" not in skip:
        seconds, rss, _ = runner.edda(a, "verify")
        row("`git edda verify` (full: time, peak RSS)", f"{seconds:.0f} s, **{rss:,.0f} MB**")
        runs = []
        for n in range(3):  # 100 new events each time, the middle run reported
            start = START_US + 369 * 86400 * 10**6 + n * 10**6
            runner.python(APPEND, str(a), "100", str(start), str(Path(__file__).resolve().parent),
                          cwd=a)  # fmt: skip
            runs.append(runner.edda(a, "verify", "--incremental")[0] * 1000)
        row("`git edda verify --incremental` after 100 new events (since the last verified tips)",
            f"**{_pct(runs, 0.5):,.0f} ms** (of {', '.join(f'{r:,.0f}' for r in runs)})",
            "≤ 1 s")  # fmt: skip
        runs = [runner.edda(a, "verify", "--incremental")[0] * 1000 for _ in range(3)]
        row(
            "`git edda verify --incremental` with nothing new",
            f"{_pct(runs, 0.5):,.0f} ms (of {', '.join(f'{r:,.0f}' for r in runs)})",
            "≤ 1 s",
        )
    if "export" not in skip:
        for fmt, name in (("json", "bundle.json"), ("parquet", "events.parquet")):
            out = work / name
            seconds, rss, _ = runner.edda(a, "export", "--format", fmt, "--output", str(out))
            row(
                f"`git edda export --format {fmt}` (time, peak RSS, output)",
                f"{seconds:.0f} s, **{rss:,.0f} MB**, {_mb(_du(out))}",
                "memory bounded",
            )
            out.unlink()
    if "redact" not in skip:
        # what a session's end reads (the Claude Code SessionEnd hook), then a
        # redaction of an event from the middle of the store
        _, _, out = runner.python(SESSION_END, str(a), cwd=a)
        took = json.loads(out.strip().splitlines()[-1])
        row(
            "a session's capsule events, as SessionEnd reads them",
            f"{took['seconds'] * 1000:,.0f} ms",
        )
        _, _, out = runner.edda(a, "log", "--all-branches", "--limit", "1", "--json")
        target = json.loads(out)["events"][0]["id"]
        seconds, rss, _ = runner.edda(a, "redact", target, "--reason", "bench: a leaked token")
        row(
            "`git edda redact ID` (time, peak RSS; the index refreshed)",
            f"{seconds:.0f} s, **{rss:,.0f} MB**",
        )


if __name__ == "__main__":
    sys.exit(main())
