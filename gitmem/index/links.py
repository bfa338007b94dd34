"""The commit links of the events table, looked up by capsule and by session.

Search gives each hit the code commit linked in its capsule or session
(provenance): a handful of capsules and sessions per query, among tens of
thousands of links in a year of memory. The links are picked from the
table once per view and grouped by capsule and by session (dictionary
codes sorted once, in numpy), so a query's lookup reads only its own links
instead of testing every link's capsule and session (~2 ms a query at a
million events; a process's first lookup tests the links instead, which
costs less than grouping them); a link's body is read and decoded only
when it is returned, once.
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
        codes = pc.call("coalesce", [encoded.indices, pa.scalar(-1, pa.int32())])
        self._code = {value: code for code, value in enumerate(encoded.dictionary.to_pylist())}
        order_codes = pc.to_numpy(codes, "int32")
        self._order = np.argsort(order_codes, kind="stable")
        self._starts = np.searchsorted(
            order_codes[self._order], np.arange(len(self._code) + 1, dtype=np.int32)
        )

    def positions(self, values: Sequence[str]) -> list[NDArray[np.intp]]:
        found = []
        for value in values:
            code = self._code.get(value)
            if code is not None:
                found.append(self._order[self._starts[code] : self._starts[code + 1]])
        return found


class CommitLinks:
    """Every ``commit_link`` event of a table, by capsule and by session."""

    def __init__(self, table: pa.Table) -> None:
        import numpy as np

        mask = pc.equal(table.column("type"), "commit_link")
        # Light columns only: the bodies, one page each wherever the links
        # are, are read for the links a search returns.
        links = pc.filter(table.select(["time", "session", "capsule"]), mask)
        self._links = links.combine_chunks()  # tens of thousands of rows: one chunk each
        self.times: NDArray[np.int64] = pc.to_numpy(self._links.column("time"), "int64")
        self._rows = np.flatnonzero(pc.to_numpy(pc.false_if_null(mask), "bool"))
        self._bodies = table.column("body")
        self._shas: dict[int, str | None] = {}
        self._groups: tuple[_Groups, _Groups] | None = None
        self._finds = 0

    def __len__(self) -> int:
        return len(self.times)

    def find(self, capsules: Sequence[str] = (), sessions: Sequence[str] = ()) -> list[Link]:
        """The links in one of ``capsules`` or ``sessions``, in table order.

        A process's first lookup tests every link (~1.5 ms); the next ones
        read the groups built then (~0.1 ms: a hot search's provenance)."""
        import numpy as np

        self._finds += 1
        links = self._links
        if not len(links):
            return []
        if self._finds == 1:
            wanted = pc.or_(
                pc.false_if_null(pc.is_in(links.column("capsule"), list(capsules))),
                pc.false_if_null(pc.is_in(links.column("session"), list(sessions))),
            )
            positions: list[int] = np.flatnonzero(pc.to_numpy(wanted, "bool")).tolist()
        else:
            if self._groups is None:
                column = links.column
                self._groups = (
                    _Groups(column("capsule").chunk(0)),
                    _Groups(column("session").chunk(0)),
                )
            by_capsule, by_session = self._groups
            parts = [*by_capsule.positions(capsules), *by_session.positions(sessions)]
            if not parts:
                return []
            positions = pc.sorted_distinct(np.concatenate(parts)).tolist()
        sessions_at, capsules_at = links.column("session"), links.column("capsule")
        return [
            (int(self.times[p]), sessions_at[p].as_py(), capsules_at[p].as_py(), self._sha(p))
            for p in positions
        ]

    def _sha(self, position: int) -> str | None:
        if position not in self._shas:
            body = self._bodies[int(self._rows[position])].as_py()
            self._shas[position] = json.loads(body).get("sha") if body else None
        return self._shas[position]
