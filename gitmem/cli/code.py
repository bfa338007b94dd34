"""``git edda code``: the code graph (:mod:`gitmem.graph`).

``code index`` builds it ahead of time, with a progress bar; queries bring
it up to date themselves.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from cyclopts import App

from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app
from gitmem.memory.describe import SHORT_ID, plural

if TYPE_CHECKING:
    from gitmem.graph.build import BuildReport

code_app = App(
    name="code",
    help="The code graph: the repository's code parsed into files, symbols and their relations.",
)
app.command(code_app)


@contextmanager
def _file_progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback drawing a tqdm bar on stderr per stage of a build
    that takes a while (nothing for quick builds or when stderr is not a terminal)."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            unit = "file" if "files" in stage else "step"
            bar = bars[stage] = tqdm(
                total=total, desc=stage, unit=unit, delay=0.5, file=sys.stderr, disable=None
            )
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars.values():
            bar.close()


def describe_build(report: BuildReport) -> str:
    """A build report for people: what is in the graph, what the build did."""
    where = f"at {report.commit[:SHORT_ID]}" if report.commit else "on an unborn branch"
    if report.worktree:
        where += " with uncommitted changes"
    sizes = (
        f"{plural(report.files, 'file')}, {plural(report.nodes, 'node')},"
        f" {plural(report.edges, 'edge')}"
    )
    if report.built:
        text = (
            f"built the code graph {where}: {sizes}"
            f" ({report.parsed} parsed, {report.reused} reused; {report.reason})"
        )
    else:
        text = f"code graph up to date {where}: {sizes}"
    lines = [f"{text} in {report.seconds:.2f} s"]
    if report.skipped:
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items()))
        lines.append(f"skipped {plural(sum(report.skipped.values()), 'file')}: {parts}")
    if report.errors:
        lines.append(f"{plural(report.errors, 'file')} could not be parsed (file nodes only)")
    lines.extend(f"warning: {w}" for w in report.warnings)
    return "\n".join(lines)


@code_app.command(name="index")
def index(
    *,
    rebuild: bool = False,
    worktree: bool = False,
    commit: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Build or bring up to date the code graph of this worktree.

    Files come from a commit's tree (default HEAD), honouring .gitignore and
    git config edda.code.include/exclude; binary, vendored, generated and
    oversized files (edda.code.maxFileBytes) are skipped, each counted under
    its reason. Facts are cached per git blob, so only files never parsed
    before are parsed (on any branch, in any worktree). Queries bring the
    graph up to date themselves; this builds ahead of time, with a progress
    bar, and checks every byte of the graph against its checksums.

    Parameters
    ----------
    rebuild
        Build from scratch: parse every file again.
    worktree
        Include uncommitted changes (staged, unstaged and untracked files);
        later queries keep including them.
    commit
        Index this commit (a branch, tag or commit id) instead of HEAD;
        later queries read that commit's graph until the next index without --commit.
    """
    from gitmem.app import code

    with _file_progress() as progress:
        report = code.index(
            common.repo, rebuild=rebuild, worktree=worktree, commit=commit, progress=progress
        )
    return Output(report.to_json(), describe_build(report))
