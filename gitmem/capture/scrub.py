"""Mask secrets in captured text before anything is stored.

This module runs inside the short-lived capture hook on *every* agent tool
call, so two constraints shape it:

* It imports only the standard library.  Pulling in anything heavier would
  add its import time to every tool call the agent makes.
* Regexes are compiled once (lazily, on first use, then cached at module
  level) and each detector is guarded by a cheap substring prefilter or starts
  with a literal, so a 10 KB string with nothing to mask is scanned in well
  under a millisecond.  Measured with ``timeit`` on CPython 3.11.7:
  roughly 0.15-0.2 ms per ``scrub()`` of 10 KB of ordinary Python source or
  English prose (10 KB of text with no keyword or prefix at all: about
  0.1 ms); compiling every built-in regex once costs about 5 ms and is paid
  on the first ``Scrubber`` only.

Every secret is replaced by ``[REDACTED:<detector>]``.  Key/value detectors
keep the key, separator and quotes and mask only the value; URL credentials
keep the scheme, user and host and mask only the password.

Decisions on debatable cases (the tests pin them down):

* ``api_key_name = "OPENAI_API_KEY"`` is left alone: the key's last component
  is ``name``, not a secret keyword, and the value is an environment-variable
  *name* anyway.  More generally a quoted ALL_CAPS_WITH_UNDERSCORES value
  (``token = "GITHUB_TOKEN"``) is treated as a variable name, not a secret.
* A keyword only counts when it is the whole key or its last component
  (``DB_PASSWORD``, ``userPassword``, ``x-api-key``); ``password_reset_url``,
  ``tokenizer``, ``max_tokens`` and ``get_password()`` never match.
* Unquoted values that look like code references are left alone: calls
  (``get_key()``), subscripts (``os.environ["X"]``), dotted names
  (``self.token``, ``settings.SECRET_KEY``), ``$VAR``/``${VAR}``/``{{ x }}``
  templates, ``None``/``null``/``true``, paths (``PWD=/home/me``), bare
  identifiers followed by ``,``/``)``/``}`` (keyword arguments such as
  ``f(password=pw)``), and type annotations (``password: str``).  A bare word
  is otherwise a literal (``password=hunter2`` is masked), because in env
  files, shell and CLI flags it is one.
* After a plain ``:`` separator an unquoted value followed by more words on
  the same line is only masked when it looks secret-ish (contains a digit or a
  symbol); this keeps prose such as ``Reset password: click the link`` intact
  at the cost of missing unquoted multi-word YAML passwords.
* Overlapping candidates are merged: the earliest start wins (then the
  longest, then the detector listed first), and the replaced span is widened to
  cover everything the overlapping candidates matched so no tail of a secret
  leaks.  A ``Finding`` describes the span actually replaced.
* Text that is already a ``[REDACTED:...]`` marker is never matched again, so
  scrubbing is idempotent.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "Finding",
    "ScrubPatternError",
    "ScrubResult",
    "Scrubber",
    "default_scrubber",
]

_CONFIG_HINT = "fix or remove it in git config edda.scrubPattern / edda.scrubAllow"


@dataclass(frozen=True)
class Finding:
    """One masked secret.

    ``start``/``end`` are offsets into the *original* text of the span that was
    replaced by ``[REDACTED:<detector>]``.
    """

    detector: str
    start: int
    end: int


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text and what was masked in it, in text order."""

    text: str
    findings: tuple[Finding, ...]


class ScrubPatternError(ValueError):
    """An extra or allowlist pattern from configuration is not a valid regex."""


# --------------------------------------------------------------------------
# Small helpers shared by the detectors.
# --------------------------------------------------------------------------

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_LOWER_OR_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")

# Characters that, when directly in front of a token prefix, mean the "token"
# is really the tail of a longer word/blob (e.g. "task-..." is not "sk-...",
# and base64 data can contain "AKIA" by chance).
_WORD = _ALNUM | {"_"}
_WORD_DASH = _WORD | {"-"}
_B64 = _ALNUM | {"+", "/"}
_B64URL = _WORD_DASH | {"+", "/"}

