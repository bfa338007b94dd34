"""gitmem: durable, branch-aware memory for AI coding agents, stored in git.

The package root stays import-light (the capture hook imports submodules of
it on every tool call): :class:`Memory` is loaded on first access.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.app.memory import Memory


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from gitmem.app.memory import Memory

        return Memory
    raise AttributeError(f"module 'gitmem' has no attribute {name!r}")
