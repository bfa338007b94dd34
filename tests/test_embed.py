"""gitmem.embed: the offline static embedder, HTTP providers against a real local
server, provider selection from real git config, and the content-digest cache."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import git, init_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from realtext import repository_lines

from gitmem.embed import (
    EmbeddingCache,
    OllamaEmbedder,
    OpenAIEmbedder,
    StaticEmbedder,
    available_providers,
    digest,
    get_embedder,
)
from gitmem.embed.bpe import SPACE, BPETokenizer
from gitmem.embed.static import DATA_DIR, DIM, MODEL_ID, TOKENIZER, WEIGHTS, verify_files
from gitmem.errors import DependencyError, UsageError
from gitmem.storage.gitconfig import read_config
from gitmem.storage.locate import locate

ROOT = Path(__file__).resolve().parent.parent
OLD = 1_600_000_000_000_000_000  # an mtime well in the past (ns), so stamps may be written


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    embedder = StaticEmbedder()
    embedder.load()
    return embedder


def copy_files(root: Path) -> Path:
    """Copies of the two pinned data files under ``root``, with an old mtime."""
    source = DATA_DIR
    for pin in (WEIGHTS, TOKENIZER):
        target = root / pin.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / pin.relpath, target)
        os.utime(target, ns=(OLD, OLD))
    return root


def flip_byte(path: Path, offset: int, keep_stat: bool = False) -> None:
    """Flip one byte in place (same inode and size); optionally restore the mtime."""
    before = path.stat()
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))
    if keep_stat:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def cosine(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    return float(a @ b)


# -- static provider -----------------------------------------------------------


def test_static_vectors_are_unit_float32_of_dim_256(static: StaticEmbedder) -> None:
    vectors = static.embed(["the build fails on CI", "merge conflict in README", "x"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 256) == (3, static.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert static.model_id == "static:wordllama-l2-supercat-256@0.4.0.post1"
    assert static.embed([]).shape == (0, 256)


def test_static_paraphrases_are_closer_than_unrelated_text(static: StaticEmbedder) -> None:
    ci, pipeline, banana = static.embed(
        [
            "the build fails on CI",
            "continuous integration pipeline is broken",
            "banana bread recipe",
        ]
    )
    assert cosine(ci, pipeline) > cosine(ci, banana) + 0.1
    assert cosine(ci, pipeline) > cosine(pipeline, banana) + 0.1
    fix, patch, weather = static.embed(
        ["fix the null pointer crash in the parser", "patch parser crash on null", "sunny weather"]
    )
    assert cosine(fix, patch) > cosine(fix, weather)


def test_static_is_deterministic_and_batch_equals_single(static: StaticEmbedder) -> None:
    texts = [f"commit {i}: refactor the {w} module" for i, w in enumerate(["db", "ui", "api"] * 40)]
    texts += ["", "word " * 20_000, "短い", "word " * 20_000]  # long texts take the sliced path
    batch = static.embed(texts)
    again = StaticEmbedder().embed(texts)
    assert batch.tobytes() == again.tobytes()
    singles = np.stack([static.embed([t])[0] for t in texts])
    assert singles.tobytes() == batch.tobytes()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=60), min_size=1, max_size=12))
def test_static_batch_composition_never_changes_a_vector(
    static: StaticEmbedder, texts: list[str]
) -> None:
    batch = static.embed(texts)
    for i, text in enumerate(texts):
        assert static.embed([text])[0].tobytes() == batch[i].tobytes()
    norms = np.linalg.norm(batch, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_static_odd_texts_do_not_crash(static: StaticEmbedder) -> None:
    texts = [
        "",
        " ",
        "日本語のテキストを埋め込む",
        "🎉🚀",
        "Ünïcödé façade",
        "\x00\x01",
        "a\ud800b",
    ]
    vectors = static.embed(texts)
    assert vectors.shape == (len(texts), 256)
    assert not vectors[0].any()  # no tokens: a zero row, not NaN
    assert np.allclose(np.linalg.norm(vectors[1:], axis=1), 1.0, atol=1e-5)
    with pytest.raises(UsageError):
        static.embed("one string")


def test_builtin_providers_load_offline_without_network_or_third_party_loaders(
    tmp_path: Path,
) -> None:
    """The default (MiniLM) and the static provider embed in a process that
    cannot open a socket, with none of the libraries their files come from."""
    script = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import gitmem.embed\n"
        "lazy = {'numpy', 'gitmem.embed.bpe', 'gitmem.embed.wordpiece', 'gitmem.embed.minilm',\n"
        "        'urllib.request'} & set(sys.modules)\n"
        "assert not lazy, lazy\n"
        "from pathlib import Path\n"
        "from gitmem.embed import get_embedder\n"
        "e = get_embedder({}, stamp_dir=Path(sys.argv[1]))\n"
        "assert e.model_id.startswith('minilm:'), e.model_id\n"
        "assert e.embed(['offline please']).shape == (1, 384)\n"
        "s = get_embedder({'edda.embed.provider': ['static']}, stamp_dir=Path(sys.argv[1]))\n"
        "assert s.embed(['offline please']).shape == (1, 256)\n"
        "banned = {'wordllama', 'tokenizers', 'huggingface_hub', 'requests', 'pydantic',\n"
        "          'torch', 'safetensors', 'onnxruntime', 'transformers',\n"
        "          'sentence_transformers'} & set(sys.modules)\n"
        "assert not banned, banned\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""  # the library never prints


def test_checksum_mismatch_is_detected(tmp_path: Path) -> None:
    root = copy_files(tmp_path / "wl")
    StaticEmbedder(root=root).embed(["works on pristine copies"])
    flip_byte(root / WEIGHTS.relpath, 5_000_000)
    with pytest.raises(DependencyError) as caught:
        StaticEmbedder(root=root).embed(["x"])
    message = str(caught.value)
    assert str(root / WEIGHTS.relpath) in message
    assert WEIGHTS.sha256 in message
    assert "pip install --force-reinstall git-edda" in (caught.value.hint or "")
    import hashlib

    actual = hashlib.sha256((root / WEIGHTS.relpath).read_bytes()).hexdigest()
    assert actual in message


def test_tokenizer_tampering_and_missing_files_are_detected(tmp_path: Path) -> None:
    root = copy_files(tmp_path / "wl")
    with open(root / TOKENIZER.relpath, "ab") as f:
        f.write(b" ")
    with pytest.raises(DependencyError, match=r"l2_supercat_tokenizer_config\.json"):
        StaticEmbedder(root=root).load()
    (root / TOKENIZER.relpath).unlink()
    with pytest.raises(DependencyError, match="missing"):
        StaticEmbedder(root=root).load()


def test_missing_data_files_say_the_installation_is_incomplete(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    with pytest.raises(DependencyError) as caught:
        StaticEmbedder(root=root).load()
    assert WEIGHTS.relpath in str(caught.value) and "incomplete" in str(caught.value)
    hint = caught.value.hint or ""
    assert "pip install --force-reinstall git-edda" in hint and "edda.embed.provider" in hint


def test_the_data_files_ship_in_the_package_with_their_licence() -> None:
    from gitmem.embed import minilm

    assert verify_files(DATA_DIR) == 2
    assert minilm.verify_files(DATA_DIR) == 2
    names = (WEIGHTS, TOKENIZER, minilm.WEIGHTS, minilm.VOCAB)
    if (ROOT / ".git").exists():  # a fresh clone (and so an install from it) has them
        tracked = git(ROOT, "ls-files", "gitmem/embed/data").split()
        assert sorted(tracked) == sorted(
            f"gitmem/embed/data/{name}"
            for name in (*(pin.relpath for pin in names), "NOTICE", "LICENSE-Apache-2.0.txt")
        )
        # No line-ending conversion may touch the pinned bytes.
        for pin in names:
            attributes = git(ROOT, "check-attr", "text", f"gitmem/embed/data/{pin.relpath}")
            assert attributes.strip().endswith("text: unset"), attributes
    notice = (DATA_DIR / "NOTICE").read_text()
    assert "MIT License" in notice and "Copyright (c) 2024 Lee Miller" in notice
    for pin in names:
        assert pin.sha256 in notice and f"{pin.size:,}" in notice
    # The weights were converted: the NOTICE says so, and from what.
    assert (
        "CHANGED" in notice
        and "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db" in notice
    )
    licence = (DATA_DIR / "LICENSE-Apache-2.0.txt").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence


def test_stamp_skips_rehashing_until_the_file_changes(tmp_path: Path) -> None:
    root, stamps = copy_files(tmp_path / "wl"), tmp_path / "state"
    assert verify_files(root) == 2  # no stamp dir: always hashes
    assert verify_files(root) == 2
    assert verify_files(root, stamps) == 2  # first check with a stamp dir hashes...
    assert verify_files(root, stamps) == 0  # ...then trusts the stamp

    # Corrupt the weights keeping path, size, mtime and inode: only a stamp
    # (not a hash) can pass this, which proves the stamp avoided rehashing.
    flip_byte(root / WEIGHTS.relpath, 1_000, keep_stat=True)
    assert verify_files(root, stamps) == 0
    with pytest.raises(DependencyError):
        verify_files(root)
    # A changed mtime invalidates the stamp.
    os.utime(root / WEIGHTS.relpath, ns=(OLD, OLD + 1))
    with pytest.raises(DependencyError):
        verify_files(root, stamps)
    # Restored content with a fresh mtime: verified, but too recent to stamp
    # (it could still change within the same timestamp tick).
    flip_byte(root / WEIGHTS.relpath, 1_000)
    assert verify_files(root, stamps) == 1
    assert verify_files(root, stamps) == 1
    os.utime(root / WEIGHTS.relpath, ns=(OLD, OLD + 2))  # settled: hashed once, then stamped
    assert verify_files(root, stamps) == 1
    assert verify_files(root, stamps) == 0


def test_stamp_in_a_read_only_place_is_not_fatal(tmp_path: Path) -> None:
    root = copy_files(tmp_path / "wl")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert verify_files(root, blocker / "state") == 2
    vectors = StaticEmbedder(root=root, stamp_dir=blocker / "state").embed(["still works"])
    assert vectors.shape == (1, DIM)


# -- the tokenizer ---------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe() -> BPETokenizer:
    return BPETokenizer.from_file(DATA_DIR / TOKENIZER.relpath)


@pytest.fixture(scope="module")
def reference() -> Any:
    """The ``tokenizers`` wheel (a dev dependency) reading the same file."""
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(DATA_DIR / TOKENIZER.relpath))


def test_tokenizer_gives_the_known_ids(bpe: BPETokenizer) -> None:
    # Ids from the tokenizers wheel; the stored vectors depend on them.
    assert bpe.encode("the build fails on CI") == [278, 2048, 8465, 373, 25781]
    assert bpe.encode("  two  spaces") == [259, 1023, 29871, 8162]
    assert bpe.encode("snake_case_name()") == [269, 21040, 29918, 4878, 29918, 978, 580]
    # Characters outside the vocabulary fall back to their UTF-8 bytes (🎉 is 4).
    assert bpe.encode("Ünïcödé façade 🎉") == [
        *[7189, 29876, 30085, 29883, 9289, 29948, 2258, 30019, 1943, 29871],
        *[243, 162, 145, 140],
    ]
    assert bpe.encode("<s>x</s> <unk>") == [1, 921, 2, 259, 0]  # special tokens, literally
    assert bpe.encode("") == []
    with pytest.raises(UnicodeEncodeError):
        bpe.encode("a\ud800b")


def test_words_can_be_merged_one_by_one(bpe: BPETokenizer) -> None:
    """The premise of the per-word split: no token has a ▁ after another character."""
    vocab = json.loads((DATA_DIR / TOKENIZER.relpath).read_bytes())["model"]["vocab"]
    assert len(vocab) == 32_000
    assert [t for t in vocab if t.lstrip(SPACE).count(SPACE)] == []


def test_tokenizer_matches_the_reference_on_real_text(bpe: BPETokenizer, reference: Any) -> None:
    texts = repository_lines()
    assert len(texts) > 10_000
    text = "\n".join(texts[:3000])
    texts += [text, "x" * 20_000, "ab" * 9_000 + " end", "\t\t  indented\r\n", "<s><s></s"]
    for text in texts:
        assert bpe.encode(text) == reference.encode(text, add_special_tokens=False).ids, text


ALPHABET = st.sampled_from(
    [
        " ",
        " ",
        "a",
        "e",
        "t",
        "h",
        "s",
        "in",
        "ing",
        "the",
        "▁",
        "<s>",
        "</s>",
        "<unk>",
        "<",
        "/",
        ">",
        "\n",
        "\t",
        "é",
        "日",
        "本",
        "🎉",
        "\x00",
        "Ü",
        "_",
        "()",
        "2",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join) | st.text(max_size=40))
def test_tokenizer_matches_the_reference_on_any_text(
    bpe: BPETokenizer, reference: Any, text: str
) -> None:
    try:
        ours: list[int] | None = bpe.encode(text)
    except UnicodeEncodeError:
        ours = None  # a lone surrogate: the reference refuses it too
    try:
        theirs: list[int] | None = reference.encode(text, add_special_tokens=False).ids
    except TypeError:
        theirs = None
    assert ours == theirs


def test_tokenizer_refuses_a_file_of_another_shape(tmp_path: Path) -> None:
    config = json.loads((DATA_DIR / TOKENIZER.relpath).read_bytes())
    changes: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
        ("pre_tokenizer", lambda c: c.update(pre_tokenizer={"type": "Whitespace"})),
        ("normalizer", lambda c: c["normalizer"]["normalizers"].pop()),
        ("byte_fallback", lambda c: c["model"].update(byte_fallback=False)),
        ("byte fallback tokens", lambda c: c["model"]["vocab"].pop("<0x41>")),
        ("lstrip", lambda c: c["added_tokens"][1].update(lstrip=True)),
    ]
    for what, change in changes:
        copy = json.loads(json.dumps(config))
        change(copy)
        path = tmp_path / "tokenizer.json"
        path.write_text(json.dumps(copy))
        with pytest.raises(ValueError, match=what):
            BPETokenizer.from_file(path)


# -- HTTP providers against a real local server ---------------------------------


def fake_vector(text: str) -> list[float]:
    return [float(len(text)), 1.0, float(sum(map(ord, text)) % 7)]


def unit(values: list[float]) -> NDArray[np.float32]:
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


Responder = Callable[[str, dict[str, Any], dict[str, str]], tuple[int, Any]]


class FakeServer:
    """A real HTTP server on 127.0.0.1 speaking Ollama's and OpenAI's embedding APIs."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.respond: Responder = self.correct
        self.delay = 0.0
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                state.requests.append((self.path, body, headers))
                time.sleep(state.delay)
                status, payload = state.respond(self.path, body, headers)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    if status in (301, 302, 307, 308):
                        self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # shutdown() waits for the serving loop's next poll: 0.5 s by default.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @staticmethod
    def correct(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        texts = body["input"]
        if path == "/api/embed":
            return 200, {"model": body["model"], "embeddings": [fake_vector(t) for t in texts]}
        if path == "/v1/embeddings":
            data = [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]
            return 200, {"object": "list", "data": data[::-1]}  # out of order on purpose
        return 404, {"error": f"no route {path}"}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


def test_ollama_embeds_in_batches_and_normalises(server: FakeServer) -> None:
    embedder = OllamaEmbedder(model="nomic-embed-text", url=server.url + "/", batch=2)
    assert embedder.model_id == f"ollama:nomic-embed-text@{server.url}"
    texts = ["alpha", "", "beta gamma", "delta", "epsilon zeta eta"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (5, 3)
    assert embedder.dim == 3
    for text, row in zip(texts, vectors, strict=True):
        if text:
            assert np.allclose(row, unit(fake_vector(text)), atol=1e-6)
        else:
            assert not row.any()  # empty texts are not sent, and stay zero
    sent = [body["input"] for _, body, _ in server.requests]
    assert sent == [["alpha", "beta gamma"], ["delta", "epsilon zeta eta"]]
    assert all(path == "/api/embed" for path, _, _ in server.requests)
    assert all(body["model"] == "nomic-embed-text" for _, body, _ in server.requests)


def test_http_dim_is_discovered_lazily_with_a_probe(server: FakeServer) -> None:
    embedder = OllamaEmbedder(url=server.url)
    assert server.requests == []  # constructing contacts nobody
    assert embedder.dim == 3
    assert len(server.requests) == 1
    assert embedder.dim == 3 and len(server.requests) == 1
    configured = OllamaEmbedder(url=server.url, dim=3)
    assert configured.dim == 3 and len(server.requests) == 1
    wrong = OllamaEmbedder(url=server.url, dim=768)
    with pytest.raises(DependencyError, match=r"edda\.embed\.dim says 768"):
        wrong.embed(["x"])


def test_openai_sorts_by_index_and_sends_the_key(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "sk-secret-0123456789")
    embedder = OpenAIEmbedder(model="te-3", url=server.url + "/v1", api_key_env="MY_EMBED_KEY")
    texts = ["one", "two two", "three three three"]
    vectors = embedder.embed(texts)
    for text, row in zip(texts, vectors, strict=True):
        assert np.allclose(row, unit(fake_vector(text)), atol=1e-6)
    path, body, headers = server.requests[0]
    assert path == "/v1/embeddings"
    assert body == {"model": "te-3", "input": texts}
    assert headers["authorization"] == "Bearer sk-secret-0123456789"
    assert "sk-secret" not in embedder.model_id and "sk-secret" not in repr(embedder)
    monkeypatch.delenv("MY_EMBED_KEY")
    embedder.embed(["no key"])
    assert "authorization" not in server.requests[-1][2]


def test_http_errors_are_clear_and_never_leak_the_key(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-leak-check-987654321"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def echo_500(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 500, {"error": "internal failure", "echo": headers.get("authorization")}

    def echo_401(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 401, f"bad key {headers.get('authorization')}".encode()

    def not_json(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 200, b"<html>" + key.encode() + b" not json</html>"

    def one_short(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        data = [{"index": i, "embedding": [1.0, 2.0]} for i in range(len(body["input"]) - 1)]
        return 200, {"data": data}

    def ragged(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        data = [{"index": i, "embedding": [1.0] * (2 + i)} for i in range(len(body["input"]))]
        return 200, {"data": data}

    def wrong_shape(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 200, {"embeddings": [[1.0, 2.0]]}  # Ollama's shape on the OpenAI route

    def redirect(path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        return 302, b""

    cases: list[tuple[Responder, str, str]] = [
        (echo_500, "HTTP 500", "logs"),
        (echo_401, "HTTP 401", "OPENAI_API_KEY"),
        (not_json, "not JSON", "edda.embed.url"),
        (one_short, "returned 2 vectors for 3 texts", "batch"),
        (ragged, "inconsistent lengths", "embedding model"),
        (wrong_shape, "unexpected response", "edda.embed.url"),
        (redirect, "HTTP 302", "final address"),
    ]
    for responder, message, hint in cases:
        server.respond = responder
        embedder = OpenAIEmbedder(url=server.url + "/v1")
        with pytest.raises(DependencyError) as caught:
            embedder.embed(["a", "b", "c"])
        text = f"{caught.value} {caught.value.hint} {caught.value!r}"
        assert message in str(caught.value), text
        assert hint in (caught.value.hint or ""), text
        assert key not in text and "sk-leak" not in text, text
        assert server.requests[-1][2]["authorization"] == f"Bearer {key}"
    assert "[redacted]" in str(_raise(OpenAIEmbedder(url=server.url + "/v1"), server, echo_500))


def _raise(embedder: OpenAIEmbedder, server: FakeServer, responder: Responder) -> DependencyError:
    server.respond = responder
    try:
        embedder.embed(["x"])
    except DependencyError as exc:
        return exc
    raise AssertionError("no error")


def test_http_ollama_model_missing_hint(server: FakeServer) -> None:
    server.respond = lambda path, body, headers: (404, {"error": "model not found"})
    with pytest.raises(DependencyError) as caught:
        OllamaEmbedder(model="nope", url=server.url).embed(["x"])
    assert "HTTP 404" in str(caught.value) and "model not found" in str(caught.value)
    assert "ollama pull nope" in (caught.value.hint or "")


def test_http_connection_refused_on_a_closed_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = OllamaEmbedder(url=f"http://127.0.0.1:{port}", timeout=5)
    with pytest.raises(DependencyError) as caught:
        embedder.embed(["x"])
    assert "connection refused" in str(caught.value)
    assert "ollama serve" in (caught.value.hint or "")


def test_http_timeout(server: FakeServer) -> None:
    server.delay = 1.0
    with pytest.raises(DependencyError) as caught:
        OllamaEmbedder(url=server.url, timeout=0.2).embed(["slow"])
    assert "did not answer within 0.2 s" in str(caught.value)
    assert "edda.embed.timeout" in (caught.value.hint or "")


# -- provider selection from real git config -----------------------------------


def config_of(repo: Path) -> dict[str, list[str]]:
    return read_config(locate(repo))


def test_registry_picks_providers_from_git_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.embed import MiniLMEmbedder
    from gitmem.embed.minilm import MODEL_ID as MINILM_ID

    repo = init_repo(tmp_path / "repo")
    default = get_embedder(config_of(repo), stamp_dir=tmp_path / "state")
    assert isinstance(default, MiniLMEmbedder) and default.model_id == MINILM_ID
    # Code search keeps the static vectors unless a provider is chosen.
    code = get_embedder(config_of(repo), purpose="code")
    assert isinstance(code, StaticEmbedder) and code.model_id == MODEL_ID
    git(repo, "config", "edda.embed.provider", "static")
    assert isinstance(get_embedder(config_of(repo)), StaticEmbedder)
    git(repo, "config", "edda.embed.provider", "minilm")
    assert isinstance(get_embedder(config_of(repo), purpose="code"), MiniLMEmbedder)

    git(repo, "config", "edda.embed.provider", "ollama")
    git(repo, "config", "edda.embed.model", "mxbai-embed-large")
    git(repo, "config", "edda.embed.url", "http://127.0.0.1:9999")
    git(repo, "config", "edda.embed.batch", "16")
    git(repo, "config", "edda.embed.timeout", "2.5")
    ollama = get_embedder(config_of(repo))
    assert isinstance(ollama, OllamaEmbedder)
    assert ollama.model_id == "ollama:mxbai-embed-large@http://127.0.0.1:9999"
    assert (ollama.batch, ollama.timeout) == (16, 2.5)

    git(repo, "config", "edda.embed.provider", "OpenAI")
    git(repo, "config", "--unset", "edda.embed.url")
    git(repo, "config", "edda.embed.apiKeyEnv", "TEAM_KEY")
    git(repo, "config", "edda.embed.dim", "1536")
    openai = get_embedder(config_of(repo))
    assert isinstance(openai, OpenAIEmbedder)
    assert openai.model_id == "openai:mxbai-embed-large@https://api.openai.com/v1"
    assert openai.api_key_env == "TEAM_KEY" and openai.dim == 1536

    git(repo, "config", "edda.embed.provider", "none")
    assert get_embedder(config_of(repo)) is None
    monkeypatch.setenv("GITMEM_EMBED_PROVIDER", "ollama")
    assert isinstance(get_embedder(config_of(repo)), OllamaEmbedder)  # env wins
    monkeypatch.setenv("GITMEM_EMBED_PROVIDER", "none")
    git(repo, "config", "edda.embed.provider", "ollama")
    assert get_embedder(config_of(repo)) is None


def test_minilm_embeds_on_one_thread_per_cpu_where_blas_runs_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.embed import MiniLMEmbedder
    from gitmem.embed.registry import DEFAULT_THREADS
    from gitmem.sidecar.cpus import usable_cpus

    repo = init_repo(tmp_path / "repo")

    def threads() -> int:
        embedder = get_embedder(config_of(repo))
        assert isinstance(embedder, MiniLMEmbedder)
        return embedder.threads

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # as gitmem's commands run
    assert threads() == min(usable_cpus(), DEFAULT_THREADS)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")  # BLAS spreads the products itself
    assert threads() == 1
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    assert threads() == 1
    git(repo, "config", "edda.embed.threads", "3")
    assert threads() == 3
    git(repo, "config", "edda.embed.threads", "64")
    assert threads() == 64
    for bad in ("0", "-2", "many", "1k", "65", "1.5"):
        git(repo, "config", "edda.embed.threads", bad)
        with pytest.raises(UsageError, match=r"edda\.embed\.threads"):
            get_embedder(config_of(repo))


def test_a_cgroup_quota_caps_the_usable_cpus(tmp_path: Path) -> None:
    from gitmem.sidecar.cpus import cgroup_quota

    limit = tmp_path / "cpu.max"
    for text, expected in [
        ("max 100000\n", None),
        ("150000 100000\n", 2),
        ("50000 100000\n", 1),
        ("200000 100000\n", 2),
        ("garbage\n", None),
        ("100 0\n", None),
    ]:
        limit.write_text(text)
        assert cgroup_quota(limit) == expected, text
    assert cgroup_quota(tmp_path / "absent") is None


def test_registry_rejects_bad_settings(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", "word2vec")
    with pytest.raises(UsageError) as caught:
        get_embedder(config_of(repo))
    for name in ("minilm", "static", "ollama", "openai", "none"):
        assert name in str(caught.value)
    git(repo, "config", "edda.embed.model", "nomic-embed-text")
    for name in ("static", "minilm"):
        git(repo, "config", "edda.embed.provider", name)
        with pytest.raises(UsageError, match="one model"):
            get_embedder(config_of(repo))
    git(repo, "config", "edda.embed.model", "all-MiniLM-L6-v2")  # its own name is fine
    assert get_embedder(config_of(repo)) is not None
    git(repo, "config", "edda.embed.provider", "ollama")
    for key, value in [
        ("edda.embed.batch", "lots"),
        ("edda.embed.timeout", "-1"),
        ("edda.embed.url", "ftp://x"),
    ]:
        git(repo, "config", key, value)
        with pytest.raises(UsageError):
            get_embedder(config_of(repo))
        git(repo, "config", "--unset", key)


PLUGIN_MODULE = """
import numpy as np

class Constant:
    model_id = "constant:v1"
    dim = 2

    def embed(self, texts):
        return np.tile(np.asarray([0.6, 0.8], dtype=np.float32), (len(texts), 1))

def factory(config, stamp_dir):
    assert config.get("edda.embed.provider") == ["constant"]
    return Constant()

def broken(config, stamp_dir):
    raise RuntimeError("plugin exploded")

def not_an_embedder(config, stamp_dir):
    return object()
"""


def test_registry_loads_entry_point_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "gitmem_test_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gitmem-test-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[gitmem.embedders]\n"
        "constant = gitmem_test_plugin:factory\n"
        "broken = gitmem_test_plugin:broken\n"
        "bogus = gitmem_test_plugin:not_an_embedder\n"
    )
    (site / "gitmem_test_plugin.py").write_text(PLUGIN_MODULE)
    monkeypatch.syspath_prepend(str(site))

    assert {"constant", "broken", "bogus"} <= set(available_providers())
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", "constant")
    embedder = get_embedder(config_of(repo))
    assert embedder is not None and embedder.model_id == "constant:v1"
    assert embedder.embed(["a", "b"]).shape == (2, 2)
    for name, message in [("broken", "plugin exploded"), ("bogus", "not an Embedder")]:
        git(repo, "config", "edda.embed.provider", name)
        with pytest.raises(DependencyError, match=message):
            get_embedder(config_of(repo))


def test_import_is_cheap() -> None:
    script = (
        "import sys, gitmem.embed\n"
        "heavy = {'numpy', 'gitmem.embed.static', 'gitmem.embed.bpe', 'urllib.request',\n"
        "         'gitmem.embed.http', 'gitmem.embed.minilm', 'gitmem.embed.wordpiece'}\n"
        "heavy &= set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# -- the content-digest cache --------------------------------------------------


class CountingEmbedder:
    """A real (tiny) embedder that records which texts it was asked for."""

    def __init__(self, model_id: str = "count:v1", dim: int = 4) -> None:
        self.model_id = model_id
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, 0] = 1.0 + len(text)
            out[i, 1 + sum(map(ord, text)) % (self.dim - 1)] += 2.0
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


vectors_8 = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=8, max_size=8).map(
    lambda v: np.asarray(v, dtype=np.float32)
)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(max_size=20), vectors_8, max_size=25))
def test_cache_round_trips_at_float16_precision(items: dict[str, NDArray[np.float32]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp, "m:1", 8)
        pairs = [(digest(t), v) for t, v in items.items()]
        half = len(pairs) // 2
        assert cache.put_many(pairs[:half]) == half
        assert cache.put_many(pairs) == len(pairs) - half  # present ones are skipped
        for reopened in (cache, EmbeddingCache(tmp, "m:1", 8)):
            got = reopened.get_many([d for d, _ in pairs] + [digest("\x00absent")])
            assert len(reopened) == len(pairs) == len(got)
            for d, v in pairs:
                assert got[d].dtype == np.float32
                assert np.array_equal(got[d], v.astype(np.float16).astype(np.float32))


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 12),
    cut_digests=st.integers(0, 40),
    cut_vectors=st.integers(0, 40),
)
def test_cache_survives_truncated_tails(count: int, cut_digests: int, cut_vectors: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp, "m:1", 8)
        rng = np.random.default_rng(count)
        pairs = [(digest(f"t{i}"), rng.uniform(-1, 1, 8).astype(np.float32)) for i in range(count)]
        cache.put_many(pairs)
        d_path = cache.directory / "digests.1.bin"
        v_path = cache.directory / "vectors.1.f16"
        os.truncate(d_path, max(0, d_path.stat().st_size - cut_digests))
        os.truncate(v_path, max(0, v_path.stat().st_size - cut_vectors))
        complete = min(d_path.stat().st_size // 32, v_path.stat().st_size // 16)

        reopened = EmbeddingCache(tmp, "m:1", 8)
        assert len(reopened) == complete
        got = reopened.get_many([d for d, _ in pairs])
        assert set(got) == {d for d, _ in pairs[:complete]}
        # Appending after a torn tail keeps records aligned.
        extra = (digest("extra"), np.full(8, 0.5, dtype=np.float32))
        assert reopened.put_many([*pairs, extra]) == count - complete + 1
        final = EmbeddingCache(tmp, "m:1", 8)
        assert len(final) == count + 1
        got = final.get_many([d for d, _ in [*pairs, extra]])
        for d, v in [*pairs, extra]:
            assert np.array_equal(got[d], v.astype(np.float16).astype(np.float32))


def test_embed_cached_embeds_each_distinct_missing_text_once(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path, embedder.model_id, embedder.dim)
    texts = ["a", "b", "a", "c", "b", "a"]
    first = cache.embed_cached(embedder, texts)
    assert embedder.calls == [["a", "b", "c"]]
    assert first.dtype == np.float32 and first.shape == (6, 4)
    direct = embedder.embed(texts)
    embedder.calls.clear()
    assert np.allclose(first, direct, atol=2e-3)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)

    again = EmbeddingCache(tmp_path, embedder.model_id, embedder.dim).embed_cached(embedder, texts)
    assert embedder.calls == []
    assert again.tobytes() == first.tobytes()  # cold and warm give the same bytes

    mixed = cache.embed_cached(embedder, ["c", "d", "d", "a", "e"])
    assert embedder.calls == [["d", "e"]]
    assert mixed[0].tobytes() == first[3].tobytes() and mixed[3].tobytes() == first[0].tobytes()
    assert cache.embed_cached(embedder, []).shape == (0, 4)
    assert len(cache) == 5

    with pytest.raises(UsageError, match="does not match"):
        cache.embed_cached(CountingEmbedder(model_id="other:v1"), ["a"])


def test_embed_cached_with_the_static_embedder(tmp_path: Path, static: StaticEmbedder) -> None:
    cache = EmbeddingCache(tmp_path, static.model_id, static.dim)
    texts = ["the build fails on CI", "", "continuous integration pipeline is broken"]
    vectors = cache.embed_cached(static, texts)
    assert np.allclose(vectors, static.embed(texts), atol=2e-3)
    assert not vectors[1].any()


def test_remove_really_removes_the_bytes(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "m:1", 8)
    secret = np.asarray([0.1234, -0.5678, 0.9, -0.25, 0.0625, 0.75, -0.875, 0.3], np.float32)
    others = [(digest(f"keep {i}"), np.full(8, i / 10, dtype=np.float32)) for i in range(5)]
    key = digest("my password is hunter2")
    cache.put_many([others[0], (key, secret), *others[1:]])
    secret_bytes = secret.astype("<f2").tobytes()

    def stored() -> bytes:
        return b"".join(p.read_bytes() for p in sorted(cache.directory.iterdir()) if p.is_file())

    assert secret_bytes in stored() and key in stored()
    cache.get_many([key])  # leaves a mapping open, as real use would
    assert cache.remove([key, digest("never stored")]) == 1
    assert secret_bytes not in stored() and key not in stored()
    assert key not in cache and len(cache) == 5
    assert cache.remove([key]) == 0

    reopened = EmbeddingCache(tmp_path, "m:1", 8)
    assert len(reopened) == 5 and reopened.get_many([key]) == {}
    got = reopened.get_many([d for d, _ in others])
    for d, v in others:
        assert np.array_equal(got[d], v.astype(np.float16).astype(np.float32))
    reopened.put_many([(digest("after"), np.ones(8, np.float32))])
    assert len(EmbeddingCache(tmp_path, "m:1", 8)) == 6


def test_foreign_or_damaged_meta_starts_fresh(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "m:1", 8)
    cache.put_many([(digest("x"), np.ones(8, np.float32))])
    assert len(EmbeddingCache(tmp_path, "m:1", 16)) == 0  # another dimension: not trusted
    assert len(EmbeddingCache(tmp_path, "m:1", 8)) == 0  # and the old records are gone
    cache = EmbeddingCache(tmp_path, "m:1", 8)
    cache.put_many([(digest("y"), np.ones(8, np.float32))])
    (cache.directory / "meta.json").write_text("{not json")
    assert len(EmbeddingCache(tmp_path, "m:1", 8)) == 0
    other = EmbeddingCache(tmp_path, "m:2", 8)  # another model lives in its own directory
    assert other.directory != cache.directory and len(other) == 0


def test_cache_rejects_bad_input(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "m:1", 8)
    with pytest.raises(UsageError):
        cache.put_many([(b"short", np.ones(8, np.float32))])
    with pytest.raises(UsageError):
        cache.put_many([(digest("x"), np.ones(7, np.float32))])
    with pytest.raises(UsageError):
        EmbeddingCache(tmp_path, "m:1", 0)
    assert digest("é") == digest("é") and len(digest("a\ud800")) == 32