# Marker the scrubber writes; anything already shaped like it is left alone so
# that scrubbing twice is a no-op.
_MARKER_PREFIX = "[REDACTED:"
_MARKER_RE_SRC = r"\[REDACTED:[A-Za-z0-9_.-]*\]"

_Span = tuple[int, int, str]
_Accept = Callable[[re.Match[str], str], _Span | None]


def _left_ok(text: str, start: int, forbidden: frozenset[str]) -> bool:
    """True when the character before ``start`` does not glue the match to a longer word."""
    return start == 0 or text[start - 1] not in forbidden


def _line_rest(text: str, end: int) -> str:
    """The remainder of the line after ``end``, with leading blanks removed."""
    nl = text.find("\n", end)
    return text[end : len(text) if nl < 0 else nl].lstrip(" \t\r")


_NULLISH = frozenset(
    {"", "none", "null", "nil", "undefined", "true", "false", "~", '""', "''", "n/a"}
)
_ENV_NAME_RE_SRC = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
_PATH_RE_SRC = r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*"
_PRINTF_RE_SRC = r"%(?:\([\w.]+\))?[sdrjv]|%[A-Za-z_]\w*%|\{[\w.]*\}|\?|:\w+"
# Names of types: a value after ``password:`` that is one of these is an
# annotation / schema, not a secret.
_TYPE_NAMES = frozenset(
    {
        "str",
        "bytes",
        "string",
        "int",
        "integer",
        "bool",
        "boolean",
        "float",
        "number",
        "object",
        "any",
        "unknown",
        "secretstr",
        "secretbytes",
        "secret",
        "optional",
        "union",
        "char",
        "varchar",
        "text",
        "uuid",
        "buffer",
        "uint8array",
        "list",
        "dict",
        "option",
        "vec",
        "required",
    }
)
# Expression keywords that start the right-hand side of a code assignment
# (``token = await get_token()``); such a value is never a literal secret.
_CODE_WORDS = frozenset(
    {
        "await",
        "new",
        "yield",
        "lambda",
        "typeof",
        "function",
        "async",
        "not",
        "this",
        "self",
        "cls",
        "super",
        "if",
        "else",
        "and",
        "or",
        "in",
        "is",
    }
)
# Words whose presence in a bare identifier value marks it as a variable
# (``password=db_password``, ``token: accessToken``).
_KW_WORDS = ("pass", "pwd", "secret", "key", "token")


@dataclass(frozen=True, slots=True)
class _Compiled:
    """Every regex this module uses, compiled once and shared by all scrubbers."""

    marker: re.Pattern[str]
    env_name: re.Pattern[str]
    path: re.Pattern[str]
    printf: re.Pattern[str]
    code_ident: re.Pattern[str]
    dotted: re.Pattern[str]
    subscript: re.Pattern[str]
    detectors: tuple[_Detector, ...]


@dataclass(frozen=True, slots=True)
class _Detector:
    name: str
    regex: re.Pattern[str]
    # Run the regex only when one of these substrings occurs in the text: a
    # ``str.__contains__`` scan is several times cheaper than a regex scan.
    # Empty means "always run" (the regex then starts with a literal or a
    # small first-character set, which ``re`` scans for quickly).
    hints: tuple[str, ...]
    accept: _Accept


def _whole_or_secret(m: re.Match[str], name: str) -> _Span | None:
    """Span of the ``secret`` group if the pattern has one, else of the whole match."""
    if "secret" in m.re.groupindex:
        s, e = m.span("secret")
    else:
        s, e = m.span()
    if s < 0 or s >= e:
        return None
    return (s, e, name)


