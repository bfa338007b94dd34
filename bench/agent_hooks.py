"""Latency of the Claude Code hooks, each as Claude Code runs it: a fresh
``git-edda hook claude`` process with the event's JSON on stdin.

    python bench/agent_hooks.py [--runs 30] [--events 5000]

Prints, for each hook, p50 and p95 in milliseconds and p50 as a ratio to
``python -c pass`` measured in the same run (the machine's speed drifts, so
the ratio is what compares between runs):

* capture: PostToolUse for a Bash command (the hook on every tool call);
* SessionStart, cold: no daemon, the index already built (its context pack);
* UserPromptSubmit: the prompt recorded and the relevant memory injected;
* ``git edda search`` from a fresh process, for comparison.

The store holds ``--events`` notes and decisions on ``main``.
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

from benchenv import ROOT, isolated_env, machine

PAYLOADS = ROOT / "tests" / "agents" / "payloads"


def payload(name: str, repo: Path, session: str) -> bytes:
    """A golden payload from a real Claude Code session, pointed at ``repo``."""
    text = (PAYLOADS / f"{name}.json").read_text()
    text = text.replace("/PROJECT", str(repo)).replace("SESSION_ID", session)
    return text.encode()


def timed(command: list[str], env: dict[str, str], data: bytes | None, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(command, input=data, env=env, capture_output=True)
        out.append((time.perf_counter() - start) * 1000)
        if proc.returncode != 0:
            raise SystemExit(f"{command} failed: {proc.stderr.decode()[-500:]}")
    return out


def make_store(repo: Path, env: dict[str, str], events: int) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], env=env, check=True)
    subprocess.run(["git", "-C", str(repo), "config", "edda.fsync", "false"], env=env, check=True)
    code = (
        "import sys\n"
        "from gitmem.memory.api import Memory\n"
        "from gitmem.capture.sealer import Draft\n"
        "words = 'cache retry parser index branch merge token schema clock lock'.split()\n"
        "with Memory.open(sys.argv[1]) as mem:\n"
        "    drafts = []\n"
        "    for i in range(int(sys.argv[2])):\n"
        "        w = words[i % len(words)] + ' ' + words[(i * 7) % len(words)]\n"
        "        if i % 10 == 0:\n"
        "            drafts.append(Draft('decision', {'key': f'k{i % 97}', 'value': w}))\n"
        "        else:\n"
        "            drafts.append(Draft('note', {'text': f'{w} note {i}', 'paths': [f'src/m{i % 50}.py']}))\n"
        "    for start in range(0, len(drafts), 1000):\n"
        "        mem.append_many(drafts[start:start + 1000])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(repo), str(events)], env=env, check=True)
    edda = [sys.executable, "-m", "gitmem.cli.main"]
    subprocess.run([*edda, "index", "-C", str(repo)], env=env, check=True, capture_output=True)


def row(name: str, samples: list[float], baseline: float) -> str:
    p50 = statistics.median(samples)
    p95 = sorted(samples)[max(0, int(len(samples) * 0.95) - 1)]
    return f"{name:<40} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {p50 / baseline:5.1f}x python -c pass"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--events", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = isolated_env(Path(tmp) / "home")
        repo = Path(tmp) / "repo"
        make_store(repo, env, args.events)
        hook = [sys.executable, "-m", "gitmem.cli.main", "hook", "claude", "-C", str(repo)]
        baseline = statistics.median(timed([sys.executable, "-c", "pass"], env, None, args.runs))
        start = payload("SessionStart", repo, "bench-session")
        subprocess.run(hook, input=start, env=env, capture_output=True, check=True)
        capture = timed(hook, env, payload("PostToolUse.Bash", repo, "bench-session"), args.runs)
        prompt = json.loads(payload("UserPromptSubmit", repo, "bench-session"))
        prompts = []
        for i in range(args.runs):  # a different prompt each time: no repeat is skipped
            prompt["prompt"] = f"how does the cache retry work, take {i}"
            prompts += timed(hook, env, json.dumps(prompt).encode(), 1)
        sessions = timed(hook, env, start, args.runs)
        search = timed(
            [sys.executable, "-m", "gitmem.cli.main", "search", "cache retry", "-C", str(repo)],
            env,
            None,
            args.runs,
        )
    print(f"machine: {machine()}")
    print(f"store: {args.events} events, index built; {args.runs} runs each, no daemon")
    print(f"{'python -c pass (baseline)':<40} p50 {baseline:7.1f} ms")
    print(row("capture hook (PostToolUse, Bash)", capture, baseline))
    print(row("SessionStart, context pack injected", sessions, baseline))
    print(row("UserPromptSubmit, memory injected", prompts, baseline))
    print(row("git edda search, fresh process", search, baseline))


if __name__ == "__main__":
    main()
