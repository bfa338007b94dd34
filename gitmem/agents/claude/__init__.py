"""Claude Code: its settings files and hooks."""