def _is_placeholder(value: str, *, allow_paths: bool = True) -> bool:
    """True for values that are obviously not literal secrets.

    Covers empty/null values, templates and variable references, masks such
    as ``****`` or ``...``, environment-variable *names*, printf/format
    placeholders, paths and our own ``[REDACTED:...]`` markers.
    """
    c = _compiled()
    s = value.strip()
    if s.lower() in _NULLISH:
        return True
    if s.startswith((_MARKER_PREFIX, "<", "{{", "%(")):
        return True
    if s[0] == "$" and len(s) > 1 and (s[1] in "{(" or s[1].isalpha() or s[1] == "_"):
        return True
    if "${" in s or "{{" in s or "$(" in s:
        return True
    if all(ch in "*xX.\u2022\u00b7#-" for ch in s):
        return True
    if c.env_name.fullmatch(s) or c.printf.fullmatch(s):
        return True
    return bool(allow_paths and c.path.fullmatch(s))


# --------------------------------------------------------------------------
# Built-in detectors.
# --------------------------------------------------------------------------


def _prefixed(name: str, forbidden: frozenset[str]) -> _Accept:
    """Accept a prefixed-token match unless it is glued to a preceding word."""

    def accept(m: re.Match[str], text: str) -> _Span | None:
        if not _left_ok(text, m.start(), forbidden):
            return None
        return _whole_or_secret(m, name)

    return accept


def _accept_url(m: re.Match[str], text: str) -> _Span | None:
    # The regex is anchored on "://" for speed; require a real scheme before it.
    if m.start() == 0 or text[m.start() - 1] not in _ALNUM:
        return None
    s, e = m.span("secret")
    if _is_placeholder(text[s:e], allow_paths=False):
        return None
    return (s, e, "url-credentials")


def _accept_authorization(m: re.Match[str], text: str) -> _Span | None:
    if not _left_ok(text, m.start(), _ALNUM):
        return None
    s, e = m.span("secret")
    value = text[s:e]
    if len(value) < 8 or _is_placeholder(value, allow_paths=False):
        return None
    # Without an auth scheme the value could be a plain word ("Authorization:
    # required"); only a value with a digit looks like a credential then.
    if m.group("scheme") is None and not any(ch.isdigit() for ch in value):
        return None
    return (s, e, "authorization-header")


def _accept_bearer(m: re.Match[str], text: str) -> _Span | None:
    if not _left_ok(text, m.start(), _ALNUM):
        return None
    s, e = m.span("secret")
    value = text[s:e]
    # Real bearer tokens are random; a digit-free word after "bearer" is prose.
    if not any(ch.isdigit() for ch in value):
        return None
    return (s, e, "bearer-token")


_FAMILIES = {
    "secretaccesskey": "aws-secret-key",
    "password": "password-assignment",
    "passwd": "password-assignment",
    "passphrase": "password-assignment",
    "pwd": "password-assignment",
    "secret": "secret-assignment",
    "secretkey": "secret-assignment",
    "apikey": "api-key-assignment",
    "privatekey": "private-key-assignment",
    "token": "token-assignment",
}


def _family(kw: str) -> str:
    return _FAMILIES[kw.lower().replace("_", "").replace("-", "")]


def _kw_boundary(text: str, i: int) -> bool:
    """The keyword at ``i`` starts a key component (``DB_PASSWORD``, ``userPassword``)."""
    if i == 0:
        return True
    prev = text[i - 1]
    if prev not in _ALNUM:
        return True
    # camelCase: "userPassword", "clientSecret", "authToken".
    return prev in _LOWER_OR_DIGIT and text[i].isupper()


def _secretish(value: str) -> bool:
    """A value with a digit or a symbol; plain words are more likely prose."""
    return any(ch.isdigit() or ch in "!@#$%^&*+=?~_/|.:-" for ch in value)


_QUOTE_GROUPS = ("dq", "sq", "bq", "eq")


