"""Latency of the Claude Code hooks, each as Claude Code runs it: a fresh
``git-edda hook claude`` process with the event's JSON on stdin.

    python bench/agent_hooks.py [--runs 30] [--events 5000]

Prints, for each hook, p50 and p95 in milliseconds and p50 as a ratio to
``python -c pass`` measured in the same run (the machine's speed drifts, so
the ratio is what compares between runs):

* capture: PostToolUse for a Bash command (the hook on every tool call),
  back to back;
* SessionStart: its context pack (the index already built);
* UserPromptSubmit: the prompt recorded and the relevant memory injected;
* ``git edda search`` from a fresh process;

each without a daemon (``GITMEM_DAEMON=0``) and then with the daemon warm
(``git edda daemon start``). Prompts, sessions and searches are ``--gap``
seconds apart, as an agent's are; the daemon uses such lulls to bring the
index up to date with what was captured.

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


def timed(
    command: list[str], env: dict[str, str], data: bytes | None, runs: int, gap: float = 0.0
) -> list[float]:
    out = []
    for _ in range(runs):
        time.sleep(gap)
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
    return f"{name:<56} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {p50 / baseline:5.1f}x python -c pass"


def measure(
    hook: list[str], edda: list[str], env: dict[str, str], repo: Path, runs: int, gap: float
) -> dict[str, list[float]]:
    """Each hook and query, ``runs`` times, as fresh processes; captures back
    to back (a burst of parallel tool calls), the rest ``gap`` seconds apart
    (an agent's prompts and sessions are seconds apart)."""
    start = payload("SessionStart", repo, "bench-session")
    out = {"capture": timed(hook, env, payload("PostToolUse.Bash", repo, "bench-session"), runs)}
    prompt = json.loads(payload("UserPromptSubmit", repo, "bench-session"))
    prompts = []
    for i in range(runs):  # a different prompt each time: no repeat is skipped
        prompt["prompt"] = f"how does the cache retry work, take {i}"
        prompts += timed(hook, env, json.dumps(prompt).encode(), 1, gap)
    out["prompt"] = prompts
    out["start"] = timed(hook, env, start, runs, gap)
    out["search"] = [
        t
        for i in range(runs)
        for t in timed([*edda, "search", f"cache retry {i}"], env, None, 1, gap)
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between prompts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = isolated_env(Path(tmp) / "home")
        env["GITMEM_DAEMON"] = "0"
        repo = Path(tmp) / "repo"
        make_store(repo, env, args.events)
        # The console script, as Claude Code and a shell run it (not python -m).
        edda = [str(Path(sys.executable).with_name("git-edda")), "-C", str(repo)]
        hook = [*edda, "hook", "claude"]
        baseline = statistics.median(timed([sys.executable, "-c", "pass"], env, None, args.runs))
        start = payload("SessionStart", repo, "bench-session")
        subprocess.run(hook, input=start, env=env, capture_output=True, check=True)
        cold = measure(hook, edda, env, repo, args.runs, args.gap)
        env["GITMEM_DAEMON"] = "1"
        subprocess.run([*edda, "daemon", "start"], env=env, check=True, capture_output=True)
        try:
            warm = measure(hook, edda, env, repo, args.runs, args.gap)
        finally:
            subprocess.run([*edda, "daemon", "stop"], env=env, capture_output=True)
    print(f"machine: {machine()}")
    print(f"store: {args.events} events, index built; {args.runs} runs each")
    print(f"{'python -c pass (baseline)':<44} p50 {baseline:7.1f} ms")
    names = {
        "capture": "capture hook (PostToolUse, Bash)",
        "start": "SessionStart, context pack injected",
        "prompt": "UserPromptSubmit, memory injected",
        "search": "git edda search, fresh process",
    }
    for label, results in (("no daemon", cold), ("daemon warm", warm)):
        for key, name in names.items():
            print(row(f"{name}, {label}", results[key], baseline))


if __name__ == "__main__":
    main()
