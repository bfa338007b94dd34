"""Running the pager, as git runs it. Standard library only: the thin client
of the daemon (:mod:`gitmem.cli.forward`) pages what the daemon answered."""

from __future__ import annotations

import os
import sys


def run_pager(text: str, command: str) -> bool:
    """Show ``text`` through ``command``; False when the shell could not start it."""
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode(encoding, "replace"))
        proc.stdin.close()
    except OSError:  # the reader quit early (q in less): the rest is not wanted
        pass
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # the pager handles ^C itself; wait for it, as git does
            continue
    return code != 127  # 127: the shell found no such command
