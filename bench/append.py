"""Benchmark the write path and print its figures.

    python bench/append.py [--runs 60] [--batch 1000]

Measures, in a fresh temporary repository:

* capture from a fresh process (the hook case): ``gitmem-capture`` started
  with one event on stdin, from process start until it exits having made the
  event durable (spool file fsynced), p50/p95;
* the same through the full CLI (``git edda note``), for comparison;
* in-process batched appends (``Memory.append_many``), events/s;
* in-process single appends (``Memory.note``), events/s;
* flushing a spool of captured events into git, events/s.

Targets (2-core machine): capture p50 <= 40 ms; batched >= 2,000 events/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import isolated_env, machine  # noqa: E402


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _script(name: str) -> list[str]:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return [str(candidate)]
    module = {"gitmem-capture": "gitmem.capture.main", "git-edda": "gitmem.cli.main"}[name]
    return [sys.executable, "-m", module]


def time_process(
    cmd: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None, runs: int
) -> list[float]:
    times = []
    for i in range(runs):
        data = stdin.replace(b"{i}", str(i).encode()) if stdin else None
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, input=data, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = isolated_env(home)
        os.environ.update(env)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "gitmem")], check=True, env=env
        )
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
        subprocess.run(
            ["git", "commit", "-q", "--allow-empty", "-m", "init"], cwd=repo, check=True, env=env
        )

        event = b'{"type": "observation", "body": {"kind": "tool_call", "tool": "Bash", "input": "pytest -q tests/test_{i}.py", "result": "3 passed"}}'
        python = [sys.executable, "-c", "pass"]
        baseline = time_process(python, repo, env, None, min(args.runs, 30))
        # The CLI runs before the captures: every git edda command flushes the
        # spool, and the flush of the captured events is measured below.
        cli = time_process(
            [*_script("git-edda"), "note", "bench note {i}"],
            repo,
            env,
            None,
            max(5, args.runs // 6),
        )
        capture = time_process(_script("gitmem-capture"), repo, env, event, args.runs)

        from gitmem.capture.sealer import Draft
        from gitmem.memory.api import Memory

        with Memory.open(repo) as mem:
            t0 = time.perf_counter()
            flushed = mem.flush().events
            flush_s = time.perf_counter() - t0
            rounds = 5
            t0 = time.perf_counter()
            for r in range(rounds):
                mem.append_many(
                    [
                        Draft("note", {"text": f"batch {r} event {i}", "tags": ["bench"]})
                        for i in range(args.batch)
                    ]
                )
            batch_rate = rounds * args.batch / (time.perf_counter() - t0)
            singles = 300
            t0 = time.perf_counter()
            for i in range(singles):
                mem.note(f"single {i}")
            single_rate = singles / (time.perf_counter() - t0)

    print(f"machine: {machine()}")
    print(
        f"python -c pass (baseline)        p50 {statistics.median(baseline):6.1f} ms  p95 {_percentile(baseline, 95):6.1f} ms"
    )
    print(
        f"capture, fresh process -> durable p50 {statistics.median(capture):6.1f} ms  p95 {_percentile(capture, 95):6.1f} ms  (target p50 <= 40 ms, {args.runs} runs)"
    )
    print(
        f"git edda note, fresh process     p50 {statistics.median(cli):6.1f} ms  p95 {_percentile(cli, 95):6.1f} ms"
    )
    print(f"flush spool into git             {flushed / flush_s:8.0f} events/s ({flushed} events)")
    print(
        f"batched append in-process        {batch_rate:8.0f} events/s (batches of {args.batch}; target >= 2,000)"
    )
    print(f"single append in-process         {single_rate:8.0f} events/s (fsync on)")


if __name__ == "__main__":
    main()
