"""The git-CLI backend, for repositories libgit2 cannot open (reftable refs).

Slower than :mod:`.libgit2` (one process per write) but always agrees with git.
Reads go through one long-lived ``git cat-file --batch``; ref updates through
``git update-ref --stdin`` transactions with expected old values (CAS).
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from gitmem.errors import GitError
from gitmem.records.layout import MODE_TREE
from gitmem.storage.backends.base import Builder, CommitInfo, RefBusy, TreeChange, TreeEntry
from gitmem.storage.locate import RepoLocation, clean_git_env, run_git


class GitCliBackend:
    """Backend that shells out to git."""

    name = "git-cli"

    def __init__(self, location: RepoLocation, *, fsync: bool = True) -> None:
        self.location = location
        self._cwd = location.cwd
        self._fsync = fsync
        self._batch: subprocess.Popen[bytes] | None = None
        fmt = self._git(["rev-parse", "--show-object-format"]).decode().strip() or "sha1"
        self._zero = "0" * (64 if fmt == "sha256" else 40)

    def _git(self, args: list[str], input_bytes: bytes | None = None) -> bytes:
        prefix = ["-c", "core.fsync=all"] if self._fsync else []
        return run_git([*prefix, *args], self._cwd, input_bytes)

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """A pass that reads each object once: git keeps no cache here."""
        yield

    def close(self) -> None:
        if self._batch is not None:
            assert self._batch.stdin is not None
            self._batch.stdin.close()
            self._batch.wait()
            self._batch = None

    # refs -------------------------------------------------------------------
    def read_ref(self, name: str) -> str | None:
        out = self._git(["for-each-ref", "--format=%(refname)%00%(objectname)", name])
        for line in out.decode().splitlines():
            ref, _, oid = line.partition("\0")
            if ref == name:
                return oid
        return None

    def list_refs(self, prefix: str) -> dict[str, str]:
        out = self._git(["for-each-ref", "--format=%(refname)%00%(objectname)", prefix])
        refs = {}
        for line in out.decode().splitlines():
            ref, _, oid = line.partition("\0")
            if ref.startswith(prefix):
                refs[ref] = oid
        return dict(sorted(refs.items()))

    def try_update(self, refs: Sequence[str], build: Builder) -> dict[str, str | None]:
        current = {ref: self.read_ref(ref) for ref in refs}
        new = dict(build(current))
        lines = ["start"]
        for ref, target in new.items():
            old = current[ref] or self._zero
            if target == current[ref]:
                lines.append(f"verify {ref} {old}")
            elif target is None:
                lines.append(f"delete {ref} {old}")
            else:
                lines.append(f"update {ref} {target} {old}")
        lines += ["prepare", "commit", ""]
        try:
            self._git(["update-ref", "--stdin"], "\n".join(lines).encode())
        except GitError as exc:
            # "cannot lock ref …: is at X but expected Y" and held locks: retry
            raise RefBusy(str(exc)) from exc
        return {ref: new.get(ref, current[ref]) for ref in refs}

    # objects ----------------------------------------------------------------
    def _cat(self, oid: str) -> tuple[str, bytes]:
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=clean_git_env(),
            )
        stdin: IO[bytes] | None = self._batch.stdin
        stdout: IO[bytes] | None = self._batch.stdout
        assert stdin is not None and stdout is not None
        stdin.write(oid.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().decode().split()
        if len(header) < 3:
            raise GitError(f"object {oid} is missing")
        size = int(header[2])
        data = stdout.read(size + 1)[:-1]
        return header[1], data

    def _get(self, oid: str, kind: str) -> bytes:
        found, data = self._cat(oid)
        if found != kind:
            raise GitError(f"object {oid} is a {found}, expected a {kind}")
        # cat-file does not check hashes (libgit2 does): verify must see swapped bytes
        algo = "sha1" if len(oid) == 40 else "sha256"
        actual = hashlib.new(algo, b"%s %d\0%s" % (kind.encode(), len(data), data)).hexdigest()
        if actual != oid:
            raise GitError(f"object {oid} is unreadable: object hash mismatch (got {actual})")
        return data

    def read_blob(self, oid: str) -> bytes:
        return self._get(oid, "blob")

    def read_tree_bytes(self, oid: str) -> bytes:
        return self._get(oid, "tree")

    def read_tree(self, oid: str) -> list[TreeEntry]:
        data = self._get(oid, "tree")
        hash_len = len(self._zero) // 2
        entries = []
        pos = 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            mode = int(data[pos:space], 8)
            name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
            oid_hex = data[nul + 1 : nul + 1 + hash_len].hex()
            entries.append(TreeEntry(name, mode, oid_hex))
            pos = nul + 1 + hash_len
        return entries

    def read_commit(self, oid: str) -> CommitInfo:
        raw = self._get(oid, "commit").decode("utf-8", "replace")
        head, _, message = raw.partition("\n\n")
        tree = ""
        parents: list[str] = []
        when = 0
        for line in head.splitlines():
            key, _, value = line.partition(" ")
            if key == "tree":
                tree = value
            elif key == "parent":
                parents.append(value)
            elif key == "committer":
                when = int(value.rsplit(" ", 2)[-2])
        return CommitInfo(tree, tuple(parents), message, when)

    def read_path(self, tree: str, path: str) -> str | None:
        current = tree
        parts = path.split("/")
        for i, part in enumerate(parts):
            match = [e for e in self.read_tree(current) if e.name == part]
            if not match:
                return None
            if i < len(parts) - 1 and match[0].mode != MODE_TREE:
                return None
            current = match[0].oid
        return current

    def has_object(self, oid: str) -> bool:
        try:
            self._git(["cat-file", "-e", oid])
        except GitError:
            return False
        return True

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        proc = subprocess.run(
            ["git", "merge-base", "--is-ancestor", ancestor, descendant],
            cwd=self._cwd,
            capture_output=True,
            env=clean_git_env(),
        )
        return proc.returncode == 0

    def commits_between(self, include: Sequence[str], exclude: Sequence[str]) -> list[str]:
        if not include:
            return []
        known = [oid for oid in exclude if self.has_object(oid)]
        out = self._git(["rev-list", *include, "--not", *known, "--"])
        return out.decode().split()

    def diff_trees(self, old: str | None, new: str | None) -> list[TreeChange]:
        if old == new:
            return []
        empty = self._git(["hash-object", "-t", "tree", "/dev/null"]).decode().strip()
        out = self._git(
            ["diff-tree", "-r", "-z", "--raw", "--no-renames", old or empty, new or empty]
        )
        fields = out.split(b"\0")
        changes = []
        for head, path in zip(fields[0:-1:2], fields[1::2], strict=False):
            # ":<old mode> <new mode> <old id> <new id> <status>"
            old_mode, new_mode, before, after, status = head.decode().lstrip(":").split(" ")
            changes.append(
                TreeChange(
                    path.decode("utf-8", "surrogateescape"),
                    None if status == "A" else before,
                    None if status == "D" else after,
                    int(old_mode if status == "D" else new_mode, 8),
                )
            )
        return changes
