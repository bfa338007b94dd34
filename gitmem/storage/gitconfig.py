"""Read the git configuration gitmem uses, in one git call.

Settings (documented in spec/storage.md, "Configuration"):

========================  =====================================================
``edda.repo``             the repository scope id (default: the directory name)
``edda.scrubPattern``     extra secret regex; multi-valued
``edda.scrubAllow``       regex of matches never masked; multi-valued
``edda.maxFieldBytes``    truncate longer strings at capture (default 262144)
``edda.fsync``            ``false`` skips fsync on writes (default true)
``user.email``/``name``   the ``user`` scope id
========================  =====================================================

Standard library only (capture hot path): ``git config`` honours includes and
system/global/local precedence, which a hand-written parser would get wrong.
"""

from __future__ import annotations

import os

from gitmem.errors import UsageError
from gitmem.storage.locate import RepoLocation, read_git_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.records.validate import Limits

Config = dict[str, list[str]]

# Everything gitmem reads, in one call: its own settings, identity, and what
# branch tracking needs (the trunk, each branch's remote).
_KEYS = r"^(edda\.|user\.|init\.defaultbranch$|branch\..*\.remote$)"


def read_config(location: RepoLocation) -> Config:
    """All ``edda.*``, ``user.*``, ``init.defaultBranch`` and ``branch.*.remote`` settings, keys lower-cased, values in file order."""
    raw = read_git_output(["config", "-z", "--get-regexp", _KEYS], location.cwd)
    if raw is None:
        return {}  # git exits 1 when nothing matches
    config: Config = {}
    for record in raw.decode("utf-8", "replace").split("\0"):
        if not record:
            continue
        key, _, value = record.partition("\n")
        config.setdefault(key.lower(), []).append(value)
    return config


def get_last(config: Config, key: str, default: str | None = None) -> str | None:
    """The effective (last) value of a single-valued key (any spelling of its case)."""
    values = config.get(key.lower())
    return values[-1] if values else default


def get_bool(config: Config, key: str, default: bool) -> bool:
    value = get_last(config, key)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "yes", "on", "1", ""):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise UsageError(
        f"git config {key} = {value!r} is not a boolean", f"set {key} to true or false"
    )


def get_int(config: Config, key: str, default: int) -> int:
    value = get_last(config, key)
    if value is None:
        return default
    text = value.strip().lower()
    factor = {"k": 1024, "m": 1024**2, "g": 1024**3}.get(text[-1:], 1)
    try:
        number = int(text[:-1] if factor != 1 else text) * factor
    except ValueError:
        raise UsageError(
            f"git config {key} = {value!r} is not a whole number",
            f"set {key} to a number such as 262144 or 256k",
        ) from None
    if number <= 0:
        raise UsageError(f"git config {key} must be positive", f"set {key} to a positive number")
    return number


def repo_scope_id(location: RepoLocation, config: Config) -> str:
    """The repository scope id: ``edda.repo`` or the work tree's directory name."""
    configured = get_last(config, "edda.repo")
    if configured:
        return configured
    if location.work_path is not None:
        return os.path.basename(location.work_path)
    name = os.path.basename(location.common_path)
    return name[:-4] if name.endswith(".git") and len(name) > 4 else name


def user_scope_id(config: Config) -> str | None:
    """The user scope id: ``user.email``, else ``user.name``."""
    return get_last(config, "user.email") or get_last(config, "user.name")


BARE_OK_KEY = "edda.bareOk"  # writing memory in this bare repository is intended


def check_writable(location: RepoLocation, config: Config) -> None:
    """Refuse to write memory into a bare repository unless ``edda.bareOk``
    (set by ``git edda init --bare-ok``): nobody works in a bare repository,
    so memory there is usually a mistake and would follow no checkout. The
    CLI's writing commands and ``gitmem-capture`` ask the same question."""
    if location.is_bare and not get_bool(config, BARE_OK_KEY, False):
        raise UsageError(
            f"{location.git_path} is a bare repository: gitmem does not write memory here"
            " unless told to",
            "if this is meant, run 'git edda init --bare-ok' once",
        )


def limits(config: Config) -> Limits:
    """The validation bounds git config sets: ``edda.maxClockSkew`` (seconds,
    default one day)."""
    from gitmem.records.validate import DEFAULT_SKEW_S, Limits

    return Limits(get_int(config, "edda.maxClockSkew", DEFAULT_SKEW_S))
