"""Branch-aware memory: fork and merge memory chains as git branches are created and merged."""
