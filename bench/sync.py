"""Benchmark sharing memory through a git remote, and print the figures.

    python bench/sync.py [--events 2000]

In fresh temporary repositories and a local bare remote (file://):

* first push of N events from clone A (``git edda push``, a fresh process);
* bootstrap: ``git edda init`` in a fresh clone B, which pulls all N events;
* a sync with nothing to do (the common case, e.g. the pre-push hook);
* a sync after both clones wrote 100 events each (fetch, merge, push);
* a memory merge of a branch with 100 events (``git edda merge``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchenv import isolated_env, machine, timed_edda  # noqa: E402


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def _append(repo: Path, env: dict[str, str], count: int, prefix: str, branch: str) -> None:
    code = (
        "import sys; from gitmem.memory.api import Memory; from gitmem.capture.sealer import Draft\n"
        "with Memory.open(sys.argv[1]) as m:\n"
        "    m.append_many([Draft('note', {'text': f'{sys.argv[2]} {i}'}, branch=sys.argv[4])"
        " for i in range(int(sys.argv[3]))])\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(repo), prefix, str(count), branch],
        env=env,
        check=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(
        prefix="gitmem-bench-sync-", ignore_cleanup_errors=True
    ) as tmp:
        base = Path(tmp)
        home = base / "home"
        env = isolated_env(home) | {"GITMEM_NO_AUTO_GC": "1"}
        remote = base / "remote.git"
        _run(["git", "init", "-q", "--bare", str(remote)], base, env)
        a = base / "a"
        _run(["git", "clone", "-q", remote.as_uri(), str(a)], base, env)
        _run(["git", "commit", "-q", "--allow-empty", "-m", "initial"], a, env)
        _run(["git", "push", "-q", "origin", "main"], a, env)
        timed_edda(a, env, "init", "--no-fetch")
        _append(a, env, args.events, "a", "main")
        rows.append((f"first push of {args.events} events", timed_edda(a, env, "push")))
        b = base / "b"
        _run(["git", "clone", "-q", remote.as_uri(), str(b)], base, env)
        rows.append((f"bootstrap a fresh clone ({args.events} events)", timed_edda(b, env, "init")))
        rows.append(("sync with nothing to do", timed_edda(a, env, "sync")))
        _append(a, env, 100, "a2", "main")
        _append(b, env, 100, "b2", "main")
        timed_edda(a, env, "sync")
        rows.append(("sync after 100 new events on each side", timed_edda(b, env, "sync")))
        _append(b, env, 100, "f", "feature")
        rows.append(
            ("memory merge of a branch with 100 events", timed_edda(b, env, "merge", "feature"))
        )
    print(f"# bench/sync.py: local bare remote over file://; {machine()}")
    for name, ms in rows:
        print(f"{name:<48} {ms:>8.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
