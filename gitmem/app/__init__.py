"""The application layer: the use cases every front end shares.

The command line (:mod:`gitmem.cli`), the coming MCP server and HTTP API, and
library users call these functions. Each opens what it needs for one
repository, does one job, and returns a typed result; none prints or exits.

* :mod:`gitmem.app.session`: opening memory for reading or writing;
* :mod:`gitmem.app.record`: note, decide (with supersession), ratify, pin,
  checkpoint, learn, capsules;
* :mod:`gitmem.app.browse`: log, show, status;
* :mod:`gitmem.app.retrieve`: index, search, context, ask;
* :mod:`gitmem.app.code`: the code graph: find, callers, callees, impact,
  neighbors, the repository map;
* :mod:`gitmem.app.share`: pull, push, sync, merge, branches;
* :mod:`gitmem.app.admin`: init (hooks, first pull), redact, gc, verify,
  export, import, flush.
"""
