"""Work on a thread of its own beside the builder's: the parts of a build
whose heavy lifting lets go of the GIL (Tantivy's indexing, Parquet's
encoding and writing) overlap the Python that does not."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Concurrent"]

T = TypeVar("T")


class Concurrent(Generic[T]):
    """``work`` run on a thread of its own; :meth:`join` waits for it and
    returns its result, or raises what it raised (only when the joining
    thread is not already raising: a failure there wins, this one is
    dropped with the build)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._result: T | None = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._result = work()
            except BaseException as exc:  # handed to the joining thread
                self._error = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def join(self) -> T:
        self._thread.join()
        error, self._error = self._error, None
        if error is not None and sys.exc_info()[1] is None:
            raise error
        return self._result  # type: ignore[return-value]  # set unless work raised
