"""Building the code graph (issue 13): which files, facts cached by blob,
the Parquet sidecar, freshness, the hooks and the CLI.

Real repositories throughout. The assertions hold whatever the extractors
find in a file: they are about files, blobs, reasons and bytes, not symbols.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, cli, cli_process, git

from gitmem.errors import NotFoundError, UsageError
from gitmem.graph.build import BuildReport, build, graph_root
from gitmem.graph.cache import FactsCache, cache_key
from gitmem.graph.extraction import load
from gitmem.graph.freshness import head_commit
from gitmem.graph.manifest import read_manifest, table_files, write_manifest
from gitmem.graph.paths import cache_path
from gitmem.graph.scan import Glob, Settings, content_skip, default_path_skip
from gitmem.graph.schema import edges_schema, files_schema, node_id, nodes_schema
from gitmem.graph.shards import shard_of
from gitmem.graph.view import GraphView
from gitmem.sidecar.integrity import read_stamps
from gitmem.sidecar.lock import builder_lock
from gitmem.storage.locate import RepoLocation, locate

FOREGROUND = {"GITMEM_HOOKS_FOREGROUND": "1"}

SOURCES: dict[str, str | bytes] = {
    "README.md": "# Project\n\nSee `main` in app.py.\n\n## Usage\n\nRun it.\n",
    "app.py": "import util\n\n\ndef main():\n    return util.helper(1)\n",
    "util.py": "def helper(x):\n    return x + 1\n",
    "notes.txt": "plain text\n",
    "src/lib.js": "export function add(a, b) {\n  return a + b;\n}\n",
}


# helpers -------------------------------------------------------------------------------------
def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def commit_all(repo: Path, message: str = "code") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def code_repo(path: Path, files: dict[str, str | bytes] | None = None, *args: str) -> Path:
    """A repository whose first commit holds ``files`` (default SOURCES)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", *args)
    write(path, SOURCES if files is None else files)
    commit_all(path)
    return path


def where(repo: Path) -> RepoLocation:
    return locate(repo, any_format=True)


def run(repo: Path, **options: object) -> BuildReport:
    return build(where(repo), **options)  # type: ignore[arg-type]


def generation(repo: Path) -> Path:
    root = graph_root(where(repo))
    manifest = json.loads((root / "manifest.json").read_text())
    return root / manifest["generation"]


def table_bytes(repo: Path) -> dict[str, bytes]:
    """Every table file of the current generation (``files.parquet``, each shard)."""
    directory = generation(repo)
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None
    return {name: (directory / name).read_bytes() for name in table_files(manifest.shards)}


def indexed(repo: Path) -> dict[str, dict[str, object]]:
    """files.parquet by path, read with pyarrow alone."""
    rows = pq.read_table(generation(repo) / "files.parquet").to_pylist()
    return {str(r["path"]): r for r in rows}


def hgit(repo: Path, *args: str) -> None:
    """git with gitmem's hooks doing their work before git returns."""
    env = {**os.environ, **FOREGROUND}
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def hooks_log(repo: Path) -> str:
    path = Path(where(repo).common_path) / "edda" / "log" / "hooks.log"
    return path.read_text() if path.exists() else ""


