"""The commit links of the events table, looked up by capsule and by session.

Search gives each hit the code commit linked in its capsule or session
(provenance): a handful of capsules and sessions per query, among tens of
thousands of links in a year of memory. The links are picked from the
table once per view and grouped by capsule and by session (dictionary
codes sorted once, in numpy), so a query's lookup reads only its own links
instead of testing every link's capsule and session (~2 ms a query at a
million events); a link's body is read and decoded only when it is
returned, once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.index import compute as pc

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

Link = tuple[int, "str | None", "str | None", "str | None"]
"""(time, session, capsule, sha) of a commit link."""


class _Groups:
    """The positions of a column's rows by value (nulls in no group)."""

    def __init__(self, column: pa.Array) -> None:
        import numpy as np
        import pyarrow as pa

        encoded = pc.call("dictionary_encode", [column])
        self.values: list[str] = encoded.dictionary.to_pylist()
        codes = pc.call("coalesce", [encoded.indices, pa.scalar(-1, pa.int32())])
        self.codes: NDArray[np.int32] = pc.to_numpy(codes, "int32")
        self._code = {value: code for code, value in enumerate(self.values)}
        self._order = np.argsort(self.codes, kind="stable")
        self._starts = np.searchsorted(
            self.codes[self._order], np.arange(len(self.values) + 1, dtype=np.int32)
        )

    def positions(self, values: Sequence[str]) -> list[NDArray[np.intp]]:
        found = []
        for value in values:
            code = self._code.get(value)
            if code is not None:
                found.append(self._order[self._starts[code] : self._starts[code + 1]])
        return found

    def value(self, position: int) -> str | None:
        code = int(self.codes[position])
        return self.values[code] if code >= 0 else None


class CommitLinks:
    """Every ``commit_link`` event of a table, by capsule and by session."""

    def __init__(self, table: pa.Table) -> None:
        import numpy as np

        mask = pc.equal(table.column("type"), "commit_link")
        # Light columns only: the bodies, one page each wherever the links
        # are, are read for the links a search returns.
        links = pc.filter(table.select(["time", "session", "capsule"]), mask)
        links = links.combine_chunks()  # tens of thousands of rows: one chunk each
        self.times: NDArray[np.int64] = pc.to_numpy(links.column("time"), "int64")
        self.sessions = _Groups(links.column("session").chunk(0) if len(links) else _empty())
        self.capsules = _Groups(links.column("capsule").chunk(0) if len(links) else _empty())
        self._rows = np.flatnonzero(pc.to_numpy(pc.false_if_null(mask), "bool"))
        self._bodies = table.column("body")
        self._shas: dict[int, str | None] = {}

    def __len__(self) -> int:
        return len(self.times)

    def find(self, capsules: Sequence[str] = (), sessions: Sequence[str] = ()) -> list[Link]:
        """The links in one of ``capsules`` or ``sessions``, in table order."""
        import numpy as np

        parts = [*self.capsules.positions(capsules), *self.sessions.positions(sessions)]
        if not parts:
            return []
        positions: list[int] = pc.sorted_distinct(np.concatenate(parts)).tolist()
        return [
            (
                int(self.times[p]),
                self.sessions.value(p),
                self.capsules.value(p),
                self._sha(p),
            )
            for p in positions
        ]

    def _sha(self, position: int) -> str | None:
        if position not in self._shas:
            body = self._bodies[int(self._rows[position])].as_py()
            self._shas[position] = json.loads(body).get("sha") if body else None
        return self._shas[position]


def _empty() -> pa.Array:
    import pyarrow as pa

    return pa.array([], pa.string())
