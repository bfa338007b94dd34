"""A year of a busy team's memory, generated fast: the store ``bench/scale.py`` measures.

Ten agents work in sessions of 40 to 400 events on the trunk or on one of the
feature branches, each branch forked from the trunk's memory when it is
created (``git branch`` then ``fork``, as the post-checkout hook does).
A session is a capsule: ``capsule_open``, the user's prompts, then mostly
observations as the hooks write them (commands with their output, edits,
reads, searches, errors), with notes, decisions (on a few hundred keys, so
later ones supersede earlier ones), learnings, checkpoints and commit links
along the way, and a ``capsule_close``.

Events are sealed by the library's sealer (validation, scrubbing, ids) and
written with the library's objects, in batches: each batch adds its bodies
to the payload store in one snapshot, and its envelopes to each chain in
commits of ``per_commit`` events (a hook-driven store gets a commit per
spool flush, a few events each; one snapshot per batch instead of one per
commit is what makes a million events take minutes, not days: see
``spec/storage.md``, "Scale").
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

YEAR_US = 365 * 86_400 * 1_000_000
AGENTS = 10
TRUNK = "main"

WORDS = """
add remove fix flaky test retry timeout cache invalidate index query slow fast build deploy
release branch merge conflict rebase config setting default option flag parse parser token
session user request response handler router middleware auth login logout password hash salt
database table column row migration schema transaction lock deadlock pool connection socket
worker queue job task schedule cron backoff jitter limit rate throttle memory leak heap stack
trace error exception warning log metric latency throughput benchmark profile optimise refactor
rename move split extract inline type annotation protocol interface class function method
module package import dependency version pin upgrade downgrade vendor lockfile wheel docker
container image pod cluster node service endpoint api client server http https json yaml toml
file path directory symlink permission owner encoding unicode utf bytes string buffer stream
event hook capture spool flush commit tree blob object pack ref remote fetch push pull sync
search rank score vector embedding model fusion lexical hybrid recall precision context budget
prompt agent tool call output input result summary decision learning checkpoint capsule note
when why because after before during instead still again only every never always maybe should
the a an of to in on for with from by at as is was are be it this that not but or and if then
""".split()  # noqa: SIM905

AREAS = """auth billing api core db jobs web cli sync search index storage ui admin reports
export import notify mail cache config metrics tracing plugins""".split()  # noqa: SIM905

STEMS = """user account invoice payment session token query index worker queue schedule
parser lexer render template router handler client server model schema migration
config loader writer reader cache store pool retry limit event hook spool report
export import summary vector ranker fusion budget context prompt agent tool""".split()  # noqa: SIM905

COMMANDS = ["pytest -q", "pytest -x", "ruff check", "mypy", "git diff", "git status", "git log -5",
            "grep -rn", "ls", "cat", "make build", "npm test", "cargo test", "python -m"]  # fmt: skip
FAILURES = ["AssertionError", "KeyError", "TimeoutError", "ValueError", "TypeError",
            "ConnectionResetError", "IntegrityError", "FileNotFoundError"]  # fmt: skip
DECISION_KEYS = [f"{a}.{s}" for a in AREAS for s in STEMS[:18]]  # 432 keys


class Text:
    """Pseudo-realistic text: English and identifiers with Zipf-like frequencies."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        idents = [f"{a}_{b}" for a in STEMS for b in STEMS if a != b]
        rng.shuffle(idents)
        self.vocab = WORDS + idents[:3000]
        weights = [1.0 / (rank + 8) for rank in range(len(self.vocab))]
        total, self.cum = 0.0, []
        for w in weights:
            total += w
            self.cum.append(total)
        self.files = [
            f"{top}/{area}/{stem}{suffix}"
            for top, suffix in (("src", ".py"), ("tests", "_test.py"))
            for area in AREAS
            for stem in STEMS
        ]

    def words(self, lo: int, hi: int) -> str:
        return " ".join(
            self.rng.choices(self.vocab, cum_weights=self.cum, k=self.rng.randint(lo, hi))
        )

    def file(self) -> str:
        # a few files are touched far more than others
        return self.files[
            min(int(self.rng.paretovariate(1.2)) * 7 % len(self.files), len(self.files) - 1)
        ]

    def ident(self) -> str:
        return self.rng.choice(self.vocab[len(WORDS) :])

    def output(self) -> str:
        """A command's output: short most of the time, sometimes long (hooks keep 2,000 chars)."""
        r = self.rng.random()
        f = self.file()
        if r < 0.35:
            passed = self.rng.randint(1, 400)
            return f"{'.' * min(passed, 60)}\n{passed} passed in {self.rng.uniform(0.1, 40):.2f}s"
        if r < 0.55:
            lines = [f"{self.file()}:{self.rng.randint(1, 900)}:{self.rng.randint(1, 80)}: "
                     f"E{self.rng.randint(100, 999)} {self.words(3, 8)}"
                     for _ in range(self.rng.randint(1, 12))]  # fmt: skip
            return "\n".join(lines)
        if r < 0.75:
            error = self.rng.choice(FAILURES)
            frames = [f'  File "{self.file()}", line {self.rng.randint(1, 900)}, in {self.ident()}\n'
                      f"    {self.ident()}({self.ident()})"
                      for _ in range(self.rng.randint(2, 14))]  # fmt: skip
            return (
                "Traceback (most recent call last):\n"
                + "\n".join(frames)
                + f"\n{error}: {self.words(4, 12)}"
            )
        if r < 0.9:
            return "\n".join(f"{self.file()}:{self.rng.randint(1, 900)}: {self.words(2, 10)}"
                             for _ in range(self.rng.randint(1, 25)))[:2000]  # fmt: skip
        return f" M {f}\n?? {self.file()}"


