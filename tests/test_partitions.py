"""The payload store's partitions (storage format 2, spec/storage.md §9):
one parentless snapshot per ISO week of event time, named by the store
commit and kept reachable by ``refs/edda/store/<week>``; a format-1 store
is read and kept as the partition ``format1``."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from conftest import (
    cli,
    clone,
    fsck,
    git,
    init_repo,
    make_remote,
    object_bytes,
    payload_files,
    ref_tip,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.capture.sealer import Draft
from gitmem.memory.api import Memory
from gitmem.records import layout

DAY_US = 86_400 * 10**6
MONDAY = 1_764_547_200 * 10**6  # 2025-12-01T00:00:00Z, a Monday: week 2025-W49


def notes_on(repo: Path, days: list[int]) -> list[str]:
    """One note per day offset from MONDAY; their ids."""
    drafts = [Draft("note", {"text": f"day {d}"}, time=MONDAY + d * DAY_US) for d in days]
    with Memory.open(repo) as mem:
        return [e.id for e in mem.append_many(drafts)]


def sync(repo: Path) -> dict:
    code, out, err = cli(repo, "sync", "--json")
    assert code == 0, err
    return json.loads(out)


def partitions(repo: Path) -> dict[str, str]:
    """Partition name -> commit, as the store commit names them."""
    out = git(repo, "ls-tree", layout.PAYLOAD_REF).splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in out}


@given(st.integers(min_value=0, max_value=253402300799_999999))
def test_a_partition_is_the_iso_week_of_the_event_time(time_us: int) -> None:
    name = layout.partition_of(time_us)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=time_us)
    year, week, _ = moment.isocalendar()
    assert name == f"{year:04d}-W{week:02d}"
    assert layout.is_partition(name) and layout.is_partition_ref(layout.partition_ref(name))


def test_partition_names_are_checked() -> None:
    for bad in ("2026-W54", "2026-W00", "2026W01", "2026-w01", "20260-W1", "x", "", "format2"):
        assert not layout.is_partition(bad), bad
    assert layout.is_partition("2026-W53")  # 2026 has 53 ISO weeks
    assert not layout.is_partition("2025-W53")


def test_events_land_in_the_partition_of_their_week(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    ids = notes_on(repo, [0, 6, 7, 14])  # W49, W49, W50, W51
    parts = partitions(repo)
    assert sorted(parts) == ["2025-W49", "2025-W50", "2025-W51"]
    for name, commit in parts.items():  # the refs keep each partition reachable
        assert ref_tip(repo, layout.partition_ref(name)) == commit
        assert git(repo, "log", "-1", "--format=%P", commit).strip() == ""  # a snapshot
    held = {n: git(repo, "ls-tree", "-r", "--name-only", c).split() for n, c in parts.items()}
    assert held["2025-W49"] == sorted(layout.payload_path(i) for i in ids[:2])
    assert held["2025-W50"] == [layout.payload_path(ids[2])]
    # a write touches only its week: the other partitions' commits stay
    notes_on(repo, [15])
    after = partitions(repo)
    assert after["2025-W49"] == parts["2025-W49"] and after["2025-W50"] == parts["2025-W50"]
    assert after["2025-W51"] != parts["2025-W51"]
    with Memory.open(repo) as mem:
        assert [mem.get(i).body["text"] for i in ids] == ["day 0", "day 6", "day 7", "day 14"]
        assert mem.verify().ok
    fsck(repo)


def test_a_format_1_store_is_read_and_kept_as_one_partition(tmp_path: Path) -> None:
    """An upgrade needs no migration: the old snapshot becomes the partition
    ``format1`` as it is, and new payloads go to their weeks."""
    repo = init_repo(tmp_path / "repo")
    old_ids = notes_on(repo, [0, 7])
    # what format 1 wrote: one snapshot of every payload under refs/edda/payloads
    tree = git(repo, "mktree", input="".join(
        f"040000 tree {t}\t{n}\n" for n, t in (("p", _merged_p(repo)),)
    )).strip()  # fmt: skip
    legacy = git(repo, "commit-tree", tree, input="gitmem payload store\n\nEdda-Format: 1\n")
    legacy = legacy.strip()
    git(repo, "update-ref", layout.PAYLOAD_REF, legacy)
    for ref in git(repo, "for-each-ref", "--format=%(refname)", layout.PARTITION_PREFIX).split():
        git(repo, "update-ref", "-d", ref)
    with Memory.open(repo) as mem:
        assert [mem.get(i).body["text"] for i in old_ids] == ["day 0", "day 7"]
        assert mem.verify().ok
    new_id = notes_on(repo, [21])[0]
    parts = partitions(repo)
    assert parts == {layout.LEGACY_PARTITION: legacy, "2025-W52": parts["2025-W52"]}
    assert ref_tip(repo, layout.partition_ref(layout.LEGACY_PARTITION)) == legacy
    with Memory.open(repo) as mem:
        assert mem.get(new_id).body["text"] == "day 21"
        assert mem.get(old_ids[1]).body["text"] == "day 7"
        mem.redact(old_ids[0], "leak")  # rewrites the format-1 partition, as format 1 would
        assert mem.verify().ok
    assert layout.payload_path(old_ids[0]) not in payload_files(repo)
    message = git(repo, "log", "-1", "--format=%B", partitions(repo)[layout.LEGACY_PARTITION])
    assert "Edda-Format: 1" in message
    fsck(repo)


def _merged_p(repo: Path) -> str:
    """A ``p/`` tree holding every payload of the current partitions."""
    fans: dict[str, list[str]] = {}
    for commit in partitions(repo).values():
        for line in git(repo, "ls-tree", "-r", commit, "p").splitlines():
            meta, path = line.split("\t")
            fans.setdefault(path.split("/")[1], []).append(f"{meta}\t{path.split('/')[2]}\n")
    lines = [
        f"040000 tree {git(repo, 'mktree', input=''.join(sorted(e))).strip()}\t{fan}\n"
        for fan, e in sorted(fans.items())
    ]
    return git(repo, "mktree", input="".join(lines)).strip()


def test_a_partition_ref_left_behind_is_warned_about_and_set_by_the_next_write(
    tmp_path: Path,
) -> None:
    """git moves several refs one at a time: a write killed between the store
    commit and a partition ref leaves the ref behind, which verify reports
    and the next write sets."""
    repo = init_repo(tmp_path / "repo")
    notes_on(repo, [0])
    ref = layout.partition_ref("2025-W49")
    before = ref_tip(repo, ref)
    notes_on(repo, [1])
    git(repo, "update-ref", ref, str(before))  # as if killed before this ref moved
    with Memory.open(repo) as mem:
        report = mem.verify()
        assert report.ok
        assert any("partition ref" in w.message for w in report.warnings)
    notes_on(repo, [2])
    assert ref_tip(repo, ref) == partitions(repo)["2025-W49"]
    with Memory.open(repo) as mem:
        assert not [w for w in mem.verify().warnings if "partition ref" in w.message]


def test_a_sync_sends_only_the_week_that_changed(tmp_path: Path) -> None:
    remote = make_remote(tmp_path / "remote")
    a = clone(remote.as_uri(), tmp_path / "a")
    b = clone(remote.as_uri(), tmp_path / "b")
    notes_on(a, [0, 7, 14])
    sync(a)
    sync(b)
    before = partitions(remote)
    assert partitions(b) == partitions(a) == before
    notes_on(b, [15])
    sync(b)
    after = partitions(remote)
    assert {n for n in after if after[n] != before.get(n)} == {"2025-W51"}
    assert sync(a)["payloads_added"] == 1
    with Memory.open(a) as mem:
        assert mem.verify().ok
    assert partitions(a) == after


def test_a_fetched_store_must_name_the_fetched_partitions(tmp_path: Path) -> None:
    """A remote's store commit whose partition is not the remote's partition
    ref is refused whole: nothing local changes."""
    remote = make_remote(tmp_path / "remote")
    a = clone(remote.as_uri(), tmp_path / "a")
    b = clone(remote.as_uri(), tmp_path / "b")
    notes_on(a, [0, 7])
    sync(a)
    parts = partitions(remote)
    # point the remote's W50 ref at W49's snapshot, behind gitmem's back
    git(remote, "update-ref", layout.partition_ref("2025-W50"), parts["2025-W49"])
    code, _, err = cli(b, "sync")
    assert code == 4 and "partition 2025-W50" in err, err
    assert len(err.strip().splitlines()) <= 2  # one line, and its hint
    assert ref_tip(b, layout.PAYLOAD_REF) is None


def test_a_format_1_remote_is_read_then_upgraded_by_the_first_push(tmp_path: Path) -> None:
    """A remote a format-1 gitmem pushed to (one snapshot, a payloads base)
    is pulled as it is; the first push names the snapshot as ``format1``
    without sending it, and deletes the old base, which would keep a
    redacted payload reachable there."""
    remote = make_remote(tmp_path / "remote")
    a = clone(remote.as_uri(), tmp_path / "a")
    secret, kept = notes_on(a, [0, 7])
    tree = git(a, "mktree", input=f"040000 tree {_merged_p(a)}\tp\n").strip()
    legacy = git(a, "commit-tree", tree, input="gitmem payload store\n\nEdda-Format: 1\n").strip()
    empty = git(a, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
    base = git(
        a, "commit-tree", empty, "-p", legacy, input="gitmem payload base\n\nEdda-Format: 1\n"
    )
    git(a, "push", "-q", remote.as_uri(), "refs/edda/branches/main:refs/edda/branches/main",
        f"{legacy}:{layout.PAYLOAD_REF}", f"{base.strip()}:{layout.PAYLOAD_BASE_REF}")  # fmt: skip

    b = clone(remote.as_uri(), tmp_path / "b")
    code, _, err = cli(b, "init", "--no-hooks")
    assert code == 0, err
    with Memory.open(b) as mem:
        assert mem.get(kept).body["text"] == "day 7"
        assert mem.verify().ok
    notes_on(b, [21])
    sync(b)
    assert partitions(remote)[layout.LEGACY_PARTITION] == legacy
    assert ref_tip(remote, layout.partition_ref(layout.LEGACY_PARTITION)) == legacy
    assert ref_tip(remote, layout.PAYLOAD_BASE_REF) is None
    assert ref_tip(b, layout.mirror_ref("origin", layout.PAYLOAD_BASE_REF)) is None

    with Memory.open(b) as mem:
        mem.redact(secret, "leak")
    sync(b)
    git(remote, "gc", "-q", "--prune=now")
    assert b"day 0" not in object_bytes(remote)
    assert b"day 7" in object_bytes(remote)


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    days_a=st.lists(st.integers(0, 30), min_size=1, max_size=4),
    days_b=st.lists(st.integers(0, 30), max_size=4),
    redact=st.booleans(),
)
def test_clones_writing_in_any_weeks_converge(
    tmp_path_factory: pytest.TempPathFactory, days_a: list[int], days_b: list[int], redact: bool
) -> None:
    """Two clones write in any weeks, one may redact; after syncs both ways
    the stores are the same commits and every event reads its own body."""
    root = tmp_path_factory.mktemp("converge")
    remote = make_remote(root / "remote")
    a = clone(remote.as_uri(), root / "a")
    b = clone(remote.as_uri(), root / "b")
    ids_a = notes_on(a, days_a)
    sync(a)
    sync(b)
    ids_b = notes_on(b, days_b)
    if redact:
        with Memory.open(b) as mem:
            mem.redact(ids_a[0], "leak")
    for repo in (b, a, b):
        sync(repo)
    assert ref_tip(a, layout.PAYLOAD_REF) == ref_tip(b, layout.PAYLOAD_REF)
    assert partitions(a) == partitions(b)
    with Memory.open(a) as mem:
        for i, d in zip([*ids_a, *ids_b], [*days_a, *days_b], strict=True):
            event = mem.get(i)
            if redact and i == ids_a[0]:
                assert event.redacted and event.body is None
            else:
                assert event.body["text"] == f"day {d}"
        assert mem.verify().ok


def test_a_remote_partition_all_redacted_is_emptied_by_a_clone_that_never_held_it(
    tmp_path: Path,
) -> None:
    """D knows a week only as a remote's empty partition: its push to a
    remote that still holds the redacted payload there replaces the
    partition, and clones converge on the same store."""
    r1 = make_remote(tmp_path / "r1")
    r2 = make_remote(tmp_path / "r2")
    a = clone(r1.as_uri(), tmp_path / "a")
    secret = notes_on(a, [0])[0]  # the only event of 2025-W49
    notes_on(a, [7])
    sync(a)
    b = clone(r1.as_uri(), tmp_path / "b")
    sync(b)
    with Memory.open(b) as mem:
        mem.redact(secret, "leak")
    git(b, "remote", "add", "r2", r2.as_uri())
    git(b, "push", "-q", "r2", "main")
    assert cli(b, "sync", "r2")[0] == 0
    d = clone(r2.as_uri(), tmp_path / "d")
    sync(d)
    assert "2025-W49" in partitions(d)  # kept, empty
    git(d, "remote", "add", "r1", r1.as_uri())
    assert cli(d, "sync", "r1")[0] == 0
    git(r1, "gc", "-q", "--prune=now")
    assert b"day 0" not in object_bytes(r1)
    for repo in (a, d, a, d):
        assert cli(repo, "sync", "--json")[0] == 0
    assert ref_tip(a, layout.PAYLOAD_REF) == ref_tip(d, layout.PAYLOAD_REF)
    code, out, _ = cli(a, "sync", "--json")
    assert code == 0 and not json.loads(out)["payloads_pushed"]  # nothing left to send


def test_every_copy_a_remote_offers_is_checked(tmp_path: Path) -> None:
    """One event's payload in two partitions of a fetched store, one of them
    forged: the pull checks each copy it would take, and refuses."""
    remote = make_remote(tmp_path / "remote")
    a = clone(remote.as_uri(), tmp_path / "a")
    eid = notes_on(a, [0])[0]  # 2025-W49
    sync(a)
    path = layout.payload_path(eid)
    good = git(a, "rev-parse", f"{layout.partition_ref('2025-W49')}:{path}").strip()
    bad = git(a, "hash-object", "-w", "--stdin", input='{"text":"forged"}').strip()

    def partition(blob: str, name: str) -> str:
        fan = git(a, "mktree", input=f"100644 blob {blob}\t{eid}\n").strip()
        p = git(a, "mktree", input=f"040000 tree {fan}\t{eid[:2]}\n").strip()
        tree = git(a, "mktree", input=f"040000 tree {p}\tp\n").strip()
        message = f"gitmem payload partition {name}\n\nEdda-Format: 2\n"
        return git(a, "commit-tree", tree, input=message).strip()

    w48, w49 = partition(good, "2025-W48"), partition(bad, "2025-W49")
    links = f"160000 commit {w48}\t2025-W48\n160000 commit {w49}\t2025-W49\n"
    store = git(a, "commit-tree", git(a, "mktree", input=links).strip(),
                input="gitmem payload store\n\nEdda-Format: 2\n").strip()  # fmt: skip
    git(a, "push", "-q", "-f", remote.as_uri(), f"{w48}:{layout.partition_ref('2025-W48')}",
        f"{w49}:{layout.partition_ref('2025-W49')}", f"{store}:{layout.PAYLOAD_REF}")  # fmt: skip
    b = clone(remote.as_uri(), tmp_path / "b")
    code, _, err = cli(b, "sync")
    assert code == 4 and "does not match its envelope" in err, err
    assert ref_tip(b, layout.PAYLOAD_REF) is None


def test_a_store_naming_a_pruned_partition_reads_its_ref_until_the_next_write(
    tmp_path: Path,
) -> None:
    """The store commit moves before the partition refs: a write killed in
    between, then `git gc --prune=now`, leaves the store naming a partition
    commit that is gone. Readers use the partition's ref (the partition as
    it was before that write), verify says so, and the next write repairs."""
    repo = init_repo(tmp_path / "repo")
    ids = notes_on(repo, [0, 7])
    parts = partitions(repo)
    gone = "0123456789abcdef0123456789abcdef01234567"  # no such object
    links = f"160000 commit {gone}\t2025-W49\n160000 commit {parts['2025-W50']}\t2025-W50\n"
    tree = git(repo, "mktree", "--missing", input=links).strip()
    store = git(repo, "commit-tree", tree, input="gitmem payload store\n\nEdda-Format: 2\n")
    git(repo, "update-ref", layout.PAYLOAD_REF, store.strip())
    with Memory.open(repo) as mem:
        assert [mem.get(i).body["text"] for i in ids] == ["day 0", "day 7"]
        report = mem.verify()
        assert report.ok
        assert any("missing" in w.message for w in report.warnings)
    notes_on(repo, [8])
    assert partitions(repo)["2025-W49"] == parts["2025-W49"]
    with Memory.open(repo) as mem:
        assert not mem.verify().warnings
    fsck(repo)
