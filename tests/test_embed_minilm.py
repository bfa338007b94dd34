"""The default embedder (gitmem.embed.minilm): all-MiniLM-L6-v2 from int8
weights, run in numpy.

Reference vectors (tests/data/minilm_reference.json, made by
tools/minilm_reference.py) come from the original float32 weights through a
plain float64 forward pass written apart from gitmem's, and from
onnxruntime with another int8 conversion of the model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.embed import MiniLMEmbedder
from gitmem.embed.minilm import (
    DIM,
    MAX_TOKENS,
    MODEL_ID,
    STAMP_NAME,
    VOCAB,
    WEIGHTS,
    verify_files,
)
from gitmem.embed.pinned import DATA_DIR
from gitmem.errors import DependencyError, UsageError

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "data" / "minilm_reference.json"
OLD = 1_600_000_000_000_000_000  # an mtime well in the past (ns), so stamps may be written


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


def unit(rows: Any) -> Any:
    array = np.asarray(rows, dtype=np.float64)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def copy_files(root: Path) -> Path:
    """Copies of the two pinned files under ``root``, with an old mtime."""
    root.mkdir(parents=True, exist_ok=True)
    for pin in (WEIGHTS, VOCAB):
        shutil.copyfile(DATA_DIR / pin.relpath, root / pin.relpath)
        os.utime(root / pin.relpath, ns=(OLD, OLD))
    return root


# -- what the vectors are -------------------------------------------------------------


def test_vectors_are_unit_float32_of_dim_384(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["the build fails on CI", "merge conflict in README", "x"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384) == (3, minilm.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.model_id == MODEL_ID == f"minilm:all-MiniLM-L6-v2-int8-128@{WEIGHTS.sha256[:12]}"
    assert minilm.embed([]).shape == (0, 384)
    # nothing to embed (no word pieces): a zero row, not NaN
    empty = minilm.embed(["", "   ", "\x00\u200b"])
    assert not empty.any()
    with pytest.raises(UsageError):
        minilm.embed("one string")
    with pytest.raises(UsageError):
        minilm.embed([b"bytes"])  # type: ignore[list-item]


def test_int8_weights_stay_within_0_999_of_the_float32_model(
    minilm: MiniLMEmbedder, reference: dict[str, Any]
) -> None:
    texts = reference["texts"]
    assert [list(ids) for ids in minilm.token_ids(texts)] == reference["ids"]
    ours = unit(minilm.embed(texts))
    original = (ours * unit(reference["float32"])).sum(axis=1)
    assert original.min() > 0.999, original  # what the int8 conversion costs
    assert original.mean() > 0.9995
    onnx = (ours * unit(reference["onnx"])).sum(axis=1)
    assert onnx.min() > 0.998, onnx  # another runtime, another int8 conversion
    # The vectors gitmem made when the file was written: a guard against an
    # unnoticed change of arithmetic (BLAS differs in the last bits by machine).
    assert np.allclose(ours, unit(reference["gitmem"]), atol=5e-5)


def test_paraphrases_are_closer_than_unrelated_text(minilm: MiniLMEmbedder) -> None:
    ci, pipeline, banana = minilm.embed(
        [
            "the build fails on CI",
            "continuous integration pipeline is broken",
            "banana bread recipe",
        ]
    )
    assert ci @ pipeline > ci @ banana + 0.3
    assert ci @ pipeline > pipeline @ banana + 0.3
    question, answer, other = minilm.embed(
        [
            "which database did we pick for the lexical index?",
            "decision: use SQLite FTS5 for full-text search",
            "the logo should be blue",
        ]
    )
    assert question @ answer > question @ other + 0.1


def test_long_texts_are_cut_at_128_word_pieces(minilm: MiniLMEmbedder) -> None:
    head = "alpha beta gamma " * 42  # 126 word pieces
    ids = minilm.token_ids([head, head + "delta " * 500])
    assert len(ids[0]) == len(ids[1]) == MAX_TOKENS
    long, short = minilm.embed([head + "delta " * 500, head])
    assert long.tobytes() == short.tobytes()


# -- determinism ----------------------------------------------------------------------


def test_a_text_embeds_to_the_same_bytes_alone_and_in_any_batch(minilm: MiniLMEmbedder) -> None:
    texts = [f"commit {i}: refactor the {w} module" for i, w in enumerate(["db", "ui", "api"] * 12)]
    texts += ["", "word " * 300, "短い", "🎉", "x"]
    batch = minilm.embed(texts)
    again = MiniLMEmbedder().embed(texts)
    assert batch.tobytes() == again.tobytes()
    singles = np.stack([minilm.embed([t])[0] for t in texts])
    assert singles.tobytes() == batch.tobytes()
    backwards = minilm.embed(texts[::-1])[::-1]
    assert backwards.tobytes() == batch.tobytes()


def test_padding_rows_change_no_vector_beyond_rounding(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token rows are padded with zero rows for the matrix products
    (ROW_BLOCK), which only the products see: unpadded (a block of 1), every
    remainder of a length gives the same vector to float32 rounding
    (attention over the padding would not), and a block that does not divide
    the 128-piece cut still fits the scratch buffers."""
    from gitmem.embed import minilm as module

    sentence = "the migration of the billing schema failed twice because of a lock"
    texts = ["word " * 200] + [sentence.rsplit(" ", k)[0] for k in range(12)]
    lengths = {len(ids) % module.ROW_BLOCK for ids in minilm.token_ids(texts)}
    assert lengths == set(range(module.ROW_BLOCK))  # every remainder occurs
    padded = np.stack([minilm.embed([t])[0] for t in texts])
    monkeypatch.setattr(module, "ROW_BLOCK", 1)
    plain = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.abs(padded - plain).max() < 5e-6
    assert np.all(np.einsum("ij,ij->i", padded, plain) > 0.99999)
    monkeypatch.setattr(module, "ROW_BLOCK", 3)
    monkeypatch.setattr(module, "_WORK", threading.local())  # buffers sized for the block
    odd = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.abs(odd - plain).max() < 5e-6