def _trim_unquoted(text: str, s: int, e: int) -> int:
    """Drop trailing ``,``/``;``/``:`` and unbalanced closing brackets from an unquoted value."""
    while e > s:
        ch = text[e - 1]
        if ch in ",;:":
            e -= 1
            continue
        pair = {")": "(", "]": "[", "}": "{"}.get(ch)
        if pair is not None:
            seg = text[s:e]
            if seg.count(ch) > seg.count(pair):
                e -= 1
                continue
        break
    return e


def _check_value(
    m: re.Match[str], text: str, family: str, sep: str | None, spaced: bool
) -> _Span | None:
    """Shared value validation for the key/value detectors.

    ``sep`` is the separator (``None`` for CLI flags and XML elements),
    ``spaced`` whether it had blanks on both sides (code style).
    """
    c = _compiled()
    allow_paths = family != "aws-secret-key"
    for g in _QUOTE_GROUPS:
        if m.group(g) is not None:
            s, e = m.span(g)
            value = text[s:e]
            if _is_placeholder(value, allow_paths=allow_paths):
                return None
            # f-strings / template literals interpolate: not a literal.
            if "{" in value and ("f" in (m.group("pfx") or "").lower() or g == "bq"):
                return None
            return (s, e, family)
    s, e = m.span("uv")
    e = _trim_unquoted(text, s, e)
    if e <= s:
        return None
    value = text[s:e]
    if _is_placeholder(value, allow_paths=allow_paths):
        return None
    first = value[0]
    # Structures, YAML block scalars/tags/aliases, @file references.
    if first in "{[(|>!@*&":
        return None
    if "(" in value or c.subscript.match(value) or c.dotted.fullmatch(value):
        return None
    rest = _line_rest(text, e)
    if c.code_ident.fullmatch(value):
        low = value.lower()
        if low in _CODE_WORDS or any(w in low for w in _KW_WORDS):
            return None
        if rest[:1] in (",", ")", "}", "]"):
            return None  # keyword argument / object shorthand in code
        if spaced and rest[:1] and (rest[0] in _WORD or rest[0] in "(.["):
            return None  # ``token = some expression``
    if sep == ":":
        if value.lower() in _TYPE_NAMES:
            return None
        if rest and not rest.startswith(("#", "//")) and not _secretish(value):
            return None
    return (s, e, family)


def _accept_assignment(m: re.Match[str], text: str) -> _Span | None:
    if not _kw_boundary(text, m.start("kw")):
        return None
    sep = m.group("sep")
    ss, se = m.span("sep")
    spaced = ss > 0 and text[ss - 1] in " \t" and se < len(text) and text[se] in " \t"
    plain = ":" if sep == ":" else sep
    return _check_value(m, text, _family(m.group("kw")), plain, spaced)


def _accept_flag(m: re.Match[str], text: str) -> _Span | None:
    if not _left_ok(text, m.start(), _B64URL | {"."}):
        return None
    return _check_value(m, text, _family(m.group("kw")), None, False)


def _accept_xml(m: re.Match[str], text: str) -> _Span | None:
    if not _kw_boundary(text, m.start("kw")):
        return None
    s, e = m.span("xv")
    if _is_placeholder(text[s:e]):
        return None
    return (s, e, _family(m.group("kw")))


# Secret keywords.  Only the *last* component of a key is compared (the
# boundary is checked in ``_kw_boundary``), so ``client_secret``,
# ``access_token`` and ``AWS_SECRET_ACCESS_KEY`` are covered while
# ``password_reset_url`` and ``tokenizer`` are not.
_KW = (
    r"(?P<kw>secret[_-]?access[_-]?key|pass(?:word|wd|phrase)|pwd"
    r"|secret(?:[_-]?key)?|api[_-]?key|private[_-]?key|token)"
)
# A quoted literal, with an optional Python string prefix (r"", b"", f"").
# JSON embedded in a string (\"password\": \"x\") gets its own alternative.
_QUOTED = (
    r"(?P<pfx>[rbuf]{0,2})(?:"
    r'"(?P<dq>(?:[^"\\\n]|\\.)*)"'
    r"|'(?P<sq>(?:[^'\\\n]|\\.)*)'"
    r"|`(?P<bq>[^`\n]*)`"
    r'|\\"(?P<eq>[^"\\\n]*)\\")'
)
# An unquoted value: one whitespace-free run.  ``&`` ends it (URL query
# strings), backslashes end it (escaped text such as "\n").
_UNQUOTED = r"(?P<uv>[^\s'\"`&\\]+)"
_VALUE_BODY = r"(?:" + _QUOTED + "|" + _UNQUOTED + ")"
_VALUE = r"[ \t]*" + _VALUE_BODY
# ``password: str = "x"``: skip a type annotation between ":" and "=".
_ANNOT = r"[A-Za-z_][\w.\[\], |]*?"


