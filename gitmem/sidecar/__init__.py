"""What every sidecar shares: derived data kept next to memory, never the source of truth.

A sidecar (the search index, :mod:`gitmem.index`; the code graph, :mod:`gitmem.graph`) lives
in its own directory under ``<git common dir>/edda/`` and is built from
something git holds (memory tips, a code commit). The machinery here knows
nothing of what a sidecar contains:

* :mod:`~gitmem.sidecar.generations`: the sidecar's root directory (repaired
  when something else sits at its path), generation directories built whole
  and switched to by the manifest, ``written.json`` (what a build wrote before
  it could write its manifest), removing old generations;
* :mod:`~gitmem.sidecar.manifest`: the manifest, written last and atomically,
  with a checksum of its own fields and only plain names inside the root;
* :mod:`~gitmem.sidecar.integrity`: the size and CRC-32 of every file, read
  again only when the file system says a file changed;
* :mod:`~gitmem.sidecar.lock`: one builder at a time per sidecar;
* :mod:`~gitmem.sidecar.freshness`: memory tips read with the standard
  library, compared with the ones a manifest recorded.

Damage found here is :class:`~gitmem.errors.IndexDamagedError`, whichever
sidecar it is in: whoever catches it rebuilds. Standard library only, so that
the staleness check on every query stays cheap.
"""
