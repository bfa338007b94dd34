"""The ``mcp`` command: the MCP server over stdio (:mod:`gitmem.mcp`)."""

from __future__ import annotations

from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app


@app.command
def mcp(*, common: Common = DEFAULT_COMMON) -> Output:
    """Serve this repository's memory to an agent over MCP (stdio), until the client disconnects.

    Tools: search, context, show, log, ask, capsule_status, note, decide,
    ratify, pin, checkpoint, learn; resource gitmem://context (the context
    pack). An MCP client starts it: register it in .mcp.json as
    {"mcpServers": {"gitmem": {"command": "git-edda", "args": ["mcp"]}}}.
    Needs the optional mcp package: pip install 'git-edda[mcp]'.
    """
    from gitmem.mcp import serve

    serve(common.repo)
    # Standard output belonged to the protocol; nothing more to say on it.
    return Output({"stopped": "the client closed standard input"})