def _build() -> _Compiled:
    """Compile every regex; called once, on first use."""
    i = re.IGNORECASE
    detectors: list[_Detector] = []

    def add(name: str, pattern: str, accept: _Accept, hints: tuple[str, ...] = (), flags: int = 0):
        detectors.append(_Detector(name, re.compile(pattern, flags), hints, accept))

    # Order matters only as the final tie-break (same start, same length):
    # specific detectors come before the generic key/value ones.
    add(
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:"
        # Normal case: everything up to the matching END line (also when the
        # newlines are escaped, as in a JSON string).
        r".*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        # Truncated output: mask the header lines and base64 body that follow.
        r"|(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z0-9+/]{0,15}={1,2}"
        r"|(?:Proc-Type|DEK-Info|Comment|Version|Hash):[^\r\n\\]*))*)",
        _prefixed("private-key", frozenset()),
        hints=("PRIVATE KEY",),
        flags=re.DOTALL,
    )
    add(
        "aws-access-key",
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        _prefixed("aws-access-key", _B64),
        hints=("AKIA", "ASIA", "ABIA", "ACCA"),
    )
    add(
        "github-token",
        r"(?:gh[pousr]_[A-Za-z0-9]{30,251}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
        _prefixed("github-token", _WORD),
        hints=("gh", "github_pat_"),
    )
    add(
        "gitlab-token",
        r"(?:gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct)-|GR1348941)"
        r"[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9]{2,})*",
        _prefixed("gitlab-token", _WORD_DASH),
        hints=("gl", "GR1348941"),
    )
    add(
        "anthropic-key",
        r"sk-ant-[A-Za-z0-9_-]{20,}",
        _prefixed("anthropic-key", _WORD_DASH),
        hints=("sk-ant-",),
    )
    add(
        "openai-key",
        # Require a digit: real keys are random, "sk-some-css-class-name" is not.
        r"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",
        _prefixed("openai-key", _WORD_DASH),
        hints=("sk-",),
    )
    add(
        "slack-token",
        r"(?:xox[abeoprs]|xapp)-(?=[A-Za-z0-9-]{10,})[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+",
        _prefixed("slack-token", _WORD_DASH),
        hints=("xox", "xapp-"),
    )
    add(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"(?P<secret>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*)",
        _prefixed("slack-webhook", _WORD),
        hints=("hooks.slack.com",),
    )
    add(
        "stripe-key",
        r"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})(?![A-Za-z0-9])",
        _prefixed("stripe-key", _WORD),
        hints=("_live_", "_test_", "whsec_"),
    )
    add(
        "google-api-key",
        r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        _prefixed("google-api-key", _WORD_DASH),
        hints=("AIza",),
    )
    add(
        "google-oauth-token",
        r"ya29\.[A-Za-z0-9_-]{20,}",
        _prefixed("google-oauth-token", _WORD_DASH),
        hints=("ya29.",),
    )
    add(
        "npm-token",
        r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        _prefixed("npm-token", _WORD),
        hints=("npm_",),
    )
    add(
        "huggingface-token",
        r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])",
        _prefixed("huggingface-token", _WORD),
        hints=("hf_",),
    )
    add(
        "jwt",
        # header.payload.signature; the signature may be empty (alg "none").
        r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
        _prefixed("jwt", _B64URL),
        hints=("eyJ",),
    )
    add(
        "url-credentials",
        # Anchored on "://" (a literal, fast to search); the password may
        # contain "@" and ":", the last "@" before the host wins.
        r"://(?P<user>[^\s:/?#@'\"<>\[\]\\]*):(?P<secret>[^\s/?#'\"<>\\]+)@(?=[A-Za-z0-9\[])",
        _accept_url,
        hints=("://",),
    )
    add(
        "authorization-header",
        r"(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
        r"(?:(?P<scheme>bearer|basic|token|digest|bot|apikey)[ \t]+)?"
        r"(?P<secret>[A-Za-z0-9._~+/=-]+)",
        _accept_authorization,
        flags=i,
    )
    add(
        "bearer-token",
        r"bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
        _accept_bearer,
        flags=i,
    )
    add(
        "assignment",
        _KW + r"(?![A-Za-z0-9_])(?:\\?[\"'])?[ \t]*"
        r"(?P<sep>:[ \t]*" + _ANNOT + r"[ \t]+=(?![=>~])|=>|:=|=(?![=~>])|:(?![:=]))" + _VALUE,
        _accept_assignment,
        flags=i,
    )
    add(
        "cli-flag",
        r"--(?:[A-Za-z0-9]+[-_])*" + _KW + r"(?![A-Za-z0-9_-])[ \t]+(?!-)" + _VALUE_BODY,
        _accept_flag,
        hints=("--",),
        flags=i,
    )
    add(
        "xml-element",
        r"<(?P<tag>[A-Za-z0-9_.:-]*?)" + _KW + r">(?P<xv>[^<\n]{1,1024})</(?P=tag)(?P=kw)>",
        _accept_xml,
        hints=("</",),
        flags=i,
    )

    return _Compiled(
        marker=re.compile(_MARKER_RE_SRC),
        env_name=re.compile(_ENV_NAME_RE_SRC),
        path=re.compile(_PATH_RE_SRC),
        printf=re.compile(_PRINTF_RE_SRC),
        code_ident=re.compile(r"[A-Za-z_][A-Za-z_]*[0-9]{0,2}"),
        # ``self.token``, ``settings.SECRET_KEY``; segments with digits in the
        # middle (``ya29.a0Af...``) are random tokens, not names.
        dotted=re.compile(r"[A-Za-z_][A-Za-z_]*[0-9]{0,2}(?:\.[A-Za-z_][A-Za-z_]*[0-9]{0,2})+"),
        subscript=re.compile(r"[A-Za-z_][\w.]*\["),
        detectors=tuple(detectors),
    )


