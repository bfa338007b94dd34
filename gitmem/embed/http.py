"""Embedders that call a local or remote HTTP service (standard library only).

* ``ollama``: ``POST {url}/api/embed`` with ``{"model", "input"}``, answered
  by ``{"embeddings": [[...], ...]}``;
* ``openai``: any OpenAI-compatible endpoint, ``POST {url}/embeddings`` with
  ``{"model", "input"}``, answered by ``{"data": [{"index", "embedding"}]}``.

The API key is read from the environment at request time (the variable is
named by ``edda.embed.apiKeyEnv``); it is never stored in git config and is
scrubbed from every error message, including echoed response bodies.

Every failure raises :class:`~gitmem.errors.DependencyError` with a hint:
the service is a dependency that is missing or unusable, not bad input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from gitmem.embed.base import normalize_rows
from gitmem.errors import DependencyError, UsageError

if TYPE_CHECKING:
    import urllib.request

    import numpy as np
    from numpy.typing import NDArray

DEFAULT_BATCH = 64
DEFAULT_TIMEOUT = 30.0
_EXCERPT_CHARS = 200
_PROBE_TEXT = "dimension probe"
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def _host_of(url: str) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower()


def _without_credentials(url: str) -> str:
    """``url`` without any ``user:password@`` part (it goes into ids and messages)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class HttpEmbedder:
    """Shared machinery of the HTTP providers: batching, requests, errors,
    checks of the returned vectors. Subclasses define the wire format."""

    provider: ClassVar[str]
    default_url: ClassVar[str]
    default_model: ClassVar[str]
    # A query is a round trip to a server: a search waits for it beside the
    # full-text side (see gitmem.retrieval.overlap).
    background: ClassVar[bool] = True

    def __init__(
        self,
        *,
        model: str | None = None,
        url: str | None = None,
        batch: int = DEFAULT_BATCH,
        timeout: float = DEFAULT_TIMEOUT,
        dim: int | None = None,
    ) -> None:
        if batch <= 0 or timeout <= 0 or (dim is not None and dim <= 0):
            raise UsageError(
                f"{self.provider} embedder: batch, timeout and dim must be positive",
                "fix git config edda.embed.batch / edda.embed.timeout / edda.embed.dim",
            )
        self.model = model or self.default_model
        self.url = (url or self.default_url).rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise UsageError(
                f"edda.embed.url = {_without_credentials(self.url)!r} is not an http(s) URL",
                f"set it like: git config edda.embed.url {self.default_url}",
            )
        self.batch = batch
        self.timeout = timeout
        self._configured_dim = dim
        self._dim = dim
        self._opener: urllib.request.OpenerDirector | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r})"

    @property
    def model_id(self) -> str:
        """``provider:model@url``: another model or another server is another
        vector space, so either change rebuilds the vectors."""
        return f"{self.provider}:{self.model}@{_without_credentials(self.url)}"

    @property
    def dim(self) -> int:
        """The vector length: ``edda.embed.dim`` if set, else learnt from the
        first response (embedding a short probe text if nothing was embedded yet)."""
        if self._dim is None:
            self.embed([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in requests of at most ``batch`` texts; rows are
        L2-normalised here whatever the server does. Empty texts are not sent
        (some servers reject them) and get zero rows."""
        import numpy as np

        if isinstance(texts, str):
            raise UsageError("embed() takes a sequence of texts, not one string", "wrap it: [text]")
        wanted = [i for i, text in enumerate(texts) if text]
        rows: list[NDArray[np.float32]] = []
        for start in range(0, len(wanted), self.batch):
            part = [texts[i] for i in wanted[start : start + self.batch]]
            rows.append(self._embed_batch(part))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if wanted:
            out[np.asarray(wanted)] = np.concatenate(rows)
        return normalize_rows(out)

    # -- wire format (subclasses) -------------------------------------------

    endpoint: ClassVar[str]

    def _request_body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _extract(self, payload: Any) -> list[Any]:
        """The list of vectors in a decoded response (not yet checked)."""
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        return {}

    def _secret(self) -> str | None:
        """A value that must never appear in an error message."""
        return None

    def _hint_for_status(self, status: int) -> str:
        if status in (401, 403):
            return "the server refused the credentials; check the API key"
        if status == 404:
            return (
                f"check git config edda.embed.url ({self.url}) and edda.embed.model ({self.model})"
            )
        if status == 413:
            return "the request is too large: lower git config edda.embed.batch"
        if status == 429:
            return "the server is rate limiting: retry later, or lower git config edda.embed.batch"
        if 300 <= status < 400:
            return "the server redirects; set git config edda.embed.url to the final address"
        return f"see the {self.provider} server's logs"

    def _unreachable_hint(self) -> str:
        return (
            f"check that the server runs at {self.url} (git config edda.embed.url), "
            "or switch provider: git config edda.embed.provider static"
        )

    # -- transport ----------------------------------------------------------

    def _scrub(self, text: str) -> str:
        secret = self._secret()
        if secret:
            text = text.replace(secret, "[redacted]")
        return text

    def _fail(self, message: str, hint: str) -> DependencyError:
        return DependencyError(self._scrub(message), self._scrub(hint))

    def _excerpt(self, body: bytes) -> str:
        text = " ".join(body[: _EXCERPT_CHARS * 4].decode("utf-8", "replace").split())
        text = self._scrub(text)  # before cutting, so no partial key survives the cut
        return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."

    def _open(self) -> urllib.request.OpenerDirector:
        if self._opener is None:
            import urllib.request

            class NoRedirect(urllib.request.HTTPRedirectHandler):
                # Following a redirect would resend the Authorization header
                # to wherever the server points; report it instead.
                def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                    return None

            handlers: list[urllib.request.BaseHandler] = [NoRedirect()]
            if _host_of(self.url) in _LOOPBACK_HOSTS:
                # A local server must not be sent through http_proxy.
                handlers.append(urllib.request.ProxyHandler({}))
            self._opener = urllib.request.build_opener(*handlers)
        return self._opener

    def _post(self, body: dict[str, Any]) -> Any:
        import http.client
        import socket
        import urllib.error
        import urllib.request

        where = f"{self.provider} at {_without_credentials(self.url)}"
        request = urllib.request.Request(
            self.url + self.endpoint,
            data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": "gitmem",
                **self._headers(),
            },
            method="POST",
        )
        try:
            with self._open().open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = self._excerpt(exc.read())
            except Exception:  # a body cut short still leaves the status to report
                detail = ""
            raise self._fail(
                f"{where} answered HTTP {exc.code} {exc.reason}"
                + (f": {detail}" if detail else ""),
                self._hint_for_status(exc.code),
            ) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise self._fail(
                    f"{where} did not answer within {self.timeout:g} s",
                    "raise git config edda.embed.timeout, or lower edda.embed.batch",
                ) from None
            if isinstance(reason, ConnectionRefusedError):
                raise self._fail(
                    f"cannot connect to {where}: connection refused", self._unreachable_hint()
                ) from None
            raise self._fail(f"cannot reach {where}: {reason}", self._unreachable_hint()) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise self._fail(
                f"{where} sent a response that is not JSON: {self._excerpt(raw)!r}",
                f"check that git config edda.embed.url points at a {self.provider} server",
            ) from None

    def _embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        import numpy as np

        where = f"{self.provider} at {_without_credentials(self.url)}"
        payload = self._post(self._request_body(texts))
        try:
            vectors = self._extract(payload)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise self._fail(
                f"{where} sent an unexpected response ({type(exc).__name__}: {exc}): "
                f"{self._excerpt(json.dumps(payload).encode())!r}",
                f"check that git config edda.embed.url points at a {self.provider} server",
            ) from None
        if len(vectors) != len(texts):
            raise self._fail(
                f"{where} returned {len(vectors)} vectors for {len(texts)} texts",
                "the server is not behaving as expected; lower git config edda.embed.batch to 1 to narrow it down",
            )
        lengths = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if len(lengths) != 1 or -1 in lengths or 0 in lengths:
            raise self._fail(
                f"{where} returned vectors of inconsistent lengths {sorted(lengths)}",
                f"check that model {self.model!r} is an embedding model",
            )
        (length,) = lengths
        if self._dim is not None and length != self._dim:
            source = "git config edda.embed.dim" if self._configured_dim else "earlier responses"
            raise self._fail(
                f"{where} returned {length}-dimensional vectors, but {source} says {self._dim}",
                "set git config edda.embed.dim to the model's dimension (or unset it)",
            )
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._fail(
                f"{where} returned vectors with non-numeric values",
                f"check that model {self.model!r} is an embedding model",
            ) from None
        if not np.isfinite(matrix).all():
            raise self._fail(
                f"{where} returned vectors containing NaN or infinity",
                f"check that model {self.model!r} is an embedding model",
            )
        self._dim = length
        return matrix


class OllamaEmbedder(HttpEmbedder):
    """Ollama's ``/api/embed`` (default ``http://127.0.0.1:11434``, model ``nomic-embed-text``)."""

    provider = "ollama"
    default_url = "http://127.0.0.1:11434"
    default_model = "nomic-embed-text"
    endpoint = "/api/embed"

    def _extract(self, payload: Any) -> list[Any]:
        vectors = payload["embeddings"]
        if not isinstance(vectors, list):
            raise TypeError("'embeddings' is not a list")
        return vectors

    def _hint_for_status(self, status: int) -> str:
        if status == 404:
            return (
                f"pull the model (ollama pull {self.model}), or check git config edda.embed.model"
            )
        return super()._hint_for_status(status)

    def _unreachable_hint(self) -> str:
        return (
            f"start Ollama (ollama serve) or fix git config edda.embed.url ({self.url}); "
            "or switch provider: git config edda.embed.provider static"
        )


class OpenAIEmbedder(HttpEmbedder):
    """Any OpenAI-compatible ``/embeddings`` endpoint (default the OpenAI API).

    The API key comes from the environment variable ``api_key_env`` (default
    ``OPENAI_API_KEY``) when each request is made; without it no
    ``Authorization`` header is sent (local servers rarely need one).
    """

    provider = "openai"
    default_url = "https://api.openai.com/v1"
    default_model = "text-embedding-3-small"
    endpoint = "/embeddings"

    def __init__(
        self,
        *,
        model: str | None = None,
        url: str | None = None,
        batch: int = DEFAULT_BATCH,
        timeout: float = DEFAULT_TIMEOUT,
        dim: int | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ) -> None:
        super().__init__(model=model, url=url, batch=batch, timeout=timeout, dim=dim)
        self.api_key_env = api_key_env

    def _secret(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _headers(self) -> dict[str, str]:
        key = self._secret()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _extract(self, payload: Any) -> list[Any]:
        items = payload["data"]
        if not isinstance(items, list):
            raise TypeError("'data' is not a list")
        if all(isinstance(item, dict) and "index" in item for item in items):
            items = sorted(items, key=lambda item: int(item["index"]))
            if [int(item["index"]) for item in items] != list(range(len(items))):
                raise ValueError("the 'index' values are not 0..n-1")
        return [item["embedding"] for item in items]

    def _hint_for_status(self, status: int) -> str:
        if status in (401, 403):
            where = "is not set" if not self._secret() else "was refused"
            return (
                f"the API key {where}: export it in the environment variable {self.api_key_env} "
                "(its name is git config edda.embed.apiKeyEnv; never put the key itself in git config)"
            )
        return super()._hint_for_status(status)
