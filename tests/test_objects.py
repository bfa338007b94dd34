"""Our object serialisation and pack writer agree with git, byte for byte."""

from __future__ import annotations

import pygit2
from conftest import git, init_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.storage.objects import PACK_THRESHOLD, ObjectBatch, commit_bytes, object_id

names = st.text(
    st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(
    lambda n: n not in (".", "..") and n.lower() != ".git"  # git refuses these names
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    blobs=st.lists(st.binary(max_size=300), min_size=1, max_size=8),
    names_=st.lists(names, min_size=1, max_size=8, unique=True),
    message=st.text(max_size=80).map(lambda t: t.replace("\0", "") + "\n"),
    when=st.integers(min_value=0, max_value=2**32 - 1),  # pygit2 signatures hold 32-bit times
)
def test_ids_match_libgit2(tmp_path_factory, blobs, names_, message, when):
    repo = pygit2.Repository(str(init_repo(tmp_path_factory.mktemp("r"), commit=False)))
    batch = ObjectBatch()
    builder = repo.TreeBuilder()
    entries = []
    for i, name in enumerate(names_):
        data = blobs[i % len(blobs)]
        oid = batch.blob(data)
        assert str(repo.create_blob(data)) == oid
        mode = pygit2.GIT_FILEMODE_BLOB
        if i % 3 == 2:  # some subtrees, to exercise git's "name/" ordering
            oid = batch.tree([("x", 0o100644, oid)])
            sub = repo.TreeBuilder()
            sub.insert("x", pygit2.Oid(hex=batch.blob(data)), pygit2.GIT_FILEMODE_BLOB)
            assert str(sub.write()) == oid
            mode = pygit2.GIT_FILEMODE_TREE
        entries.append((name, 0o040000 if mode == pygit2.GIT_FILEMODE_TREE else 0o100644, oid))
        builder.insert(name, pygit2.Oid(hex=oid), mode)
    tree = batch.tree(entries)
    assert str(builder.write()) == tree
    sig = pygit2.Signature("gitmem", "gitmem@localhost", when, 0)
    made = repo.create_commit(None, sig, sig, message, pygit2.Oid(hex=tree), [])
    assert str(made) == batch.commit(tree, [], message, when)
    assert object_id("commit", commit_bytes(tree, [], message, when)) == str(made)


def _batch(n: int) -> tuple[ObjectBatch, str]:
    batch = ObjectBatch()
    blobs = [batch.blob(f"blob {i}\n".encode() * (i % 40 + 1)) for i in range(n)]
    tree = batch.tree([(f"f{i:05d}", 0o100644, b) for i, b in enumerate(blobs)])
    return batch, batch.commit(tree, [], "test\n", 1_700_000_000)


def test_small_batches_are_loose_and_large_ones_one_pack(tmp_path):
    repo = init_repo(tmp_path / "r", commit=False)
    objects = str(repo / ".git" / "objects")
    small, small_tip = _batch(3)
    small.write(objects)
    assert not list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    large, large_tip = _batch(PACK_THRESHOLD * 2)
    large.write(objects)
    packs = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1
    git(repo, "update-ref", "refs/edda/small", small_tip)
    git(repo, "update-ref", "refs/edda/large", large_tip)
    git(repo, "fsck", "--full", "--strict")
    assert "ok" in git(repo, "verify-pack", "-v", str(packs[0]).replace(".pack", ".idx"))
    assert git(repo, "cat-file", "-p", f"{large_tip}^{{tree}}").count("\n") == PACK_THRESHOLD * 2


def test_objects_already_present_are_skipped(tmp_path):
    repo = init_repo(tmp_path / "r", commit=False)
    objects = str(repo / ".git" / "objects")
    batch, _tip = _batch(5)
    assert batch.write_loose(objects) == len(batch)
    assert batch.write_loose(objects) == 0
    assert batch.write_pack(objects, skip=list(batch.objects)) is None
