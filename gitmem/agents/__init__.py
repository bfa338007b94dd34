"""Front ends for coding agents: Claude Code's hooks, a generic JSON protocol.

Capture (what the agent did) goes through the same boundary as
``gitmem-capture`` (:mod:`gitmem.capture.main`) and imports only the standard
library; injection (what the agent should know) uses the application layer.
"""