@functools.cache
def _compiled() -> _Compiled:
    return _build()


# --------------------------------------------------------------------------
# Public API.
# --------------------------------------------------------------------------


def _compile_user(pattern: str, kind: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError) as exc:
        raise ScrubPatternError(
            f"invalid scrub {kind} pattern {pattern!r}: {exc}; {_CONFIG_HINT}"
        ) from exc


class Scrubber:
    """Finds and masks secrets in text.

    ``extra_patterns`` are regexes (from ``git config edda.scrubPattern``)
    reported as detector ``custom``; if a pattern has a named group ``secret``
    only that group is masked.  ``allowlist`` regexes (``edda.scrubAllow``)
    exempt any candidate whose secret text they ``fullmatch``.  Raises
    :class:`ScrubPatternError` if any pattern does not compile.
    """

    __slots__ = ("_allow", "_detectors")

    def __init__(self, extra_patterns: Iterable[str] = (), allowlist: Iterable[str] = ()) -> None:
        """Compile the configured patterns; built-in regexes are compiled once per process."""
        custom = tuple(
            _Detector("custom", _compile_user(p, "extra"), (), _accept_custom)
            for p in extra_patterns
        )
        self._allow: tuple[re.Pattern[str], ...] = tuple(
            _compile_user(p, "allowlist") for p in allowlist
        )
        self._detectors: tuple[_Detector, ...] = _compiled().detectors + custom

    def scrub(self, text: str) -> ScrubResult:
        """Return ``text`` with every detected secret replaced by ``[REDACTED:<detector>]``."""
        if not text:
            return ScrubResult(text, ())
        candidates: list[tuple[int, int, int, str]] = []
        for prio, det in enumerate(self._detectors):
            if det.hints and not any(h in text for h in det.hints):
                continue
            for m in det.regex.finditer(text):
                span = det.accept(m, text)
                if span is not None:
                    s, e, name = span
                    candidates.append((s, -e, prio, name))
        if not candidates:
            return ScrubResult(text, ())
        if self._allow:
            candidates = [
                c
                for c in candidates
                if not any(a.fullmatch(text, c[0], -c[1]) for a in self._allow)
            ]
        if _MARKER_PREFIX in text:
            candidates = _drop_marker_overlaps(text, candidates)
        if not candidates:
            return ScrubResult(text, ())

        # Earliest start wins, then the longest, then the detector listed first;
        # overlapping losers widen the winner's span so nothing leaks.
        candidates.sort()
        merged: list[Finding] = []
        for s, neg_e, _prio, name in candidates:
            e = -neg_e
            if merged and s < merged[-1].end:
                if e > merged[-1].end:
                    merged[-1] = Finding(merged[-1].detector, merged[-1].start, e)
                continue
            merged.append(Finding(name, s, e))

        out: list[str] = []
        pos = 0
        for f in merged:
            out.append(text[pos : f.start])
            out.append(f"[REDACTED:{f.detector}]")
            pos = f.end
        out.append(text[pos:])
        return ScrubResult("".join(out), tuple(merged))

    def scrub_value(self, value: object) -> tuple[object, int]:
        """Recursively scrub every str inside dicts/lists/tuples (dict KEYS are left alone, values scrubbed);
        returns (new value, number of findings). Non-str scalars pass through unchanged.

        Containers without findings are returned as the same object; changed
        containers are rebuilt as plain ``dict``/``list``/``tuple``.  Reference
        cycles are not followed.
        """
        return self._scrub_value(value, set())

    def _scrub_value(self, value: object, active: set[int]) -> tuple[object, int]:
        if isinstance(value, str):
            r = self.scrub(value)
            return (r.text, len(r.findings)) if r.findings else (value, 0)
        if not isinstance(value, dict | list | tuple) or id(value) in active:
            return value, 0
        active.add(id(value))
        try:
            total = 0
            if isinstance(value, dict):
                new_items: list[tuple[object, object]] = []
                for k, v in value.items():
                    nv, n = self._scrub_value(v, active)
                    total += n
                    new_items.append((k, nv))
                return (dict(new_items), total) if total else (value, 0)
            new_seq: list[object] = []
            for v in value:
                nv, n = self._scrub_value(v, active)
                total += n
                new_seq.append(nv)
            if not total:
                return value, 0
            return (tuple(new_seq) if isinstance(value, tuple) else new_seq), total
        finally:
            active.discard(id(value))


def _accept_custom(m: re.Match[str], text: str) -> _Span | None:
    return _whole_or_secret(m, "custom")


def _drop_marker_overlaps(
    text: str, candidates: list[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Remove candidates touching an existing ``[REDACTED:...]`` marker."""
    spans = [m.span() for m in _compiled().marker.finditer(text)]
    if not spans:
        return candidates
    starts = [s for s, _ in spans]
    kept = []
    for c in candidates:
        s, e = c[0], -c[1]
        # The last marker starting before the candidate's end is the only one
        # that can overlap it (markers never overlap each other).
        k = bisect.bisect_left(starts, e) - 1
        if k >= 0 and spans[k][1] > s:
            continue
        kept.append(c)
    return kept


@functools.cache
def default_scrubber() -> Scrubber:
    """The shared scrubber with only the built-in detectors (created once per process)."""
    return Scrubber()
