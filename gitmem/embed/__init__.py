"""Text embeddings for gitmem: offline by default, providers pluggable.

* :func:`get_embedder` picks the provider from git config (``edda.embed.*``);
* :class:`MiniLMEmbedder` is the default: all-MiniLM-L6-v2 run in numpy,
  its int8 weights shipped in the package, no network, no torch, verified by
  checksum; :class:`StaticEmbedder` (WordLlama's static token vectors) is the
  fast, weaker one;
* :class:`OllamaEmbedder` and :class:`OpenAIEmbedder` call HTTP services;
* :class:`EmbeddingCache` stores vectors by content digest so each text is
  embedded once per model.

Importing this package is cheap: numpy, the tokenizer and urllib are only
imported by the providers when they are used, and the classes below are
imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.embed.base import Embedder
from gitmem.embed.registry import (
    BUILTIN_PROVIDERS,
    available_providers,
    get_embedder,
    provider_name,
)

if TYPE_CHECKING:
    from gitmem.embed.cache import EmbeddingCache, digest
    from gitmem.embed.http import OllamaEmbedder, OpenAIEmbedder
    from gitmem.embed.minilm import MiniLMEmbedder
    from gitmem.embed.static import StaticEmbedder

__all__ = [
    "BUILTIN_PROVIDERS",
    "Embedder",
    "EmbeddingCache",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "StaticEmbedder",
    "available_providers",
    "digest",
    "get_embedder",
    "provider_name",
]

_LAZY = {
    "EmbeddingCache": "gitmem.embed.cache",
    "digest": "gitmem.embed.cache",
    "MiniLMEmbedder": "gitmem.embed.minilm",
    "OllamaEmbedder": "gitmem.embed.http",
    "OpenAIEmbedder": "gitmem.embed.http",
    "StaticEmbedder": "gitmem.embed.static",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
