"""The code graph: the repository's code parsed with tree-sitter into nodes
(files, modules, classes, functions, …) and edges (contains, imports, calls,
extends, implements, references, documents), stored as Parquet in a sidecar
beside the search index (``<git common dir>/edda/graph/``).

Layers inside, bottom to top:

* :mod:`~gitmem.graph.facts`: what one file says (definitions, imports,
  calls, references, inheritance, doc sections), per blob, before any
  cross-file resolution; and :mod:`~gitmem.graph.schema`, the stored tables;
* :mod:`~gitmem.graph.languages` and :mod:`~gitmem.graph.extract`: one entry
  per language (grammar + queries), and a blob's bytes -> its facts;
* :mod:`~gitmem.graph.resolve`: every file's facts -> nodes and edges, each
  resolved edge with a confidence and its reason;
* the build (scan a commit and the worktree, reuse facts by blob id, write a
  sidecar generation), code chunks for search;
* :mod:`~gitmem.graph.query` (find, callers, callees, impact, neighbors),
  :mod:`~gitmem.graph.rank` (the PageRank repository map) and
  :mod:`~gitmem.graph.picture` (Mermaid and dot), over a
  :class:`~gitmem.graph.view.GraphView`.

Spec: ``spec/graph.md``; stored formats: ``formats/graph-*.json``.
"""
