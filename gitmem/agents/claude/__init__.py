"""Claude Code: hooks (``git edda hook claude``)."""
