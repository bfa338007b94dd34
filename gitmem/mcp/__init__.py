"""The MCP server: this repository's memory as tools and a resource for any
MCP client (Claude Code, Claude Desktop, IDEs), over stdio.

A front end like :mod:`gitmem.cli`: each tool validates its input, calls one
use case in :mod:`gitmem.app` and renders a compact result. The ``mcp`` SDK is
an optional dependency (``pip install 'git-edda[mcp]'``) and costs about a
second to import, so only :func:`serve` loads it, and nothing else in gitmem
imports :mod:`gitmem.mcp.server`.
"""

from __future__ import annotations

from gitmem.app.session import Repo
from gitmem.errors import DependencyError

INSTALL_HINT = "pip install 'git-edda[mcp]'"

# The SDK and what it brings (pydantic, anyio): a missing one means the extra is not installed.
_SDK_MODULES = frozenset({"mcp", "mcp_types", "pydantic", "pydantic_core", "anyio"})


def serve(repo: Repo = None) -> None:
    """Serve the memory of the repository containing ``repo`` over stdio until
    the client closes standard input."""
    try:
        from gitmem.mcp.server import run_stdio
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _SDK_MODULES:
            raise
        raise DependencyError(
            "the MCP server needs the mcp package, which is not installed", INSTALL_HINT
        ) from None
    run_stdio(repo)