def test_threads_share_a_batch_and_change_no_byte(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.embed import minilm as module

    texts = [
        f"note {i}: the {w} step " * (1 + i % 7) for i, w in enumerate(["build", "deploy"] * 60)
    ]
    alone = minilm.embed(texts)
    names: set[str] = set()
    forward = module.forward

    def recording(weights: Any, ids: Any) -> Any:
        names.add(threading.current_thread().name)
        return forward(weights, ids)

    monkeypatch.setattr(module, "forward", recording)
    threaded = MiniLMEmbedder(threads=3).embed(texts)  # chunks of 32
    assert threaded.tobytes() == alone.tobytes()
    assert len(names) >= 2 and all(n.startswith("gitmem-embed") for n in names)
    names.clear()
    few = MiniLMEmbedder(threads=3).embed(texts[:20])  # fewer than a chunk: shared out
    assert few.tobytes() == alone[:20].tobytes() and len(names) >= 2
    names.clear()
    assert MiniLMEmbedder(threads=3).embed(texts[:1]).tobytes() == alone[:1].tobytes()
    assert names == {threading.current_thread().name}  # a query: no pool
    # the threads (and their scratch buffers) are kept from batch to batch
    assert module._POOL is not None
    kept = module._POOL[1]
    MiniLMEmbedder(threads=3).embed(texts[:10])
    assert module._POOL[1] is kept
    MiniLMEmbedder(threads=2).embed(texts[:10])
    assert module._POOL[0] == 2 and module._POOL[1] is not kept
    with pytest.raises(UsageError):
        MiniLMEmbedder(threads=0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=80), min_size=1, max_size=10), st.randoms())
