"""Derived sidecar indexes of memory: never the source of truth.

Under ``<git common dir>/edda/index/`` gitmem keeps, per repository:

* ``events-<hex>.arrow``: an Arrow IPC table with one row per event, in
  segments (memory-mapped by readers; see :mod:`gitmem.index.table` and
  :mod:`gitmem.index.segments`);
* ``fulltext/``: a Tantivy full-text index (:mod:`gitmem.index.fulltext`);
* ``vectors.usearch``: a usearch vector index of event texts
  (:mod:`gitmem.index.vectors`), with an embedding cache by content digest;
* ``manifest.json``: the memory tips all of it reflects.

:mod:`gitmem.index.refresh` keeps them current: incrementally when the
indexed tips are ancestors of the current ones, fully otherwise. The
machinery every sidecar shares (generations, the manifest, the builder lock,
the staleness check) is :mod:`gitmem.sidecar`.
"""
