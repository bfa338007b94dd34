"""How an :class:`~gitmem.index.view.IndexView` comes to be: refreshed when
stale, checked against its manifest, rebuilt when damaged.

Only :class:`~gitmem.errors.IndexDamagedError` counts as damage: any other
error (a bug) reaches the caller instead of being rebuilt over.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gitmem.errors import IndexDamagedError, NotFoundError
from gitmem.index.manifest import Manifest, index_root, read_manifest
from gitmem.index.refresh import LOCK_TIMEOUT, RefreshReport, is_fresh
from gitmem.sidecar.integrity import unchanged
from gitmem.storage.gitconfig import Config, read_config
from gitmem.storage.locate import RepoLocation, locate

if TYPE_CHECKING:
    from gitmem.index.view import IndexView

DEFAULT_WAIT = (
    5.0  # seconds a reader waits for another process's build before reading the previous version
)


def _pending_work(location: RepoLocation) -> bool:
    """Events in the capture spool or hook intents not yet applied."""
    from gitmem.branches.intents import has_pending
    from gitmem.storage import spool

    return bool(spool.pending(location.state_dir)) or has_pending(location.state_path)


def _model_changed(config: Config, manifest: Manifest | None) -> bool:
    """Whether the configured embedding model is not the one the vectors were
    made by (gitmem upgraded its default, or ``edda.embed.*`` changed): the
    refresh then rebuilds the vectors, within its budget, instead of every
    query searching by words alone until memory moves. Not after a failure
    (``embed_error`` set): queries do not retry a provider that failed."""
    from gitmem.index.embedding import deferred

    if manifest is None or manifest.model is None:
        return False
    if manifest.embed_error is not None and not deferred(manifest):
        return False
    from gitmem.embed import get_embedder
    from gitmem.errors import GitmemError

    try:
        embedder = get_embedder(config)  # nothing is loaded or contacted
    except GitmemError:
        return False  # the refresh would say the same; queries warn
    return embedder is not None and embedder.model_id != manifest.model


def open_view(
    cls: type[IndexView],
    path: str | os.PathLike[str] | None = None,
    *,
    refresh: bool = True,
    wait: float = DEFAULT_WAIT,
    embed: bool = True,
) -> IndexView:
    """:meth:`IndexView.open <gitmem.index.view.IndexView.open>`: a view of
    ``cls`` over the repository at ``path``."""
    location = locate(path)
    config = read_config(location)
    root = index_root(location)
    manifest = read_manifest(root)
    report = None
    stale = False
    if refresh and (
        _pending_work(location)
        or not is_fresh(location, manifest, vectors=embed)
        or (embed and _model_changed(config, manifest))
    ):
        from gitmem.index.refresh import try_refresh
        from gitmem.memory.api import Memory

        with Memory(location, config) as mem:
            report = try_refresh(
                mem, wait=wait if manifest is not None else LOCK_TIMEOUT, embed=embed
            )
        stale = report is None
        manifest = read_manifest(root)
    if manifest is None:
        raise NotFoundError("there is no memory index yet", "build it with 'git edda index'")
    try:
        return _checked(cls, location, config, manifest, stale, report, embed)
    except IndexDamagedError as exc:
        if not refresh:
            raise NotFoundError(
                f"the memory index is damaged ({exc})",
                "rebuild it with 'git edda index --rebuild'",
            ) from None
        damage = str(exc)  # not the error: its traceback holds what was opened
    # Files that do not match the manifest are damaged, or were being
    # replaced by a refresh in another process. A refresh under the builder
    # lock (so after that one) checks them again and builds anew what is
    # damaged; should this view still find damage, a full rebuild.
    from gitmem.index.refresh import refresh as run_refresh
    from gitmem.memory.api import Memory

    for rebuild in (False, True):
        with Memory(location, config) as mem:
            report = run_refresh(mem, rebuild=rebuild, embed=embed)
        manifest = read_manifest(root)
        if manifest is None:
            continue
        try:
            return _checked(cls, location, config, manifest, False, report, embed)
        except IndexDamagedError as exc:
            damage = str(exc)
    raise NotFoundError(
        f"the memory index could not be rebuilt ({damage})", "run 'git edda index --rebuild'"
    )


def _checked(
    cls: type[IndexView],
    location: RepoLocation,
    config: Config,
    manifest: Manifest,
    stale: bool,
    report: RefreshReport | None,
    embed: bool,
) -> IndexView:
    """A view whose files match the manifest and whose tables, full text
    and (when used) vectors all open; IndexDamagedError otherwise."""
    view = cls(location, config, manifest, stale=stale, report=report)
    try:
        view.fulltext.count()
        if embed and manifest.model:
            from gitmem.index.vectors import VECTORS_FILE

            if VECTORS_FILE not in manifest.files:
                raise IndexDamagedError(f"{VECTORS_FILE} is missing")
            _ = view.vectors
        # What was opened is what was checked: no refresh replaced a file meanwhile.
        unchanged(view.directory, view.checked_files)
    except BaseException:
        view.close()  # the refresh that follows may replace these files
        raise
    return view
