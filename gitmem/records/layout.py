"""Names and shapes of memory objects in git (format v1, spec/storage.md).

Refs::

    refs/edda/branches/<escaped branch>   event chain of one git branch
    refs/edda/detached                    event chain written on a detached HEAD
    refs/edda/payloads                    the payload store: a parentless commit
                                          naming its partitions (format 2)
    refs/edda/store/<partition>           one partition of the store: the payloads
                                          of one ISO week of event time
    refs/edda-remotes/<remote>/...        private mirror of a remote's refs/edda/* (sync)

Besides event commits a chain holds fork commits (a branch's memory starts
from another's) and merge commits; neither carries events (spec/sync.md).

An event commit's tree holds only the events it adds::

    events/000000   envelope blob (canonical JSON)
    events/000001   ...

The payload store's tree holds one gitlink (mode 160000) per partition,
named ``<yyyy>-W<ww>`` (or ``format1``: a whole format-1 store, kept as it
was), pointing at the partition's commit. A partition's tree::

    p/<id[:2]>/<id>          stored body of event <id> (canonical JSON)
    b/<sha[:2]>/<sha256>     an attachment: one large string, stored once

Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~9 ms to import: not on the hook path
    from typing import Any

FORMAT_VERSION = 2  # the newest storage format this gitmem reads and writes
CHAIN_FORMAT = 1  # event chains did not change in format 2: older readers still read them
STORE_FORMAT = 2  # the payload store's root, its partitions and their bases
REF_ROOT = "refs/edda/"
BRANCH_PREFIX = "refs/edda/branches/"
DETACHED_REF = "refs/edda/detached"
PAYLOAD_REF = "refs/edda/payloads"
# On a remote only: a commit whose parent is the payload snapshot the last
# push replaced (spec/sync.md, "Incremental transfer"), so that git sends
# only what the new snapshot adds. Never read as memory.
PAYLOAD_BASE_REF = "refs/edda/payloads-base"
# One partition of the payload store per ISO week of event time (format 2):
# a sync rewrites, sends and checks the week it adds to, whatever the size
# of the store (spec/storage.md §9).
PARTITION_PREFIX = "refs/edda/store/"
# On a remote only, beside a partition: as PAYLOAD_BASE_REF for one partition.
PARTITION_BASE_PREFIX = "refs/edda/store-base/"
LEGACY_PARTITION = "format1"  # a format-1 store, kept whole as one partition
MODE_GITLINK = 0o160000
EVENTS_DIR = "events"
FORMAT_TRAILER = "Edda-Format"
COUNT_TRAILER = "Edda-Events"
MERGE_TRAILER = "Edda-Merge"  # on merge commits: the number of parents
FORK_TRAILER = "Edda-Fork"  # on fork commits: the branch whose memory was inherited
BRANCH_TRAILER = "Edda-Branch"  # on fork commits: the branch whose memory starts here
FORK_CODE_TRAILER = "Edda-Fork-Code"  # on fork commits: the code commit at the fork
RENAMED_TRAILER = "Edda-Renamed-From"  # on fork commits made by a branch rename
MIRROR_ROOT = "refs/edda-remotes/"

# Strings at least this long (UTF-8 bytes) are stored as attachments.
ATTACHMENT_MIN_BYTES = 8192
ATTACHMENT_KEY = "$gitmem-blob"

IDENTITY_NAME = "gitmem"
IDENTITY_EMAIL = "gitmem@localhost"

MODE_BLOB = 0o100644
MODE_TREE = 0o040000


def escape_branch(branch: str) -> str:
    """Escape a branch name into one ref component: ``%`` -> ``%25``, ``/`` -> ``%2F``.

    One component per branch avoids directory/file clashes between memory
    refs (``a`` and ``a/b`` can both have memory even though git forbids both
    branches at once, e.g. after ``a`` was deleted).
    """
    return branch.replace("%", "%25").replace("/", "%2F")


def unescape_branch(component: str) -> str:
    return component.replace("%2F", "/").replace("%2f", "/").replace("%25", "%")


def branch_ref(branch: str | None) -> str:
    """The memory ref for a git branch (None: detached HEAD)."""
    if not branch:
        return DETACHED_REF
    return BRANCH_PREFIX + escape_branch(branch)


def branch_of_ref(ref: str) -> str | None:
    """The git branch a memory ref belongs to (None for the detached chain)."""
    if ref.startswith(BRANCH_PREFIX):
        return unescape_branch(ref[len(BRANCH_PREFIX) :])
    return None


def is_chain_ref(ref: str) -> bool:
    return ref.startswith(BRANCH_PREFIX) or ref == DETACHED_REF


def mirror_prefix(remote_key: str) -> str:
    """Where a remote's ``refs/edda/*`` are fetched to: never ``refs/edda/`` itself
    (a fetch would overwrite local memory) and never ``refs/remotes/`` (an
    ordinary ``git fetch --prune`` would delete it)."""
    return f"{MIRROR_ROOT}{escape_branch(remote_key)}/"


def mirror_ref(remote_key: str, ref: str) -> str:
    """The mirror of the remote's ``refs/edda/<rest>``."""
    return mirror_prefix(remote_key) + ref[len(REF_ROOT) :]


def unmirror_ref(remote_key: str, mirror: str) -> str:
    return REF_ROOT + mirror[len(mirror_prefix(remote_key)) :]


