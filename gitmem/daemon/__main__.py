"""``python -m gitmem.daemon COMMON_DIR [--idle-timeout SECONDS]``: run a daemon.

Started by :func:`gitmem.ipc.control.spawn`; exits at once, quietly, when
another daemon already serves the repository.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gitmem.daemon")
    parser.add_argument("repo", help="the repository's git common dir (or any path in it)")
    parser.add_argument("--idle-timeout", type=float, default=None, help="seconds")
    args = parser.parse_args(argv)
    # One BLAS thread, as the commands whose work the daemon does run (see
    # gitmem.cli.main); set before numpy loads, the user's value wins. A
    # daemon spawned by a hook's process did not inherit it from a command.
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from gitmem.daemon.server import serve

    return serve(args.repo, idle_timeout=args.idle_timeout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
