"""Claude Code: its settings files, the hooks gitmem registers there, and what they do."""