def merge_message(parents: int) -> str:
    """A merge commit's message: a function of the parent count only, so the
    same parents give the same commit on every clone."""
    return (
        f"merge {parents} memory heads\n\n"
        f"{FORMAT_TRAILER}: {CHAIN_FORMAT}\n{MERGE_TRAILER}: {parents}\n"
    )


def fork_message(
    branch: str, source: str | None, code: str | None, renamed_from: str | None = None
) -> str:
    """A fork commit's message: where ``branch``'s memory starts (for a rename,
    the old name's fork source and code carry over)."""
    if renamed_from:
        subject = f"rename {renamed_from} to {branch}"
    else:
        subject = f"fork {branch} from {source}" if source else f"start {branch}"
        if code:
            subject += f" at {code[:12]}"
    lines = [f"{FORMAT_TRAILER}: {CHAIN_FORMAT}", f"{BRANCH_TRAILER}: {branch}"]
    if renamed_from:
        lines.append(f"{RENAMED_TRAILER}: {renamed_from}")
    if source:
        lines.append(f"{FORK_TRAILER}: {source}")
    if code:
        lines.append(f"{FORK_CODE_TRAILER}: {code}")
    return subject + "\n\n" + "\n".join(lines) + "\n"


def entry_name(index: int) -> str:
    return f"{index:06d}"


def commit_message(envelopes: list[dict[str, Any]], branch: str | None) -> str:
    """A readable one-line summary with trailers. Never contains payload text:
    the message is in the hashed chain and could not be redacted."""
    where = branch or "detached HEAD"
    if len(envelopes) == 1:
        env = envelopes[0]
        subject = f"{env['type']} {env['id'][:12]} on {where}"
    else:
        types: list[str] = []
        for env in envelopes:
            if env["type"] not in types:
                types.append(env["type"])
        shown = ", ".join(types[:5]) + (", …" if len(types) > 5 else "")
        subject = f"{len(envelopes)} events ({shown}) on {where}"
    return f"{subject}\n\n{FORMAT_TRAILER}: {CHAIN_FORMAT}\n{COUNT_TRAILER}: {len(envelopes)}\n"


def parse_trailers(message: str) -> dict[str, str]:
    """Trailers of the last paragraph of a commit message."""
    paragraphs = message.strip().split("\n\n")
    trailers: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            trailers[key] = value.strip()
    return trailers


def partition_of(time_us: int) -> str:
    """The partition of an event at ``time_us`` (µs since the epoch, UTC):
    its ISO week, ``<yyyy>-W<ww>``."""
    import datetime

    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=time_us)
    year, week, _ = moment.isocalendar()
    return f"{year:04d}-W{week:02d}"


def is_partition(name: str) -> bool:
    """Whether ``name`` names a partition: an ISO week that exists, or
    :data:`LEGACY_PARTITION`."""
    if name == LEGACY_PARTITION:
        return True
    if len(name) != 8 or name[4:6] != "-W" or not (name[:4] + name[6:]).isdigit():
        return False
    if not name.isascii():
        return False
    import datetime

    try:
        datetime.date.fromisocalendar(int(name[:4]), int(name[6:]), 1)
    except ValueError:
        return False
    return True


def partition_ref(name: str) -> str:
    return PARTITION_PREFIX + name


def partition_base_ref(name: str) -> str:
    return PARTITION_BASE_PREFIX + name


def is_partition_ref(ref: str) -> bool:
    return ref.startswith(PARTITION_PREFIX) and is_partition(ref[len(PARTITION_PREFIX) :])


def payload_path(event_id: str) -> str:
    return f"p/{event_id[:2]}/{event_id}"


def attachment_path(sha_hex: str) -> str:
    return f"b/{sha_hex[:2]}/{sha_hex}"


def split_attachments(body: Any) -> tuple[Any, dict[str, bytes]]:
    """Replace every long string in ``body`` by an attachment reference.

    Returns the body as stored and the attachments (sha256 hex -> bytes).
    The envelope's digest covers the logical body, never the stored form.
    """
    from gitmem.records import canonical

    found: dict[str, bytes] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            data = value.encode("utf-8")
            if len(data) >= ATTACHMENT_MIN_BYTES:
                sha = canonical.sha256_hex(data)
                found[sha] = data
                return {ATTACHMENT_KEY: "sha256:" + sha, "size": len(data)}
            return value
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(body), found


def _is_attachment_ref(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 2
        and isinstance(value.get(ATTACHMENT_KEY), str)
        and isinstance(value.get("size"), int)
    )


def attachment_refs(stored: Any) -> list[str]:
    """The sha256 hex of every attachment a stored body refers to."""
    refs: list[str] = []

    def walk(value: Any) -> None:
        if _is_attachment_ref(value):
            refs.append(value[ATTACHMENT_KEY].removeprefix("sha256:"))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(stored)
    return refs


def join_attachments(stored: Any, fetch: Any) -> Any:
    """Inverse of :func:`split_attachments`; ``fetch(sha_hex) -> bytes | None``.

    Raises KeyError naming the attachment when one is missing.
    """

    def walk(value: Any) -> Any:
        if _is_attachment_ref(value):
            sha = value[ATTACHMENT_KEY].removeprefix("sha256:")
            data = fetch(sha)
            if data is None:
                raise KeyError(sha)
            return data.decode("utf-8")
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(stored)
