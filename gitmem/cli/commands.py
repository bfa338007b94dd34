"""Every ``git edda`` command, registered on :data:`gitmem.cli.root.app` by
importing the modules that define them (one per command group)."""

from __future__ import annotations

from gitmem.cli import admin, agents, browse, code, daemon, manual, mcp, record, retrieve, share
from gitmem.cli.root import Output, app

__all__ = [
    "Output",
    "admin",
    "agents",
    "app",
    "browse",
    "code",
    "daemon",
    "manual",
    "mcp",
    "record",
    "retrieve",
    "share",
]
