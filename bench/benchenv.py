"""What every benchmark shares: an isolated git environment and the machine line."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def isolated_env(home: Path) -> dict[str, str]:
    """The current environment with git's config isolated under ``home``
    (created when missing; a fixed identity, ``main`` as the default branch,
    file:// allowed) and no GIT_*/GITMEM_* variables leaking in. gitmem is
    importable from this checkout.

    PYTHONDONTWRITEBYTECODE is dropped: it would make every process recompile
    gitmem from source, while real installs have bytecode (pip compiles it).
    """
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n"
        '[init]\n\tdefaultBranch = main\n[protocol "file"]\n\tallow = always\n'
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "GITMEM_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        PYTHONPATH=str(ROOT),
    )
    return env


def calibration() -> float:
    """Milliseconds for a fixed pure-Python loop (best of five). A shared
    machine's speed drifts (this one's has varied 2.5x within an hour), so
    figures are only comparable next to this number."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, (time.perf_counter() - start) * 1000)
    return best


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, calibration loop {calibration():.0f} ms"
    )


def run_python(code: str, *args: str, env: dict[str, str]) -> str:
    """Run ``python -c code args`` in a fresh process; its stdout (exit on failure)."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return proc.stdout


def timed_edda(repo: Path, env: dict[str, str], *args: str) -> float:
    """Milliseconds for ``git edda ARGS`` as a fresh process in ``repo``."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    return (time.perf_counter() - start) * 1000
