"""Benchmark what gitmem's git hooks add to git commands, and print the figures.

    python bench/hooks.py [--runs 40]

For each hook, the same git command is timed in two fresh repositories that
differ only in whether ``git edda init`` installed the hooks, alternating
between them so machine noise hits both alike. Reported: p50 of each and the
p50 overhead (target: <= 50 ms per hook).

* post-checkout: ``git checkout`` between two branches that have memory
  (the common case), and ``git checkout -b`` of a new branch (records a fork
  intent and starts the background worker);
* post-commit: ``git commit --allow-empty`` (spools a commit_link event);
* post-merge: ``git merge --no-ff`` of a branch with one commit;
* post-rewrite: ``git commit --amend`` (post-commit and post-rewrite both run);
* pre-push: ``git push`` of one commit to a local bare repository (starts a
  background memory push).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import isolated_env, machine  # noqa: E402


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _edda(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)],
        env=env,
        check=True,
        capture_output=True,
    )


def make_pair(base: Path, env: dict[str, str]) -> tuple[Path, Path, Path]:
    """Two identical repositories, hooks installed in the first; one bare remote each."""
    repos = []
    for name, hooks in (("with", True), ("without", False)):
        repo = base / name
        repo.mkdir()
        _git(repo, env, "init", "-q")
        _git(repo, env, "commit", "-q", "--allow-empty", "-m", "initial")
        _git(repo, env, "branch", "other")
        _edda(repo, env, "init", *([] if hooks else ["--no-hooks"]), "--pre-push")
        _edda(repo, env, "note", "main memory")
        remote = base / f"{name}.git"
        _git(base, env, "init", "-q", "--bare", str(remote))
        _git(repo, env, "remote", "add", "origin", str(remote))
        _git(repo, env, "push", "-q", "origin", "main")
        repos.append(repo)
    # give "other" memory in both (so checkout to it is the common, no-op case)
    for repo in repos:
        _git(repo, env, "checkout", "-q", "other")
        _edda(repo, env, "note", "on other")
        _git(repo, env, "checkout", "-q", "main")
    return repos[0], repos[1], base


def settle(repo: Path) -> None:
    """Wait for background workers started by earlier runs (they compete for CPU)."""
    intents = repo / ".git" / "edda" / "intents"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and intents.exists() and any(intents.iterdir()):
        time.sleep(0.1)
    time.sleep(1.0)


def measure(
    name: str,
    runs: int,
    with_repo: Path,
    without_repo: Path,
    step: Callable[[Path, int], list[list[str]]],
    env: dict[str, str],
) -> tuple[str, float, float]:
    """Alternate the two repositories; time only the last command of each step."""
    timings: dict[Path, list[float]] = {with_repo: [], without_repo: []}
    settle(with_repo)
    for i in range(runs):
        for repo in (with_repo, without_repo) if i % 2 == 0 else (without_repo, with_repo):
            commands = step(repo, i)
            for setup in commands[:-1]:
                _git(repo, env, *setup)
            start = time.perf_counter()
            _git(repo, env, *commands[-1])
            timings[repo].append((time.perf_counter() - start) * 1000)
    with_p50 = statistics.median(timings[with_repo])
    without_p50 = statistics.median(timings[without_repo])
    return name, with_p50, without_p50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    # Background workers (fork, merge, memory push) may still run at the end.
    with tempfile.TemporaryDirectory(
        prefix="gitmem-bench-hooks-", ignore_cleanup_errors=True
    ) as tmp:
        base = Path(tmp)
        home = base / "home"
        env = isolated_env(home) | {"GITMEM_NO_AUTO_GC": "1"}
        with_repo, without_repo, _ = make_pair(base, env)

        def switch(repo: Path, i: int) -> list[list[str]]:
            return [["checkout", "-q", "other" if i % 2 == 0 else "main"]]

        def new_branch(repo: Path, i: int) -> list[list[str]]:
            return [["checkout", "-q", "main"], ["checkout", "-q", "-b", f"new{i}"]]

        def commit(repo: Path, i: int) -> list[list[str]]:
            return [["checkout", "-q", "main"], ["commit", "-q", "--allow-empty", "-m", f"c{i}"]]

        def merge(repo: Path, i: int) -> list[list[str]]:
            return [
                ["checkout", "-q", "-B", f"m{i}", "main"],
                ["commit", "-q", "--allow-empty", "-m", f"work {i}"],
                ["checkout", "-q", "main"],
                ["merge", "-q", "--no-ff", "-m", f"merge {i}", f"m{i}"],
            ]

        def amend(repo: Path, i: int) -> list[list[str]]:
            return [  # amend a plain commit (amending a merge commit is a merge)
                ["commit", "-q", "--allow-empty", "-m", f"base {i}"],
                ["commit", "-q", "--amend", "--allow-empty", "-m", f"amended {i}"],
            ]

        def push(repo: Path, i: int) -> list[list[str]]:
            return [
                ["commit", "-q", "--allow-empty", "-m", f"p{i}"],
                ["push", "-q", "origin", "main"],
            ]

        rows = [
            measure(
                "post-checkout: switch branch", args.runs, with_repo, without_repo, switch, env
            ),
            measure(
                "post-checkout: new branch (fork)",
                args.runs,
                with_repo,
                without_repo,
                new_branch,
                env,
            ),
            measure("post-commit: commit", args.runs, with_repo, without_repo, commit, env),
            measure("post-merge: merge --no-ff", args.runs, with_repo, without_repo, merge, env),
            measure(
                "amend (post-commit + post-rewrite)", args.runs, with_repo, without_repo, amend, env
            ),
            measure("pre-push: push one commit", args.runs, with_repo, without_repo, push, env),
        ]
        time.sleep(3)  # let background workers finish before the directory goes
    print(f"# bench/hooks.py: {args.runs} runs each; {machine()}")
    print(f"{'hook (git command)':<38} {'with':>9} {'without':>9} {'added':>9}  target")
    over = False
    for name, with_p50, without_p50 in rows:
        added = with_p50 - without_p50
        hooks = 2 if name.startswith("amend") else 1  # amend runs two hooks
        over = over or added > 50 * hooks
        print(
            f"{name:<38} {with_p50:>7.1f}ms {without_p50:>7.1f}ms {added:>7.1f}ms  <= {50 * hooks} ms"
        )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
