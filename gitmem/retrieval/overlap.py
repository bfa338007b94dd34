"""Work that runs on a worker thread while the caller goes on: a query's embedding.

A hybrid search needs the query's embedding and its full-text matches.
MiniLM takes 5 to 8 ms to embed a short query on this kind of machine, most of
it in BLAS and numpy loops that release the GIL, so it can run while the
caller filters events and asks Tantivy for the full-text candidates: the
search then costs about the longer of the two instead of their sum.

One worker thread per process, started on first use and kept: an embedder
keeps per-thread scratch memory (see :mod:`gitmem.embed.minilm`), which a
thread per query would fault in afresh every time. A forked child starts its
own worker when it needs one.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
WORKER = "gitmem-overlap"  # the worker thread's name


class Pending(Generic[T]):
    """The result of a function handed to :func:`submit`, once it is done."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def result(self) -> T:
        """Wait for the function, then return its value or raise its exception."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set before _done

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the waiting caller, who re-raises it
            self._error = exc
        finally:
            self._done.set()


_Job = tuple[Callable[[], object], Pending[object]]
_jobs: queue.SimpleQueue[_Job] | None = None
_lock = threading.Lock()


def submit(fn: Callable[[], T]) -> Pending[T]:
    """Run ``fn`` on the process's worker thread; :meth:`Pending.result` waits for it.
    Called on the worker thread itself, ``fn`` runs at once (it would otherwise
    wait behind the job that waits for it)."""
    global _jobs
    if threading.current_thread().name == WORKER:
        pending: Pending[T] = Pending()
        pending._run(fn)
        return pending
    with _lock:
        if _jobs is None:
            _jobs = queue.SimpleQueue()
            worker = threading.Thread(target=_work, args=(_jobs,), name=WORKER, daemon=True)
            worker.start()
        jobs = _jobs
    pending = Pending()
    jobs.put((fn, pending))  # type: ignore[arg-type]  # Pending is invariant; _run only sets it
    return pending


def _work(jobs: queue.SimpleQueue[_Job]) -> None:
    while True:
        fn, pending = jobs.get()
        pending._run(fn)


def _forget_worker() -> None:
    # The worker thread does not survive a fork; the child starts its own.
    global _jobs, _lock
    _jobs = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_worker)
