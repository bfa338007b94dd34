"""What every benchmark shares: an isolated git environment and the machine line."""

from __future__ import annotations

import os
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def isolated_env(home: Path) -> dict[str, str]:
    """The current environment with git's config isolated under ``home`` (a
    fixed identity, ``main`` as the default branch, file:// allowed) and no
    GIT_*/GITMEM_* variables leaking in. gitmem is importable from this checkout.

    PYTHONDONTWRITEBYTECODE is dropped: it would make every process recompile
    gitmem from source, while real installs have bytecode (pip compiles it).
    """
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


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )
