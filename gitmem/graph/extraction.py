"""Blobs -> facts, in this process or, for a cold build, in a process per
core (tree-sitter parsing is CPU-bound and holds the GIL).

Workers return each blob's cache entry already encoded (msgpack), which
the parent writes to the cache as is and decodes once. A file whose
extraction raises is still indexed, as a file node with the error; a
worker that dies (a crash inside a grammar) takes down only its batch,
whose files are then parsed one per task to find the culprit.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from gitmem.graph.cache import Cached, encode
from gitmem.graph.facts import FileFacts

Extract = Callable[[str, bytes], FileFacts]
LanguageFor = Callable[..., "str | None"]
Item = tuple[str, str, bytes]  # (cache key, path, bytes)
Progress = Callable[[str, int, int], None]

POOL_MIN_FILES = 64  # fewer files than this are parsed here: starting workers costs more
POOL_MIN_BYTES = 256 * 1024
BATCH_FILES = 32  # files per task …
BATCH_BYTES = 512 * 1024  # … or bytes, whichever comes first
ERROR_CHARS = 300


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


_LOADED: tuple[Extract, LanguageFor] | None = None


def load() -> tuple[Extract, LanguageFor]:
    """``(extract, language_for)``: :func:`gitmem.graph.extract.extract` and
    :func:`gitmem.graph.languages.language_for`."""
    global _LOADED
    if _LOADED is None:
        # Imported by name, not at the top: the grammars load in each worker.
        extract = importlib.import_module("gitmem.graph.extract").extract
        language_for = importlib.import_module("gitmem.graph.languages").language_for
        _LOADED = (extract, language_for)
    return _LOADED


def extract_one(path: str, data: bytes) -> bytes:
    """The encoded cache entry of one blob's facts (never raises for the
    blob's sake: a failure becomes the facts' ``error``)."""
    extract, language_for = load()
    try:
        facts = extract(path, data)
    except Exception as exc:  # a bug or a limit in one parser must not stop the build
        message = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
        language = language_for(path, data[:256]) or "text"
        facts = FileFacts(language=language, lines=_line_count(data), error=message)
    return encode(Cached(facts=facts, size=len(data)))


def extract_batch(items: list[Item]) -> list[tuple[str, bytes]]:
    """``(key, encoded entry)`` for each item (what a worker runs)."""
    return [(key, extract_one(path, data)) for key, path, data in items]


def _crashed(path: str, data: bytes) -> bytes:
    facts = FileFacts(language="text", lines=_line_count(data), error="the parser crashed")
    return encode(Cached(facts=facts, size=len(data)))


def _batches(items: Iterable[Item]) -> Iterator[list[Item]]:
    batch: list[Item] = []
    size = 0
    for item in items:
        batch.append(item)
        size += len(item[2])
        if len(batch) >= BATCH_FILES or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def workers() -> int:
    """Processes for a cold build: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def extract_all(items: list[Item], progress: Progress | None = None) -> Iterator[tuple[str, bytes]]:
    """``(key, encoded entry)`` for every item, in no particular order."""
    total = len(items)
    report = progress or (lambda stage, done, total: None)
    count = workers()
    size = sum(len(i[2]) for i in items)
    if count < 2 or total < POOL_MIN_FILES or size < POOL_MIN_BYTES:
        for done, (key, path, data) in enumerate(items, 1):
            yield key, extract_one(path, data)
            report("parsing files", done, total)
        return
    for done, (key, entry) in enumerate(_pooled(items, count), 1):
        yield key, entry
        report("parsing files", done, total)


def _pool(count: int) -> ProcessPoolExecutor:
    import multiprocessing

    # forkserver: a fork of this process would copy the threads it runs
    # (the blob reader's, a progress bar's) in whatever state they are in.
    # The server imports this module (and so the parsers) once; each worker
    # forked from it starts with them loaded, and with this sys.path.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "gitmem.graph.extract", "gitmem.graph.languages"])
    return ProcessPoolExecutor(count, mp_context=context)


def _pooled(items: list[Item], count: int) -> Iterator[tuple[str, bytes]]:
    failed: list[list[Item]] = []
    with _pool(count) as pool:
        running: dict[Future[list[tuple[str, bytes]]], list[Item]] = {}
        batches = _batches(items)
        broken = False
        while True:
            while not broken and len(running) < 3 * count:
                batch = next(batches, None)
                if batch is None:
                    break
                try:
                    running[pool.submit(extract_batch, batch)] = batch
                except BrokenProcessPool:
                    failed.append(batch)
                    broken = True
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                batch = running.pop(future)
                try:
                    yield from future.result()
                except BrokenProcessPool:
                    failed.append(batch)
                    broken = True
        if broken:
            failed.extend(batches)
    if failed:
        yield from _isolated([item for batch in failed for item in batch])


def _isolated(items: list[Item]) -> Iterator[tuple[str, bytes]]:
    """Each file alone, in a worker of its own pool until one crashes it."""
    pool = _pool(1)
    try:
        for key, path, data in items:
            try:
                [(_, entry)] = pool.submit(extract_batch, [(key, path, data)]).result()
            except BrokenProcessPool:
                pool.shutdown(wait=True)
                pool = _pool(1)
                entry = _crashed(path, data)
            yield key, entry
    finally:
        pool.shutdown(wait=True)
