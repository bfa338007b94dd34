"""Choose the embedder from git config (or the environment).

========================  =====================================================
``edda.embed.provider``   ``minilm`` (default), ``static``, ``ollama``,
                          ``openai``, ``none`` (no vectors), or a plugin name;
                          the environment variable ``GITMEM_EMBED_PROVIDER``
                          overrides it. Code search (``purpose="code"``) uses
                          ``static`` unless one is set
``edda.embed.threads``    threads MiniLM embeds a batch on, 1 to 64 (default:
                          one per CPU, at most 4, where numpy's BLAS is
                          OpenBLAS run on one thread; else 1)
``edda.embed.model``      the model name (HTTP providers; default per provider)
``edda.embed.url``        the server's base URL (HTTP providers)
``edda.embed.batch``      texts per request (default 64)
``edda.embed.timeout``    seconds per request (default 30)
``edda.embed.dim``        the vector length, if known (else learnt from the server)
``edda.embed.apiKeyEnv``  the environment variable holding the API key
                          (``openai``; default ``OPENAI_API_KEY``)
========================  =====================================================

Plugins register a factory ``(config, stamp_dir) -> Embedder`` under the entry
point group ``gitmem.embedders``; entry points are only looked up for a name
that is not built in (scanning installed distributions costs milliseconds).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from gitmem.errors import DependencyError, GitmemError, UsageError
from gitmem.storage.gitconfig import Config, get_int, get_last

if TYPE_CHECKING:
    from pathlib import Path

    from gitmem.embed.base import Embedder

BUILTIN_PROVIDERS = ("minilm", "static", "ollama", "openai", "none")
DEFAULT_PROVIDER = "minilm"
DEFAULT_THREADS = 4
"""MiniLM's embedding threads by default at most: past a few, the Python
between its matrix products (under the GIL) limits what more threads add."""
MAX_THREADS = 64  # what edda.embed.threads may ask for (each thread keeps ~5 MB of buffers)
# Code chunks are many (75,000 in the standard library) and long, and MiniLM
# reads 128 word pieces of prose-trained English at ~50 texts/s: unless a
# provider is chosen, code search keeps the static vectors (~10,000 texts/s).
DEFAULT_CODE_PROVIDER = "static"

Purpose = Literal["memory", "code"]
ENTRY_POINT_GROUP = "gitmem.embedders"
PROVIDER_ENV = "GITMEM_EMBED_PROVIDER"

EmbedderFactory = Callable[[Config, "Path | None"], "Embedder"]


def provider_name(config: Config, purpose: Purpose = "memory") -> str:
    """The configured provider name: ``$GITMEM_EMBED_PROVIDER``, else
    ``edda.embed.provider``, else ``minilm`` (``static`` for code)."""
    default = DEFAULT_CODE_PROVIDER if purpose == "code" else DEFAULT_PROVIDER
    name = os.environ.get(PROVIDER_ENV) or get_last(config, "edda.embed.provider")
    return (name or default).strip().lower() or default


def _plugin_entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name.lower(), ep)  # the first installed wins, as pip lists them
    return found


def available_providers() -> list[str]:
    """Every provider name that would be accepted: built-ins, then plugins."""
    plugins = sorted(set(_plugin_entry_points()) - set(BUILTIN_PROVIDERS))
    return [*BUILTIN_PROVIDERS, *plugins]


def _get_float(config: Config, key: str, default: float) -> float:
    value = get_last(config, key)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0 or number == float("inf"):
        raise UsageError(
            f"git config {key} = {value!r} is not a positive number of seconds",
            f"set {key} to a number such as 30",
        )
    return number


def _get_dim(config: Config) -> int | None:
    if get_last(config, "edda.embed.dim") is None:
        return None
    return get_int(config, "edda.embed.dim", 0)


def embed_threads(config: Config) -> int:
    """How many threads MiniLM embeds a batch on: ``edda.embed.threads``
    (1 to :data:`MAX_THREADS`), else one per CPU this process may use (at
    most :data:`DEFAULT_THREADS`) where numpy's BLAS runs one thread, and 1
    elsewhere: a BLAS with threads of its own already spreads the products
    over the cores, and more threads would fight it for them."""
    value = get_last(config, "edda.embed.threads")
    if value is not None:
        text = value.strip()
        if not text.isdigit() or not 1 <= int(text) <= MAX_THREADS:
            raise UsageError(
                f"git config edda.embed.threads = {value!r} is not a number of threads"
                f" from 1 to {MAX_THREADS}",
                "set it to a number such as 2, or unset it for one per CPU",
            )
        return int(text)
    if not _blas_runs_one_thread():
        return 1
    from gitmem.sidecar.cpus import usable_cpus

    return min(usable_cpus(), DEFAULT_THREADS)


def _blas_runs_one_thread() -> bool:
    """Whether numpy's BLAS is OpenBLAS told to run one thread: gitmem's
    commands, hooks and daemon set ``OPENBLAS_NUM_THREADS=1`` before numpy
    loads. Other BLAS builds (MKL, Accelerate) do not read it: their own
    threads are assumed."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        return False
    import numpy as np

    try:
        config: Any = np.show_config(mode="dicts")
        name = str(config["Build Dependencies"]["blas"]["name"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return False  # a build that does not say: assume threads of its own
    return "openblas" in name.lower()


def get_embedder(
    config: Config, *, stamp_dir: Path | None = None, purpose: Purpose = "memory"
) -> Embedder | None:
    """The embedder the configuration asks for, or ``None`` for provider
    ``none`` (vectors disabled). ``purpose`` ``"code"`` is the code search
    index's: the same provider when one is configured, else ``static``.

    ``config`` is what :func:`gitmem.storage.gitconfig.read_config` returns.
    ``stamp_dir`` is a directory where providers may keep small caches (the
    built-in providers remember their checksum verification there). Nothing is
    loaded or contacted here: providers do their work on first use.

    Raises :class:`UsageError` for an unknown provider or a bad setting, and
    :class:`DependencyError` when a plugin cannot be loaded.
    """
    name = provider_name(config, purpose)
    model = get_last(config, "edda.embed.model")
    url = get_last(config, "edda.embed.url")
    if name == "none":
        return None
    if name == "minilm":
        from gitmem.embed.minilm import MODEL_NAME, MiniLMEmbedder

        _one_model("minilm", MODEL_NAME, model)
        return MiniLMEmbedder(stamp_dir=stamp_dir, threads=embed_threads(config))
    if name == "static":
        from gitmem.embed.static import MODEL_NAME, StaticEmbedder

        _one_model("static", MODEL_NAME, model)
        return StaticEmbedder(stamp_dir=stamp_dir)
    if name in ("ollama", "openai"):
        from gitmem.embed.http import DEFAULT_BATCH, DEFAULT_TIMEOUT, OllamaEmbedder, OpenAIEmbedder

        batch = get_int(config, "edda.embed.batch", DEFAULT_BATCH)
        timeout = _get_float(config, "edda.embed.timeout", DEFAULT_TIMEOUT)
        dim = _get_dim(config)
        if name == "ollama":
            return OllamaEmbedder(model=model, url=url, batch=batch, timeout=timeout, dim=dim)
        key_env = get_last(config, "edda.embed.apiKeyEnv") or "OPENAI_API_KEY"
        return OpenAIEmbedder(
            model=model, url=url, batch=batch, timeout=timeout, dim=dim, api_key_env=key_env
        )
    return _load_plugin(name, config, stamp_dir)


def _one_model(provider: str, name: str, configured: str | None) -> None:
    """A built-in offline provider has one model: ``edda.embed.model`` may only name it."""
    if configured not in (None, "", name):
        raise UsageError(
            f"the {provider} embedder has one model, {name}; edda.embed.model is {configured!r}",
            "unset it (git config --unset edda.embed.model) or choose another edda.embed.provider",
        )


def _load_plugin(name: str, config: Config, stamp_dir: Path | None) -> Embedder:
    entry = _plugin_entry_points().get(name)
    if entry is None:
        raise UsageError(
            f"unknown embedding provider {name!r}; valid: {', '.join(available_providers())}",
            "set git config edda.embed.provider (or $GITMEM_EMBED_PROVIDER) to one of those",
        )
    where = f"embedding provider plugin {name!r} ({entry.value})"
    try:
        factory: EmbedderFactory = entry.load()
        embedder = factory(config, stamp_dir)
    except GitmemError:
        raise
    except Exception as exc:
        raise DependencyError(
            f"{where} failed to load: {type(exc).__name__}: {exc}",
            "reinstall the package that provides it, or choose another edda.embed.provider",
        ) from exc
    # Checked without touching ``dim``: for a remote provider that may mean a request.
    if not callable(getattr(embedder, "embed", None)) or not isinstance(
        getattr(embedder, "model_id", None), str
    ):
        raise DependencyError(
            f"{where} returned {type(embedder).__name__}, which is not an Embedder "
            "(it needs model_id, dim and embed())",
            "report this to the plugin's authors, or choose another edda.embed.provider",
        )
    return embedder