class Agent:
    """One agent's current session."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.left = 0
        self.branch = TRUNK
        self.session = ""
        self.capsule: str | None = None


def _body(kind: str, text: Text, agent: Agent, rng: random.Random) -> tuple[str, dict[str, Any]]:
    if kind == "observation":
        r = rng.random()
        if r < 0.45:
            command = f"{rng.choice(COMMANDS)} {text.file()}"
            body: dict[str, Any] = {"kind": "command", "tool": "Bash", "input": command,
                                    "result": text.output(), "exit_code": rng.choice([0, 0, 0, 1])}  # fmt: skip
        elif r < 0.7:
            path = text.file()
            body = {"kind": "file_diff", "tool": rng.choice(["Edit", "Write", "MultiEdit"]),
                    "input": f"{path}: replace `{text.ident()}` with `{text.ident()}` ({text.words(3, 12)})",
                    "files": [path]}  # fmt: skip
        elif r < 0.92:
            tool = rng.choice(["Read", "Grep", "Glob"])
            body = {
                "kind": "tool_call",
                "tool": tool,
                "files": [text.file() for _ in range(rng.randint(1, 4))],
            }
            if tool != "Read":
                body["input"] = text.ident()
        else:
            body = {"kind": "error", "tool": "Bash", "input": f"{rng.choice(COMMANDS)} {text.file()}",
                    "result": f"{rng.choice(FAILURES)}: {text.words(4, 14)}"}  # fmt: skip
        return "observation", body
    if kind == "prompt":
        return "prompt", {"text": text.words(6, 40)}
    if kind == "note":
        return "note", {"text": text.words(8, 40), "paths": [text.file()]}
    if kind == "decision":
        return "decision", {"key": rng.choice(DECISION_KEYS), "value": text.ident(),
                            "reason": text.words(6, 25), "paths": [text.file()]}  # fmt: skip
    if kind == "learning":
        return "learning", {"text": text.words(8, 30), "topic": rng.choice(AREAS)}
    if kind == "checkpoint":
        return "checkpoint", {"summary": text.words(10, 40), "next": text.words(5, 20),
                              "paths": [text.file() for _ in range(rng.randint(0, 3))]}  # fmt: skip
    sha = f"{rng.getrandbits(160):040x}"
    return "commit_link", {"sha": sha, "branch": agent.branch, "session": agent.session,
                           "message": text.words(4, 12)}  # fmt: skip


# (kind, share of a session's events after its opening prompt)
MIX = [("observation", 0.86), ("prompt", 0.05), ("note", 0.02), ("decision", 0.015),
       ("learning", 0.01), ("checkpoint", 0.015), ("commit_link", 0.03)]  # fmt: skip
_CUM = [sum(w for _k, w in MIX[: i + 1]) for i in range(len(MIX))]


def branch_names(count: int) -> list[str]:
    return [TRUNK, *(f"feature/{i:02d}" for i in range(1, count))]


def generate(
    repo: Path,
    events: int,
    branches: int,
    start_us: int,
    *,
    batch: int,
    per_commit: int,
    seed: int,
    workers: int = 2,
) -> dict[str, Any]:
    """Write ``events`` events into ``repo`` (see the module docstring)."""
    import multiprocessing

    from gitmem import Memory
    from gitmem.storage.eventchain import Sealed

    rng = random.Random(seed)
    text = Text(rng)
    names = branch_names(branches)
    # feature branch k is created at k/branches of the year, from the trunk
    created = {name: start_us + YEAR_US * i // branches for i, name in enumerate(names)}
    agents = [Agent(f"agent-{i}") for i in range(AGENTS)]
    live: list[str] = [TRUNK]
    counts = {"sessions": 0, "commits": 0}
    started = time.perf_counter()
    timings: list[tuple[int, float]] = []
    # Sealing (validation, scrubbing, ids) is most of the work: two processes
    # seal one batch while this one writes the batch before it.
    with (
        Memory.open(repo) as mem,
        multiprocessing.get_context("fork").Pool(workers, _init_sealer, (str(repo),)) as pool,
    ):
        pending: tuple[int, list[Sealed], Any] | None = None
        made = 0
        while made < events or pending is not None:
            job = None
            if made < events:
                count = min(batch, events - made)
                drafts, presealed = _drafts(
                    mem, repo, text, rng, agents, names, created, live, counts, start_us, events,
                    made, count,
                )  # fmt: skip
                chunks = [drafts[i : i + 2000] for i in range(0, len(drafts), 2000)]
                job = (made + count, presealed, pool.map_async(_seal, chunks))
                made += count
            if pending is not None:
                done, presealed_before, result = pending
                sealed = presealed_before + [Sealed(e, b) for part in result.get() for e, b in part]
                _write(mem, sealed, per_commit, counts)
                timings.append((done, time.perf_counter() - started))
                print(json.dumps({"progress": done, "seconds": round(time.perf_counter() - started, 1)}),
                      file=sys.stderr, flush=True)  # fmt: skip
            pending = job
    seconds = time.perf_counter() - started
    return {
        "events": events,
        "seconds": seconds,
        "rate": events / seconds,
        "sessions": counts["sessions"],
        "commits": counts["commits"],
        "branches": len(live),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "timings": timings,
    }


def _drafts(
    mem: Any,
    repo: Path,
    text: Text,
    rng: random.Random,
    agents: list[Agent],
    names: list[str],
    created: dict[str, int],
    live: list[str],
    counts: dict[str, int],
    start_us: int,
    events: int,
    made: int,
    count: int,
) -> tuple[list[Any], list[Any]]:
    """The drafts of events ``made`` … ``made + count - 1``, and the capsule
    opens among them already sealed (their ids are their sessions' capsule)."""
    import subprocess

    from gitmem.capture.sealer import Draft
    from gitmem.records.types import validate_body
    from gitmem.storage.eventchain import Sealed

    drafts: list[Draft] = []
    presealed: list[Sealed] = []
    for i in range(made, made + count):
        when = start_us + YEAR_US * i // events
        for name in names:
            if name not in live and created[name] <= when:
                subprocess.run(["git", "branch", name, TRUNK], cwd=repo, check=True)
                mem.fork(name)
                live.append(name)
        agent = agents[rng.randrange(AGENTS)]
        if agent.left <= 0:
            if agent.capsule is not None:
                drafts.append(Draft("capsule_close", {"capsule": agent.capsule,
                              "summary": text.words(8, 30)}, agent.session,
                              agent.name, None, agent.branch, when))  # fmt: skip
            counts["sessions"] += 1
            # half the sessions on the trunk, the rest on the newest branches
            agent.branch = TRUNK if rng.random() < 0.5 or len(live) == 1 else rng.choice(live[-4:])
            agent.session = f"session-{counts['sessions']:06d}"
            agent.left = rng.randint(40, 400)
            opening = Draft("capsule_open", {"kind": "session", "intent": text.words(5, 15)},
                            agent.session, agent.name, None, agent.branch, when)  # fmt: skip
            envelope, opened = mem.sealer.seal([_checked(opening, validate_body)])[0]
            agent.capsule = envelope["id"]
            presealed.append(Sealed(envelope, opened))
            continue
        agent.left -= 1
        kind = MIX[_pick(rng.random())][0]
        event_type, body = _body(kind, text, agent, rng)
        drafts.append(Draft(event_type, body, agent.session, agent.name, agent.capsule,
                            agent.branch, when))  # fmt: skip
    return drafts, presealed


_SEALER: Any = None


def _init_sealer(repo: str) -> None:
    global _SEALER
    from gitmem.memory.api import Memory

    _SEALER = Memory.open(repo).sealer


def _seal(drafts: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    from gitmem.records.types import validate_body

    sealed: list[tuple[dict[str, Any], dict[str, Any]]] = _SEALER.seal(
        [_checked(d, validate_body) for d in drafts]
    )
    return sealed


def _write(mem: Any, sealed: list[Any], per_commit: int, counts: dict[str, int]) -> None:
    """Commit ``sealed``: their bodies in one payload-store snapshot, their
    envelopes in commits of ``per_commit`` per chain, one transaction."""
    from gitmem.records import layout
    from gitmem.storage.backends.base import transact
    from gitmem.storage.eventchain import Sealed, event_commit
    from gitmem.storage.objects import ObjectBatch

    ledger = mem.ledger
    with ledger.locked():
        ledger.commit([], restore_payloads=sealed)  # one payload snapshot per batch
        groups: dict[str, list[Sealed]] = {}
        for item in sealed:
            groups.setdefault(item.ref, []).append(item)

        def build(current: Any) -> dict[str, str | None]:
            objects = ObjectBatch()
            new: dict[str, str | None] = {}
            for ref, items in groups.items():
                items.sort(key=lambda s: (s.envelope["time"], s.envelope["id"]))
                tip = current[ref]
                if tip is None and ledger.chain_start is not None:
                    tip = ledger.chain_start(objects, ref)
                for start in range(0, len(items), per_commit):
                    part = [Sealed(s.envelope, None) for s in items[start : start + per_commit]]
                    tip = event_commit(objects, part, tip, layout.branch_of_ref(ref))
                    counts["commits"] += 1
                new[ref] = tip
            ledger.write_objects(objects)
            return new

        transact(mem.backend, list(groups), build)


def _pick(x: float) -> int:
    for i, edge in enumerate(_CUM):
        if x < edge:
            return i
    return len(_CUM) - 1


def _checked(draft: Any, validate: Any) -> Any:
    """The draft with its body in stored form (what ``append_many`` does first)."""
    from gitmem.capture.sealer import Draft

    return Draft(draft.type, validate(draft.type, draft.body), draft.session, draft.agent,
                 draft.capsule, draft.branch, draft.time)  # fmt: skip


def iter_queries(rng: random.Random, count: int) -> Iterator[str]:
    """Queries like an agent's: a few words and an identifier."""
    text = Text(random.Random(1))
    for _ in range(count):
        yield f"{text.words(2, 5)} {text.ident()}"