def test_batch_composition_never_changes_a_vector(
    minilm: MiniLMEmbedder, texts: list[str], rng: Any
) -> None:
    batch = minilm.embed(texts)
    shuffled = list(range(len(texts)))
    rng.shuffle(shuffled)
    mixed = minilm.embed([texts[i] for i in shuffled] + ["a text of its own"])
    for k, i in enumerate(shuffled):
        assert mixed[k].tobytes() == batch[i].tobytes()
    assert minilm.embed(texts[:1])[0].tobytes() == batch[0].tobytes()
    norms = np.linalg.norm(batch, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


# -- the pinned files -----------------------------------------------------------------


def test_the_weight_file_is_what_the_conversion_tool_writes() -> None:
    """tools/make_minilm_int8.py's format: int8 embedding tables with float32
    scales per row and group of 64 columns, the layers' int8 matrices
    transposed with scales per group of 64 inputs and output, float32 vectors,
    no pooler, a source note."""
    path = DATA_DIR / WEIGHTS.relpath
    with open(path, "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    meta = header.pop("__metadata__")
    assert "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db" in meta["source"]
    assert meta["license"] == "Apache-2.0" and "group of 64" in meta["conversion"]
    assert not [name for name in header if name.startswith("pooler")]
    tables = matrices = 0
    for name, entry in header.items():
        if entry["dtype"] == "I8" and name.endswith(".weight"):  # an embedding table
            rows, cols = entry["shape"]
            assert header[name + ".scale"]["shape"] == [rows, cols // 64]
            tables += 1
        elif entry["dtype"] == "I8":  # a layer's matrix, (inputs, outputs)
            assert name.endswith(".weight_t") and name.startswith("encoder.layer.")
            inputs, outputs = entry["shape"]
            assert header[name + ".scale"]["shape"] == [inputs // 64, outputs]
            matrices += 1
        elif not name.endswith(".scale"):
            assert entry["dtype"] == "F32" and len(entry["shape"]) == 1
    assert (tables, matrices) == (3, 36)


def test_checksum_mismatch_and_missing_files_are_detected(tmp_path: Path) -> None:
    root = copy_files(tmp_path / "m")
    assert MiniLMEmbedder(root=root).embed(["works on pristine copies"]).shape == (1, DIM)
    with open(root / WEIGHTS.relpath, "r+b") as f:
        f.seek(5_000_000)
        byte = f.read(1)
        f.seek(5_000_000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(DependencyError) as caught:
        MiniLMEmbedder(root=root).embed(["x"])
    message = str(caught.value)
    assert str(root / WEIGHTS.relpath) in message and WEIGHTS.sha256 in message
    assert "pip install --force-reinstall git-edda" in (caught.value.hint or "")
    assert "edda.embed.provider" in (caught.value.hint or "")
    copy_files(root)
    (root / VOCAB.relpath).unlink()
    with pytest.raises(DependencyError, match=r"minilm_l6_v2_vocab\.txt is missing.*incomplete"):
        MiniLMEmbedder(root=root).load()


def test_a_stamp_skips_rehashing_until_a_file_changes(tmp_path: Path) -> None:
    root, stamps = copy_files(tmp_path / "m"), tmp_path / "state"
    assert verify_files(root) == 2  # no stamp dir: always hashes
    assert verify_files(root, stamps) == 2
    assert (stamps / STAMP_NAME).is_file()
    assert verify_files(root, stamps) == 0
    os.utime(root / VOCAB.relpath, ns=(OLD, OLD + 1))  # a new mtime: hashed again
    assert verify_files(root, stamps) == 1
    assert verify_files(root, stamps) == 0


def test_a_replaced_file_is_verified_and_loaded_again(tmp_path: Path) -> None:
    """The process keeps loaded files per directory, but only while they keep
    their size, mtime and inode."""
    root = copy_files(tmp_path / "m")
    first = MiniLMEmbedder(root=root).embed(["hello"])
    shutil.copyfile(DATA_DIR / "NOTICE", root / VOCAB.relpath)  # another inode's content
    with pytest.raises(DependencyError, match="does not match"):
        MiniLMEmbedder(root=root).embed(["hello"])
    copy_files(root)
    assert MiniLMEmbedder(root=root).embed(["hello"]).tobytes() == first.tobytes()


def test_loading_imports_nothing_heavy_and_is_quick_with_a_stamp(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from gitmem.embed import MiniLMEmbedder\n"
        "MiniLMEmbedder(stamp_dir=Path(sys.argv[1])).load()\n"
        "t = time.perf_counter()\n"
        "e = MiniLMEmbedder(stamp_dir=Path(sys.argv[1]))\n"
        "e.load()\n"
        "again = time.perf_counter() - t\n"
        "assert again < 0.01, again  # the process keeps what it loaded\n"
        "v = e.embed(['why does the build fail on CI?'])\n"
        "banned = {'tokenizers', 'torch', 'onnxruntime', 'safetensors', 'scipy'}\n"
        "assert not banned & set(sys.modules), banned & set(sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
