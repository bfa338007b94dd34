"""Checks of the token and credential rows: is this match a secret, and which part?

Each function is a :data:`~gitmem.capture.scrub.base.Check` named in the
detector table (``gitmem/capture/scrub/table.py``); the key/value rows have
theirs in ``assignments.py``.  A check returns ``(start, end, detector)`` of
the text to mask, or None to reject the match.
"""

from __future__ import annotations

import re

from gitmem.capture.scrub.base import Check, Lazy, Span
from gitmem.capture.scrub.shapes import (
    ALNUM,
    DOTTED,
    WORD,
    is_placeholder,
    left_ok,
    secretish,
    wordlike,
)

_B64_RUN = Lazy(r"[A-Za-z0-9+/]{16}")
_COOKIE_NAME = Lazy(r"[A-Za-z0-9_.!#$%&*+^|~-]+=")
# The command a short option such as "-p" belongs to (``cli_password``).
_CLI_COMMAND = Lazy(
    r"(?:^|(?<=[\s/(\"';|&]))(mysql(?:dump|admin|import|check|show|pump|binlog|sh)?"
    r"|mariadb(?:-?dump|-?admin)?|sshpass|redis-cli|curl"
    r"|mongo(?:sh|dump|restore|export|import|stat|top|files)?|(?:docker|podman)[ \t]+login)(?=\s)"
)
# A .netrc entry up to its "password" (``netrc``): machine HOST or default,
# then login, account or port tokens.
_NETRC_ENTRY = Lazy(r"(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+)*\s+")
_NETRC_LOOKBACK = 256


def openai_key(m: re.Match[str], text: str) -> Span | None:
    """OpenAI and Anthropic keys share the "sk-" scan; the ``ant`` group tells them apart."""
    if m.group("ant") is not None:
        return (m.start(), m.end(), "anthropic-key")
    # Real keys are random and contain digits; "sk-some-long-css-class-name"
    # does not.  Checked here rather than with a look-ahead in the regex so a
    # rejected run is consumed, not rescanned from every later "sk-".
    if not any(ch.isdigit() for ch in m.group()):
        return None
    return (m.start(), m.end(), "openai-key")


def private_key(m: re.Match[str], text: str) -> Span | None:
    # A real key has base64 lines; "-----BEGIN ... PRIVATE KEY-----" quoted in
    # docs or code that looks for such headers has none.
    if _B64_RUN.search(text, m.start() + 16, m.end()) is None:
        return None
    return (m.start(), m.end(), "private-key")


def stripe_key(m: re.Match[str], text: str) -> Span | None:
    # The regex starts at "_live_"/"_test_" (a literal, fast to search for);
    # the two-letter key type in front of it is checked here.
    s = m.start() - 2
    if s < 0 or text[s : s + 2] not in ("sk", "rk", "pk") or not left_ok(text, s, WORD):
        return None
    return (s, m.end(), "stripe-key")


def url_credentials(m: re.Match[str], text: str) -> Span | None:
    # The regex is anchored on "://"; a scheme must come right before it.
    if m.start() == 0 or text[m.start() - 1] not in ALNUM:
        return None
    s, e = m.span("secret")
    if is_placeholder(text[s:e], allow_paths=False):
        return None
    return (s, e, "url-credentials")


def authorization(m: re.Match[str], text: str) -> Span | None:
    if not left_ok(text, m.start(), ALNUM):
        return None
    s, e = m.span("secret")
    value = text[s:e]
    if len(value) < 8 or is_placeholder(value, allow_paths=False):
        return None
    if m.group("scheme") is None:
        # Without an auth scheme the value may be a plain word ("Authorization:
        # required") or code ("authorization = base64.decodebytes(...)"); only
        # a value with a digit that is not a call or attribute path counts.
        if not any(ch.isdigit() for ch in value) or text[e : e + 1] in ("(", "["):
            return None
        if DOTTED.fullmatch(value):
            return None
    return (s, e, "authorization-header")


def bearer(m: re.Match[str], text: str) -> Span | None:
    if not left_ok(text, m.start(), ALNUM):
        return None
    s, e = m.span("secret")
    # Real bearer tokens are random; a digit-free word after "bearer" is prose.
    if not any(ch.isdigit() for ch in text[s:e]):
        return None
    return (s, e, "bearer-token")


def cookie(m: re.Match[str], text: str) -> Span | None:
    """``Cookie: a=1; b=2`` masks every value; ``Set-Cookie: sid=1; Path=/`` the first.

    The value must start with ``name=`` as cookies do, which keeps prose
    (``Cookie: a small file``) and annotations (``cookie: str = ""``) out.
    """
    start = m.start()
    is_set = start >= 4 and text[start - 4 : start].lower() == "set-"
    if not left_ok(text, start - 4 if is_set else start, ALNUM):
        return None
    vs, ve = m.span("secret")
    pair = _COOKIE_NAME.match(text, vs, ve)
    if pair is None:
        return None
    s = pair.end()
    e = vs + len(text[vs:ve].rstrip(" \t"))
    if is_set:
        semi = text.find(";", s, e)
        if semi >= 0:
            e = semi
    e = s + len(text[s:e].rstrip(" \t"))
    if e <= s or is_placeholder(text[s:e], allow_paths=False):
        return None
    # Session cookies are generated; plain words ("Set-Cookie: fig=newton",
    # "Cookie: theme=dark; lang=en") are examples and preferences.
    values = [p.partition("=")[2].strip() for p in text[pair.start() : e].split(";")]
    if all(not v or (wordlike(v) and not secretish(v)) for v in values):
        return None
    return (s, e, "cookie")


