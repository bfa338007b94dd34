"""The embedder protocol every provider implements, and helpers they share.

An embedder turns texts into unit-length float32 vectors. Its ``model_id``
names the model *and its version* (for the static provider, the pinned
weights; for HTTP providers, the model name and the endpoint): vectors made
under different ids are never compared, and a changed id means every cached
vector is rebuilt.

Standard library only at import time: numpy is imported inside functions so
``import gitmem.embed`` stays cheap for commands that never embed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class Embedder(Protocol):
    """What gitmem needs from a text embedding provider.

    ``model_id`` and ``dim`` are read-only properties here so that a provider
    may implement them either as plain attributes or as properties (an HTTP
    provider learns ``dim`` from the server's first answer).
    """

    @property
    def model_id(self) -> str:
        """Stable id including the model's version, e.g.
        ``static:wordllama-l2-supercat-256@0.4.0.post1``; used as a cache key."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector ``embed`` returns."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32, shape ``(len(texts), dim)``, each row of
        unit L2 norm (a row with nothing to embed stays all zeros). Batches
        internally, so any number of texts may be passed."""
        ...


@runtime_checkable
class Preloading(Protocol):
    """An embedder that can load its model before the first :meth:`~Embedder.embed`
    (the built-in providers verify and load their files): a reader holding a
    query embedder loads it up front instead of inside the first query."""

    def load(self) -> None:
        """Load the model now (idempotent); raises what ``embed`` would."""
        ...


def normalize_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """L2-normalise the rows of a float32 matrix in place and return it; rows
    of norm zero are left as zeros (dividing them would make NaNs)."""
    import numpy as np

    # A plain reduction (not einsum/BLAS): its summation order depends only on
    # the row's length, so a text embeds to the same bytes alone or in a batch.
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1))
    norms[norms == 0] = 1.0
    matrix /= norms[:, None]
    return matrix