# the tables ----------------------------------------------------------------------------------
def test_the_tables_read_with_pyarrow_alone(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    report = run(repo)
    assert report.built and report.reason == "no graph yet"
    assert report.files == len(SOURCES) == report.parsed and report.reused == 0
    assert report.seen == report.files and report.skipped == {}
    directory = generation(repo)
    files = pq.read_table(directory / "files.parquet")
    nodes = pq.read_table(directory / "nodes")  # a directory of shards: one table
    edges = pq.read_table(directory / "edges")
    assert files.schema.equals(files_schema())
    assert nodes.schema.equals(nodes_schema())
    assert edges.schema.equals(edges_schema())
    rows = files.to_pylist()
    assert [r["path"] for r in rows] == sorted(SOURCES)
    for row in rows:
        blob = git(repo, "rev-parse", f"HEAD:{row['path']}").strip()
        assert row["blob"] == blob and row["source"] == "commit" and row["error"] == ""
        assert row["size"] == len(str(SOURCES[str(row["path"])]).encode())
    # every file is a node, under the stable id; rows sorted as the schema says
    ids = nodes.column("id").to_pylist()
    assert ids == sorted(ids)
    file_nodes = {r["path"]: r["id"] for r in nodes.to_pylist() if r["kind"] == "file"}
    assert file_nodes == {p: node_id(p, "", "file") for p in SOURCES}
    keys = [(e["src"], e["kind"], e["dst"], e["line"]) for e in edges.to_pylist()]
    assert keys == sorted(keys)
    assert report.nodes == nodes.num_rows and report.edges == edges.num_rows
    # the manifest, written last, names what was built and vouches for every file
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None
    assert manifest.commit == git(repo, "rev-parse", "HEAD").strip()
    assert manifest.mode == "head" and not manifest.worktree
    assert manifest.shards == 1  # a small repository: one shard a table
    assert set(manifest.files) == set(table_files(1))
    assert table_files(1) == ["files.parquet", "nodes/00.parquet", "edges/00.parquet"]
    assert manifest.counts == {"files": 5, "nodes": report.nodes, "edges": report.edges}


def test_the_same_files_give_the_same_bytes(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    first = table_bytes(repo)
    again = run(repo, rebuild=True)  # every file parsed again, every table written again
    assert again.built and again.parsed == len(SOURCES)
    assert table_bytes(repo) == first
    # another repository with the same files, committed at another time
    other = code_repo(tmp_path / "other")
    run(other)
    assert table_bytes(other) == first


def test_nothing_is_built_when_the_graph_is_current(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    first = run(repo)
    before = generation(repo)
    report = run(repo)
    assert not report.built and report.parsed == 0 and report.reused == report.files
    assert (report.files, report.nodes, report.edges) == (first.files, first.nodes, first.edges)
    assert generation(repo) == before
    # HEAD moves, the files stay: only the manifest changes
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    report = run(repo)
    assert not report.built and generation(repo) == before
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None and manifest.commit == git(repo, "rev-parse", "HEAD").strip()


# incremental by blob --------------------------------------------------------------------------
def test_a_branch_switch_parses_only_the_files_that_differ(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(12)
    }
    repo = code_repo(tmp_path / "repo", files)
    assert run(repo).parsed == 12
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"pkg/m1.py": "def f1():\n    return 'changed'\n", "pkg/m2.py": "X = 2\n"})
    write(repo, {"pkg/new.py": "def g():\n    pass\n"})
    (repo / "pkg/m3.py").unlink()
    commit_all(repo, "feature")
    report = run(repo)
    assert report.built and report.reason == "files changed"
    assert report.parsed == 3  # two changed, one added; the deleted one costs nothing
    assert report.files == 12 and report.reused == 9
    assert "pkg/m3.py" not in indexed(repo) and "pkg/new.py" in indexed(repo)
    git(repo, "checkout", "-q", "main")
    back = run(repo)
    assert back.built and back.parsed == 0 and back.reused == 12
    # a rename parses nothing either: the blob is known
    git(repo, "mv", "pkg/m4.py", "pkg/renamed.py")
    commit_all(repo, "rename")
    assert run(repo).parsed == 0


# incremental in a warm process: shards written or linked -----------------------------------------
def project(modules: int = 150) -> dict[str, str | bytes]:
    """Enough files for four shards (more than 128): packages whose modules
    import and call their neighbours, and a guide that names them."""
    files: dict[str, str | bytes] = {f"pkg{p}/__init__.py": "" for p in range(6)}
    for i in range(modules):
        j = (i + 1) % modules
        files[f"pkg{i % 6}/m{i}.py"] = (
            f"from pkg{j % 6} import m{j}\n\n\n"
            f"def f{i}(x):\n    return m{j}.f{j}(x) + {i}\n\n\n"
            f"class C{i}:\n    def run(self):\n        return f{i}(1)\n"
        )
    files["README.md"] = "# Guide\n\n## Start\n\nCall `f0` in pkg0/m0.py.\n"
    return files


def code_bytes(repo: Path) -> dict[str, bytes]:
    """The code index's chunk shards (its Tantivy files are named afresh by every build)."""
    directory = generation(repo) / "code" / "chunks"
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def cold_bytes(repo: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """What a build from scratch writes for the same files (the tables, the chunks)."""
    report = run(repo, rebuild=True)
    assert report.built and report.reason == "requested"
    return table_bytes(repo), code_bytes(repo)


def inodes(directory: Path) -> dict[str, int]:
    """Every file under ``directory`` (relative name -> inode)."""
    return {
        str(p.relative_to(directory)): p.stat().st_ino for p in directory.rglob("*") if p.is_file()
    }


def test_a_warm_build_writes_what_a_cold_build_writes(tmp_path: Path) -> None:
    """After one change, and after a branch switch changing 20 files (bodies,
    definitions, imports; one file gone, one new), the build in the process
    that built the graph before (resolving and writing only what changed)
    leaves the same bytes as a build from scratch."""
    repo = code_repo(tmp_path / "repo", project())
    run(repo)
    first = table_bytes(repo), code_bytes(repo)
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None and manifest.shards == 4
    # one file: a new function and a new call
    with open(repo / "pkg2/m8.py", "a") as handle:
        handle.write("\n\ndef added():\n    return f8(2)\n")
    commit_all(repo, "one")
    report = run(repo)
    assert report.built and report.parsed == 1
    warm = table_bytes(repo), code_bytes(repo)
    assert warm != first and warm == cold_bytes(repo)
    # a branch switch: 20 files
    git(repo, "checkout", "-q", "-b", "feature")
    changes: dict[str, str | bytes] = {}
    for i in range(10, 26):  # bodies and definitions
        changes[f"pkg{i % 6}/m{i}.py"] = (
            f"def f{i}(x):\n    return x * {i}\n\n\ndef g{i}():\n    return f{i}(3)\n"
        )
    changes["pkg1/m31.py"] = "import json\n\n\ndef f31(x):\n    return json.dumps(x)\n"  # imports
    changes["pkg2/new.py"] = "from pkg0 import m0\n\n\ndef h():\n    return m0.f0(1)\n"
    changes["README.md"] = "# Guide\n\n## Start\n\nCall `g12` and `h`.\n"
    write(repo, changes)
    (repo / "pkg3/m33.py").unlink()
    commit_all(repo, "feature")
    report = run(repo)
    assert report.built and report.parsed == 19  # 18 changed, 1 new, 1 gone
    feature = table_bytes(repo), code_bytes(repo)
    assert feature == cold_bytes(repo)
    # and back: the first bytes again
    git(repo, "checkout", "-q", "main")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert run(repo).parsed == 0
    assert (table_bytes(repo), code_bytes(repo)) == first


def test_a_long_lived_process_keeps_only_what_its_latest_builds_use(tmp_path: Path) -> None:
    """The daemon or the MCP server builds again after every change: the
    decoded cache entries and placed chunks it keeps stay those of the
    latest build of each worktree, not every version of every file, and a
    build after that still writes what a cold build writes."""
    from gitmem.graph import build as builder
    from gitmem.graph import cache as facts_cache

    repo = code_repo(tmp_path / "repo")
    other = code_repo(tmp_path / "other", {"lone.py": "def lone():\n    return 1\n"})
    run(other)
    run(repo)
    sizes = []
    for i in range(8):
        (repo / "util.py").write_text(f"def helper(x):\n    return x + {100 + i}\n")
        commit_all(repo, f"change {i}")
        assert run(repo).parsed == 1
        sizes.append((len(facts_cache._DECODED), len(builder._CHUNKS), len(builder._PLACED)))
    assert sizes[-1] == sizes[1]  # one version of util.py at a time, not eight
    lone = FactsCache(cache_path(where(other))).path(
        cache_key(git(other, "rev-parse", "HEAD:lone.py").strip(), "python")
    )
    assert lone in facts_cache._DECODED  # the other worktree's latest build is kept
    assert table_bytes(repo) == cold_bytes(repo)[0]


def test_a_first_build_freezes_what_the_process_keeps_and_the_next_unfreezes(
    tmp_path: Path,
) -> None:
    """The objects a process's first build makes (its resolver, facts and
    chunks, kept for the next builds) are frozen rather than walked by the
    collector right after; the next build unfreezes them, so what it drops
    of them can still be collected, and it freezes nothing itself."""
    import gc

    repo = code_repo(tmp_path / "repo")
    gc.unfreeze()
    try:
        run(repo)
        assert gc.get_freeze_count() > 0
        (repo / "util.py").write_text("def helper(x):\n    return x + 5\n")
        commit_all(repo, "change")
        assert run(repo).parsed == 1
        assert gc.get_freeze_count() == 0
        assert gc.isenabled()
        run(repo, rebuild=True)  # a rebuild makes the kept state anew
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_warm_process_after_another_process_built_links_nothing_stale(tmp_path: Path) -> None:
    """This process built the graph; another process built the next
    generation: this process's next build must not take that generation for
    the one it wrote (its resolver is still good, its tables are not what
    is on disk)."""
    files = project()
    repo = code_repo(tmp_path / "repo", files)
    run(repo)
    with open(repo / "pkg3/m9.py", "a") as handle:
        handle.write("\n\ndef elsewhere():\n    return f9(4)\n")
    commit_all(repo, "built by another process")
    code, _, err = cli_process(repo, "code", "index")
    assert code == 0, err
    other = generation(repo)
    # m9.py back as this process last saw it (its shards, as this process
    # wrote them, are not what the other process's generation holds), and a
    # change elsewhere
    write(repo, {"pkg3/m9.py": files["pkg3/m9.py"]})
    with open(repo / "pkg0/m6.py", "a") as handle:
        handle.write("\n\ndef here():\n    return f6(5)\n")
    commit_all(repo, "built here")
    assert run(repo).parsed == 1
    assert not other.exists()
    warm = table_bytes(repo), code_bytes(repo)
    assert warm == cold_bytes(repo)


def test_a_change_rewrites_its_own_shards_and_links_the_others(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo", project())
    run(repo)
    old = generation(repo)
    before = inodes(old)
    old_manifest = read_manifest(graph_root(where(repo)))
    assert old_manifest is not None
    # Links to every file of the previous generation: whatever the next
    # build does, it must not write into them (Tantivy and usearch write
    # new files and rename).
    keep = tmp_path / "keep"
    keep.mkdir()
    kept: dict[str, bytes] = {}
    for name in before:
        flat = name.replace("/", "__")
        os.link(old / name, keep / flat)
        kept[flat] = (keep / flat).read_bytes()
    changed = "pkg4/m10.py"
    (repo / changed).write_text(
        "from pkg5 import m11\nfrom pkg0 import m12\n\n\n"
        "def f10(x):\n    # now two calls\n    return m11.f11(x) + m12.f12(x)\n"
        "\n\nclass C10:\n    def run(self):\n        return f10(1)\n"
    )
    commit_all(repo, "one file")
    report = run(repo)
    assert report.built and report.parsed == 1
    new = generation(repo)
    assert new != old and not old.exists()
    after = inodes(new)
    mine = shard_of(changed, 4)
    for table in ("nodes", "edges", "code/chunks"):
        for s in range(4):
            name = f"{table}/{s:02d}.parquet"
            if s == mine:
                assert after[name] != before[name], name  # its rows changed: written
            else:
                assert after[name] == before[name], name  # linked
    assert after["files.parquet"] != before["files.parquet"]  # small: always written
    # the full-text index: the previous segments linked, a new one added
    old_text = {
        n for n in before if n.startswith("code/fulltext/") and not n.endswith((".json", ".lock"))
    }
    assert old_text and all(after.get(n) == before[n] for n in old_text)
    assert {n for n in after if n.startswith("code/fulltext/")} - set(before)
    for flat, data in kept.items():
        assert (keep / flat).read_bytes() == data, flat
    # a linked shard's checksum is carried over, and stamped: opening reads nothing again
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None
    for name in table_files(4):
        if name != "files.parquet" and not name.endswith(f"/{mine:02d}.parquet"):
            assert manifest.files[name] == old_manifest.files[name]
    stamps = read_stamps(new)
    for name in table_files(4):
        st = os.stat(new / name)
        assert stamps[name][:5] == [
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
        ]
    view = GraphView.open(repo, refresh=False)
    assert view.nodes.num_rows == report.nodes and view.edges.num_rows == report.edges
    assert "f10" in view.nodes.column("name").to_pylist()
    for table, got in (("nodes", view.nodes), ("edges", view.edges)):  # the shards in order
        one_by_one = [pq.read_table(new / f"{table}/{s:02d}.parquet") for s in range(4)]
        assert got.equals(pa.concat_tables(one_by_one))


def test_damage_in_one_shard_is_found_and_never_linked(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo", project())
    run(repo)
    changed = "pkg1/m7.py"
    damaged = next(s for s in range(4) if s != shard_of(changed, 4))
    target = generation(repo) / f"edges/{damaged:02d}.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(NotFoundError, match=f"edges/{damaged:02d}.parquet"):
        GraphView.open(repo, refresh=False)
    # The next build (this process wrote that shard's rows, which did not
    # change) writes it again rather than link the damaged file.
    with open(repo / changed, "a") as handle:
        handle.write("\n\ndef extra():\n    return f7(0)\n")
    commit_all(repo, "one")
    assert run(repo).built
    GraphView.open(repo, refresh=False)  # sound again
    warm = table_bytes(repo)
    assert warm == cold_bytes(repo)[0]


def test_shards_laid_out_by_another_rule_are_built_again(tmp_path: Path) -> None:
    """Another version of gitmem may shard otherwise: a graph whose shard
    count is not this version's for its files is rebuilt, not served."""
    repo = code_repo(tmp_path / "repo")
    run(repo)
    first = table_bytes(repo)
    root = graph_root(where(repo))
    manifest = read_manifest(root)
    assert manifest is not None and manifest.shards == 1
    manifest.shards = 2
    write_manifest(root, manifest)
    report = run(repo)
    assert report.built and report.reason == "shards laid out otherwise"
    assert table_bytes(repo) == first


def test_a_second_worktree_reuses_the_facts(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    main_generation = generation(repo)
    git(repo, "branch", "side")
    second = tmp_path / "second"
    git(repo, "worktree", "add", "-q", str(second), "side")
    report = run(second)
    assert report.built and report.parsed == 0 and report.reused == len(SOURCES)
    # each worktree has its own graph; the facts behind them are shared
    assert graph_root(where(second)) != graph_root(where(repo))
    assert graph_root(where(second)).parent == graph_root(where(repo)).parent
    assert generation(repo) == main_generation and main_generation.is_dir()
    assert table_bytes(second) == table_bytes(repo)
    # a removed worktree's graph goes with the next build
    git(repo, "worktree", "remove", str(second))
    write(repo, {"more.py": "Y = 1\n"})
    commit_all(repo, "more")
    run(repo)
    assert sorted(p.name for p in graph_root(where(repo)).parent.iterdir()) == ["cache", "main"]


def test_a_damaged_cache_entry_is_parsed_again(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    first = table_bytes(repo)
    cache = FactsCache(cache_path(where(repo)))
    _, language_for = load()
    blob = git(repo, "rev-parse", "HEAD:util.py").strip()
    entry = Path(cache.path(cache_key(blob, language_for("util.py"))))
    assert entry.is_file()
    entry.write_bytes(b"\xc1 not msgpack")
    report = run(repo, rebuild=True)
    assert report.parsed == len(SOURCES)
    assert cache.get(cache_key(blob, language_for("util.py"))) is not None
    assert table_bytes(repo) == first


def test_a_warm_process_parses_again_what_left_the_cache(tmp_path: Path) -> None:
    """This process decoded every entry, and keeps them; an entry removed
    from disk since (one file, or the whole cache) is parsed again, so that
    the cache holds it again."""
    repo = code_repo(tmp_path / "repo")
    run(repo)
    cache = FactsCache(cache_path(where(repo)))
    _, language_for = load()
    blob = git(repo, "rev-parse", "HEAD:util.py").strip()
    entry = Path(cache.path(cache_key(blob, language_for("util.py"))))
    entry.unlink()
    write(repo, {"app.py": "import util\n\n\ndef main():\n    return util.helper(2)\n"})
    commit_all(repo, "one")
    assert run(repo).parsed == 2  # app.py changed, util.py's entry went
    assert entry.is_file()
    shutil.rmtree(cache_path(where(repo)))
    write(repo, {"notes.txt": "more text\n"})
    commit_all(repo, "two")
    assert run(repo).parsed == len(SOURCES)


def test_a_cold_build_with_many_files_uses_worker_processes(tmp_path: Path) -> None:
    """Enough files for the process pool (the threshold is 64 files and
    256 KiB): the same tables as parsing them here."""
    body = "".join(f"def fn_{j}(a, b):\n    return a * {j} + b\n\n\n" for j in range(100))
    files: dict[str, str | bytes] = {f"mod/m{i:03}.py": body + f"N = {i}\n" for i in range(80)}
    repo = code_repo(tmp_path / "repo", files)
    report = run(repo)
    assert report.parsed == 80 and report.errors == 0
    pooled = table_bytes(repo)
    shutil.rmtree(cache_path(where(repo)))
    # one file at a time, in this process
    for name in list(files)[:40]:
        (repo / name).unlink()
    commit_all(repo, "half")
    assert run(repo).parsed == 40
    git(repo, "checkout", "-q", "HEAD~1")
    assert run(repo).parsed == 40  # the other half, in this process again
    assert table_bytes(repo) == pooled


def test_the_workers_cache_facts_and_chunks_for_the_next_process(tmp_path: Path) -> None:
    """The parse workers write each blob's facts and search chunks to the
    cache; another process then parses nothing and indexes the cached chunks
    (an entry changed by hand shows in its code index)."""
    from gitmem.graph.cache import CHUNKS_SUFFIX
    from gitmem.graph.chunks import decode_chunks, encode_chunks
    from gitmem.graph.codeindex import CHUNKS_DIR, CODE_DIR

    body = "".join(f"def fn_{j}(a, b):\n    return a * {j} + b\n\n\n" for j in range(100))
    files: dict[str, str | bytes] = {f"mod/m{i:03}.py": body + f"N = {i}\n" for i in range(80)}
    repo = code_repo(tmp_path / "repo", files)
    assert run(repo).parsed == 80
    cache = FactsCache(cache_path(where(repo)))
    _, language_for = load()
    keys = {
        name: cache_key(git(repo, "rev-parse", f"HEAD:{name}").strip(), language_for(name))
        for name in files
    }
    for key in keys.values():
        assert cache.get(key) is not None
        assert Path(cache.path(key + CHUNKS_SUFFIX)).is_file()
    first = pq.read_table(generation(repo) / CODE_DIR / CHUNKS_DIR).to_pylist()
    entry = Path(cache.path(keys["mod/m007.py"] + CHUNKS_SUFFIX))
    chunks = decode_chunks(entry.read_bytes())
    entry.write_bytes(encode_chunks([replace(chunks[0], body="def pelican(): pass")]))
    shutil.rmtree(graph_root(where(repo)))
    code, out, err = cli_process(repo, "code", "index", "--json")
    assert code == 0, err
    assert json.loads(out)["parsed"] == 0
    again = pq.read_table(generation(repo) / CODE_DIR / CHUNKS_DIR).to_pylist()
    changed = [r for r in again if r["path"] == "mod/m007.py"]
    assert [r["body"] for r in changed] == ["def pelican(): pass"]
    others = [r for r in first if r["path"] != "mod/m007.py"]
    assert [r for r in again if r["path"] != "mod/m007.py"] == others


def _generations(repo: Path) -> list[str]:
    return sorted(p.name for p in graph_root(where(repo)).iterdir() if p.name.startswith("g"))


@pytest.mark.parametrize(
    ("part", "error"),
    [
        # the code index, built on a thread while the builder resolves
        ("build_code_index", RuntimeError("the code index failed")),
        # its chunk shards, written on a thread while the full text indexes
        ("_write_chunks", OSError("no space left for the chunk shards")),
    ],
)
def test_a_part_built_on_a_thread_that_fails_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str, error: Exception
) -> None:
    """The code index and its chunk shards are built on threads of their
    own: a failure there still fails the build, and the graph stays as it was."""
    import gitmem.graph.codeindex as codeindex

    repo = code_repo(tmp_path / "repo")
    run(repo)
    before = table_bytes(repo), _generations(repo)
    write(repo, {"util.py": "def helper(x):\n    return x + 2\n"})
    commit_all(repo, "change")

    def failing(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(codeindex, part, failing)
    with pytest.raises(type(error), match=str(error)):
        run(repo)
    assert (table_bytes(repo), _generations(repo)) == before
    monkeypatch.undo()
    assert run(repo).built


def test_a_failure_while_resolving_waits_for_the_code_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving fails while the code index is being built: the build fails
    with the resolver's error once the code index is done, and nothing of
    the new generation is left behind (its thread wrote into it)."""
    import gitmem.graph.codeindex as codeindex
    from gitmem.graph.resolve import Resolver

    repo = code_repo(tmp_path / "repo")
    run(repo)
    before = table_bytes(repo), _generations(repo)
    write(repo, {"util.py": "def helper(x):\n    return x + 2\n"})
    commit_all(repo, "change")
    indexing, indexed = threading.Event(), threading.Event()
    real = codeindex.build_code_index

    def slow(*args: object, **kwargs: object) -> object:
        indexing.set()
        threading.Event().wait(0.3)  # still writing when the resolver fails
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            indexed.set()

    def failing(self: Resolver, *args: object, **kwargs: object) -> None:
        assert indexing.wait(5)
        raise RuntimeError("the resolver failed")

    monkeypatch.setattr(codeindex, "build_code_index", slow)
    monkeypatch.setattr(Resolver, "update", failing)
    monkeypatch.setattr(Resolver, "resolve", failing)
    with pytest.raises(RuntimeError, match="the resolver failed"):
        run(repo)
    assert indexed.is_set()  # the build waited for it
    assert (table_bytes(repo), _generations(repo)) == before


# which files ----------------------------------------------------------------------------------
def test_skipped_files_are_counted_by_reason(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        **SOURCES,
        "image.png": b"\x89PNG\r\n\x1a\n\0\0\0",
        "node_modules/dep/index.js": "module.exports = 1;\n",
        "vendor/lib.go": "package lib\n",
        "static/app.min.js": "var a=1;\n",
        "api_pb2.py": "X = 1\n",
        "package-lock.json": "{}\n",
        "gen.go": "// Code generated by stringer. DO NOT EDIT.\n\npackage main\n",
        "big.py": "x = 1\n" * 50,
        "build/out.py": "y = 2\n",
        "docs/guide.md": "# Guide\n",
    }
    repo = code_repo(tmp_path / "repo", files)
    os.symlink("util.py", repo / "link.py")
    fake = git(repo, "rev-parse", "HEAD").strip()  # a gitlink needs only a commit id
    git(repo, "add", "link.py")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{fake},sub")
    git(repo, "commit", "-q", "-m", "symlink and submodule")
    git(repo, "config", "edda.code.maxFileBytes", "200")
    git(repo, "config", "--add", "edda.code.exclude", "build/")
    git(repo, "config", "--add", "edda.code.exclude", "*.txt")
    report = run(repo)
    assert report.skipped == {
        "binary": 1,
        "excluded": 2,  # build/out.py, notes.txt
        "generated": 3,  # api_pb2.py, package-lock.json, gen.go (its marker)
        "oversized": 1,
        "submodule": 1,
        "symlink": 1,
        "vendored": 3,
    }
    assert sorted(indexed(repo)) == [
        "README.md",
        "app.py",
        "docs/guide.md",
        "src/lib.js",
        "util.py",
    ]
    assert report.seen == report.files + sum(report.skipped.values()) == len(files) + 2
    # include narrows to what it matches; the other rules still apply
    git(repo, "config", "--add", "edda.code.include", "*.py")
    git(repo, "config", "--add", "edda.code.include", "docs/")
    report = run(repo)
    assert report.built and report.reason == "edda.code settings changed"
    assert sorted(indexed(repo)) == ["app.py", "docs/guide.md", "util.py"]
    # path rules come first: what include leaves out is never read (image.png)
    assert report.skipped == {
        "excluded": 2,
        "generated": 1,  # api_pb2.py
        "not-included": 8,
        "oversized": 1,
        "submodule": 1,
        "symlink": 1,
    }


def test_a_path_that_is_not_utf8_is_skipped(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.py"), "wb") as handle:
        handle.write(b"X = 1\n")
    commit_all(repo, "latin-1 name")
    report = run(repo)
    assert report.skipped == {"non-utf8-path": 1} and report.files == len(SOURCES)
    write(repo, {"other.py": "Y = 2\n"})
    with open(os.path.join(os.fsencode(repo), b"new\xff.py"), "wb") as handle:
        handle.write(b"Z = 3\n")
    report = run(repo, worktree=True)
    assert report.skipped == {"non-utf8-path": 2} and "other.py" in indexed(repo)


def test_globs_read_like_gitignore() -> None:
    cases = {
        "*.py": (["a.py", "x/y/b.py"], ["a.pyc", "py/a.txt"]),
        "tests": (["tests/a.py", "x/tests/b.py", "tests"], ["tests.py", "x/mytests/a"]),
        "docs/": (["docs/a.md", "docs/x/b.md", "x/docs/a.md"], ["docs.md", "mydocs/a"]),
        "/docs": (["docs/a.md"], ["x/docs/a.md"]),
        "src/**/*.go": (["src/a.go", "src/x/y/b.go"], ["lib/src/a.go", "src/a.py"]),
        "src/*.go": (["src/a.go"], ["src/x/a.go"]),
        "a?c.txt": (["abc.txt", "d/axc.txt"], ["ac.txt", "a/c.txt"]),
        "[!a]*.md": (["b.md"], ["a.md"]),
        "**/gen/**": (["gen/a", "x/gen/b/c"], ["generated/a"]),
    }
    for pattern, (yes, no) in cases.items():
        glob = Glob(pattern)
        assert all(glob.matches(p) for p in yes), (pattern, [p for p in yes if not glob.matches(p)])
        assert not any(glob.matches(p) for p in no), (pattern, [p for p in no if glob.matches(p)])


def test_content_and_name_rules() -> None:
    assert content_skip(b"abc\0def") == "binary"
    assert content_skip(b"x" * 8000 + b"\0") == ""  # beyond git's 8,000-byte probe
    assert content_skip(b"# Code generated by protoc. DO NOT EDIT.\n") == "generated"
    assert content_skip(b"/* @generated */\n") == "generated"
    assert content_skip(b"a\nb\nc\nd\ne\n# generated by hand?\n") == ""  # past the first lines
    assert content_skip(b"def generate():\n    pass\n") == ""
    assert default_path_skip("web/node_modules/x/y.js") == "vendored"
    assert default_path_skip("a/b.min.js") == "vendored"
    assert default_path_skip("proto/x_pb2.py") == "generated"
    assert default_path_skip("Cargo.lock") == "generated"
    assert default_path_skip("src/vendor.py") == ""
    assert Settings(max_bytes=10).path_skip("a.py", 11) == "oversized"


def test_the_worktree_build_takes_uncommitted_changes(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    write(repo, {".gitignore": "*.log\nscratch/\n"})
    commit_all(repo, "ignore")
    run(repo)
    write(repo, {"util.py": "def helper(x):\n    return x + 2\n", "fresh.py": "Z = 3\n"})
    write(repo, {"debug.log": "noise\n", "scratch/tmp.py": "W = 4\n"})
    (repo / "notes.txt").unlink()
    git(repo, "add", "fresh.py")  # staged; util.py unstaged
    write(repo, {"untracked.md": "# New\n"})
    report = run(repo, worktree=True)
    assert report.built and report.worktree and report.mode == "worktree"
    assert report.parsed == 3  # util.py, fresh.py, untracked.md
    files = indexed(repo)
    assert "debug.log" not in files and "scratch/tmp.py" not in files and "notes.txt" not in files
    for name in ("util.py", "fresh.py", "untracked.md"):
        assert files[name]["source"] == "worktree"
        assert files[name]["blob"] == git(repo, "hash-object", name).strip()
    assert files["app.py"]["source"] == "commit"
    # the view stays current with the worktree: the same state opens as is …
    view = GraphView.open(repo)
    assert view.report is None and view.manifest is not None and view.manifest.worktree
    assert sorted(view.files.column("path").to_pylist()) == sorted(files)
    # … and an edit to an already changed file is picked up by the next opening
    write(repo, {"fresh.py": "Z = 4  # again\n"})
    view = GraphView.open(repo)
    assert view.report is not None and view.report.built and view.report.parsed == 1
    # a build without --worktree goes back to HEAD's files
    report = run(repo)
    assert report.built and not report.worktree and "fresh.py" not in indexed(repo)
    with pytest.raises(UsageError):
        run(repo, worktree=True, commit="HEAD")


def test_an_unborn_branch_indexes_only_uncommitted_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, {"a.py": "A = 1\n"})
    report = run(repo)
    assert report.built and report.commit is None and report.files == 0
    report = run(repo, worktree=True)
    assert report.files == 1 and indexed(repo)["a.py"]["source"] == "worktree"


def test_a_sha256_repository(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo", None, "--object-format=sha256")
    with pytest.raises(UsageError):
        locate(repo)  # memory refuses it; the code graph does not
    report = run(repo)
    assert report.built and report.files == len(SOURCES) and len(report.commit or "") == 64
    write(repo, {"util.py": "def helper(x):\n    return x\n"})
    run(repo, worktree=True)
    files = indexed(repo)
    assert files["util.py"]["blob"] == git(repo, "hash-object", "util.py").strip()
    assert len(str(files["app.py"]["blob"])) == 64
    assert head_commit(where(repo)) == git(repo, "rev-parse", "HEAD").strip()


def test_a_commit_named_by_hand_stays_until_the_next_index(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    first = git(repo, "rev-parse", "HEAD").strip()
    write(repo, {"later.py": "L = 1\n"})
    commit_all(repo, "later")
    report = run(repo, commit=first[:10])
    assert report.mode == "commit" and report.commit == first and "later.py" not in indexed(repo)
    view = GraphView.open(repo)  # HEAD is elsewhere, but the graph was asked for that commit
    assert view.report is None and view.manifest is not None and view.manifest.commit == first
    assert run(repo).commit == git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(NotFoundError):
        run(repo, commit="no-such-branch")


# the view and freshness -----------------------------------------------------------------------
def test_opening_builds_and_refreshes_when_head_moves(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    with pytest.raises(NotFoundError):
        GraphView.open(repo, refresh=False)
    view = GraphView.open(repo)
    assert view.report is not None and view.report.built and not view.stale
    assert view.files.num_rows == len(SOURCES)
    assert GraphView.open(repo).report is None  # current: opened as is
    write(repo, {"extra.py": "E = 1\n"})
    commit_all(repo, "extra")
    view = GraphView.open(repo)
    assert view.report is not None and view.report.parsed == 1
    assert "extra.py" in view.files.column("path").to_pylist()
    # packed refs are read too
    git(repo, "pack-refs", "--all")
    assert head_commit(where(repo)) == git(repo, "rev-parse", "HEAD").strip()
    assert GraphView.open(repo).report is None


def test_a_reader_does_not_wait_long_for_another_builder(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    write(repo, {"extra.py": "E = 1\n"})
    commit_all(repo, "extra")
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with builder_lock(graph_root(where(repo)), 10.0):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        view = GraphView.open(repo, wait=0.2)
        assert view.stale and view.report is None
        assert "extra.py" not in view.files.column("path").to_pylist()  # the previous version
    finally:
        release.set()
        holder.join()
    view = GraphView.open(repo)
    assert not view.stale and "extra.py" in view.files.column("path").to_pylist()


@pytest.mark.parametrize("name", table_files(1))
def test_a_damaged_generation_is_rebuilt(tmp_path: Path, name: str) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    good = table_bytes(repo)
    target = generation(repo) / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))  # a new ctime: checked in full at the next opening
    with pytest.raises(NotFoundError, match="damaged"):
        GraphView.open(repo, refresh=False)
    view = GraphView.open(repo)
    assert view.report is not None and view.report.built
    assert view.report.reason.startswith("damaged graph")
    assert view.report.parsed == 0  # the facts were sound: only the tables are written again
    assert table_bytes(repo) == good


def test_a_missing_manifest_means_a_new_build(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    run(repo)
    (graph_root(where(repo)) / "manifest.json").write_text("{not json")
    report = run(repo)
    assert report.built and report.reason == "no graph yet" and report.parsed == 0
    assert len([p for p in graph_root(where(repo)).iterdir() if p.name.startswith("g-")]) == 1


# hooks and the command line -------------------------------------------------------------------
def test_the_hooks_keep_an_existing_graph_current(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo")
    assert cli(repo, "init")[0] == 0
    hgit(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"feature.py": "F = 1\n"})
    commit_all(repo, "feature")
    assert not graph_root(where(repo)).exists()  # never built here: the hooks leave it be
    run(repo)
    hgit(repo, "checkout", "-q", "main")
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None and manifest.commit == head_commit(where(repo))
    assert "code graph built" in hooks_log(repo)
    hgit(repo, "merge", "-q", "--no-ff", "feature", "-m", "merge feature")
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None and manifest.commit == head_commit(where(repo))
    assert "feature.py" in indexed(repo)
    git(repo, "config", "edda.code.onHooks", "false")
    hgit(repo, "checkout", "-q", "feature")
    assert "code graph refresh off (edda.code.onHooks)" in hooks_log(repo)
    manifest = read_manifest(graph_root(where(repo)))
    assert manifest is not None and manifest.commit != head_commit(where(repo))


def test_cli_code_index(tmp_path: Path) -> None:
    repo = code_repo(tmp_path / "repo", {**SOURCES, "node_modules/x.js": "x\n"})
    code, out, err = cli(repo, "code", "index")
    assert code == 0, err
    short = git(repo, "rev-parse", "HEAD").strip()[:12]
    assert out.startswith(f"built the code graph at {short}: 5 files, ")
    assert "(5 parsed, 0 reused; no graph yet)" in out
    assert "skipped 1 file: 1 vendored" in out
    code, out, err = cli(repo, "code", "index", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["built"] is False and data["files"] == 5 and data["skipped"] == {"vendored": 1}
    code, out, _ = cli(repo, "code", "index", "--worktree")
    assert code == 0 and "with uncommitted changes" in out
    code, out, _ = cli(repo, "code", "index", "--rebuild", "--json")
    assert code == 0 and json.loads(out)["parsed"] == 5
    code, _, err = cli(repo, "code", "index", "--commit", "nope")
    assert code == 3 and "no commit 'nope'" in err


def test_the_docs_name_the_settings() -> None:
    readme = (ROOT / "README.md").read_text()
    for key in (
        "edda.code.include",
        "edda.code.exclude",
        "edda.code.maxFileBytes",
        "edda.code.onHooks",
    ):
        assert f"`{key}`" in readme, key
