"""Front ends for coding agents: Claude Code's hooks and their installation.

Like :mod:`gitmem.cli`, these call use cases in :mod:`gitmem.app` (and the
layers below it) and never the other way round."""
