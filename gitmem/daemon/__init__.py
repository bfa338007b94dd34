"""The warm daemon: one long-lived process per repository that answers hook
calls and ``git edda search``/``context``/``ask`` with everything already
loaded (modules, the embedder, the capture pipeline).

It is started on demand (:func:`gitmem.ipc.control.spawn`) and exits after an
idle timeout; every client falls back to doing the work itself when it is
absent, so nothing depends on it. It sits above every front end: it runs
their code (the command line's and the hooks') on their clients' behalf.
"""
