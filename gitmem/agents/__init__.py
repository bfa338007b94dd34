"""Front ends for coding agents: Claude Code's hooks and their installation,
and a generic JSON protocol for other agents.

Like :mod:`gitmem.cli`, these call use cases in :mod:`gitmem.app` (and the
layers below it) and never the other way round. Capture (what the agent did)
goes through the same boundary as ``gitmem-capture`` (:mod:`gitmem.capture.main`)
and imports only the standard library; injection (what the agent should
know) uses the application layer.
"""