# Commands whose short option carries a password: command -> {option: how the
# value may follow it}.  "glued" is ``-pVALUE`` only: ``mysql -p dbname``
# prompts for the password and names a database.
# "pairs" is a cookie list (``curl -b 'sid=…; theme=dark'``): its values are
# masked; a value without "=" names a cookie file.
_GLUED, _ANY, _PAIRS = 1, 2, 3
_MYSQL_LIKE = (
    "mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mysqlpump mysqlbinlog "
    "mysqlsh mariadb mariadb-dump mariadbdump mariadb-admin mariadbadmin"
)
_MONGO = (
    "mongo mongosh mongodump mongorestore mongoexport mongoimport mongostat mongotop mongofiles"
)
_CLI_PASSWORDS: dict[str, dict[str, int]] = {
    **{name: {"p": _GLUED} for name in _MYSQL_LIKE.split()},
    "sshpass": {"p": _ANY},
    "redis-cli": {"a": _ANY},
    "curl": {"u": _ANY, "-user": _ANY, "b": _PAIRS, "-cookie": _PAIRS},  # user:password
    **{name: {"p": _ANY} for name in _MONGO.split()},
    "docker login": {"p": _ANY},
    "podman login": {"p": _ANY},
}
# Every command name above contains one of these.
_CLI_NAMES = ("mysql", "mariadb", "sshpass", "redis-cli", "curl", "mongo", "login")


def cli_password(m: re.Match[str], text: str) -> Span | None:
    """``mysql -pS3cret``, ``sshpass -p S3cret``, ``curl -u user:S3cret``.

    The regex finds the short option; the command it belongs to is the last
    known command name earlier on the same line, after the last ``|``, ``;``
    or ``&&`` (bounded look-back, so long lines stay linear).
    """
    start = m.start()
    lo = max(0, start - 512)
    line = max(lo, text.rfind("\n", lo, start) + 1)
    cut = max(text.rfind("|", line, start), text.rfind(";", line, start))
    cut = max(cut, text.rfind("&&", line, start))
    if cut >= 0:
        line = cut + 1
    # Substring tests first, without copying: most options ("mkdir -p",
    # "ls -a") belong to other commands, and this is much cheaper.
    if not any(text.find(name, line, start) >= 0 for name in _CLI_NAMES):
        return None
    command = _command_before(text, line, start)
    if command is None:
        return None
    flag = m.group("flag")
    how = _CLI_PASSWORDS[command].get(flag)
    sep = m.group("sep")
    if (
        how is None
        or (sep is not None and how == _GLUED)
        or (sep == "=" and flag not in ("-user", "-cookie"))
    ):
        return None
    s, e = m.span("val")
    if text[s] in "'\"":
        s, e = s + 1, e - 1
    elif sep and text[s] == "-":
        return None  # another option: the command prompts (mongosh -p --quiet)
    if flag in ("u", "-user"):
        colon = text.find(":", s, e)
        if colon < 0:
            return None  # no password: curl asks for it
        s = colon + 1
    elif how == _PAIRS:
        pairs = text[s:e]
        equals = pairs.find("=")
        if equals < 0:
            return None  # a cookie file
        values = [p.partition("=")[2].strip() for p in pairs.split(";")]
        if all(not v or (wordlike(v) and not secretish(v)) for v in values):
            return None  # preferences (theme=dark), as in a Cookie: header
        s += equals + 1
    if e <= s or is_placeholder(text[s:e], allow_paths=False):
        return None
    return (s, e, "cli-password")


# The last command found before the previous option looked at: (text, where
# that look ended, the command's position, the command).  The options of one
# long line are judged left to right, so each look reads only the text after
# the previous one ("mysql -pa -pa -pa ..." stays linear).
_LAST_COMMAND: tuple[str, int, int, str | None] = ("", -1, -1, None)


def _command_before(text: str, line: int, start: int) -> str | None:
    """The last known command name in ``text[line:start]``."""
    global _LAST_COMMAND
    known, known_end, at, command = _LAST_COMMAND
    if known is text and line <= known_end <= start:
        # The last command up to known_end; none after ``line`` if it is before.
        begin = max(line, known_end - 32)  # a name the previous end may have cut
        if at < line:
            at, command = -1, None
    else:
        begin, at, command = line, -1, None
    for found in _CLI_COMMAND.finditer(text, begin, start):
        at, command = found.start(1), " ".join(found.group(1).split())  # "docker  login"
    _LAST_COMMAND = (text, start, at, command)
    return command


def literal(name: str) -> Check:
    """A check that masks the row's ``secret`` group as ``name``, unless it
    is a placeholder or a reference (``$PW``, ``<password>``, ``****``)."""

    def check(m: re.Match[str], text: str) -> Span | None:
        s, e = m.span("secret")
        if e <= s or is_placeholder(text[s:e], allow_paths=False):
            return None
        return (s, e, name)

    return check


def netrc(m: re.Match[str], text: str) -> Span | None:
    """``machine HOST login USER password VALUE`` (``.netrc``, also split over
    lines): the value of a ``password`` token in a netrc entry.  Prose
    ("the password field") has no entry before it.  The entry is looked for
    in a bounded window before the match, from the last "machine" or
    "default" in it, so that a text of repeated keywords stays linear."""
    start = m.start()
    lo = max(0, start - _NETRC_LOOKBACK)
    begin = max(text.rfind("machine", lo, start), text.rfind("default", lo, start))
    if begin < 0 or (begin > 0 and not text[begin - 1].isspace()):
        return None
    if _NETRC_ENTRY.fullmatch(text, begin, start) is None:
        return None
    s, e = m.span("secret")
    if is_placeholder(text[s:e], allow_paths=False):
        return None
    return (s, e, "netrc-password")
