"""Mask secrets in captured text before anything is stored.

This module runs inside the short-lived capture hook on *every* agent tool
call, which shapes it:

* It imports only the standard library; anything heavier would add its import
  time to every tool call the agent makes.
* Regexes are compiled once per process (on first use, then cached at module
  level), never per call.  That one-off compile costs 6-7 ms; regexes only
  some inputs need are compiled when first needed.
* Scanning is cheap when nothing matches.  ``re`` finds a pattern's leading
  *literal* fast but crawls through case-insensitive alternations, so every
  token detector starts with a literal, case-insensitive detectors run in
  lower case over a lower-cased copy of the text, and the key/value detectors
  run only at keyword positions found by a few literal-prefixed finders.
  Measured with ``timeit`` (best of 7 x 200 runs, CPython 3.11.7, a loaded
  2-vCPU container): 0.10-0.25 ms per ``scrub()`` of 10 KB with nothing to
  mask (Python source 0.19 ms, prose 0.25 ms, JSON 0.13 ms); the first
  version, built on ``re.IGNORECASE`` alternations, took 1.4 ms.  Each full
  scan costs about 0.1 ms per 256 KB, so detectors share scans where they
  can (Anthropic and OpenAI keys share "sk-"), and a scan's literal should
  not start with a common character (a leading blank tripled one's cost).
* No input makes it quadratic: look-behinds, possessive quantifiers, bounded
  repeats and non-overlapping keyword matches keep pathological text (e.g.
  200 KB of "sk-sk-sk-..." or of PEM header lines) in the tens of
  milliseconds.

Built-in detectors (the names used in markers and findings): ``private-key``
(PEM blocks, also truncated or with escaped newlines), ``aws-access-key``,
``aws-secret-key`` (assigned), ``github-token``, ``gitlab-token``,
``anthropic-key``, ``openai-key``, ``slack-token``, ``slack-webhook``,
``stripe-key``, ``google-api-key``, ``google-oauth-token``, ``npm-token``,
``huggingface-token``, ``jwt``, ``url-credentials``,
``authorization-header``, ``bearer-token``, ``cookie`` (``Cookie:`` and
``Set-Cookie:`` headers), ``cli-password`` (``mysql -pX``, ``sshpass -p X``,
``redis-cli -a X``, ``curl -u user:X``), and for key/value assignments
(``=``, ``:``, ``=>``, ``:=``, JSON/YAML/env/INI, headers such as
``X-Auth-Token:``, ``--flag value``, ``<key>v</key>``, and a compound key
followed by a generated-looking value: ``aws_secret_access_key VALUE``)
``password-assignment`` (password, passwd, passphrase, pwd, pass),
``secret-assignment``, ``api-key-assignment``, ``token-assignment``,
``private-key-assignment`` and ``key-assignment`` (``ENCRYPTION_KEY``,
Azure ``AccountKey``, ``SharedAccessKey``, see ``_KEY_WORDS``).
Configured extra patterns report ``custom``.

:meth:`Scrubber.scrub_value` scrubs dict keys as well as values.

Every secret is replaced by ``[REDACTED:<detector>]``.  Key/value detectors
keep the key, separator and quotes and mask only the value; URL credentials
keep scheme, user and host and mask only the password.

Decisions on debatable cases (``tests/test_scrub.py`` pins them down):

* ``api_key_name = "OPENAI_API_KEY"`` is left alone: a keyword only counts when
  it is the whole key or its *last* component (``DB_PASSWORD``,
  ``userPassword``, ``x-api-key``), and this key ends in ``name``.  Likewise
  ``password_reset_url``, ``tokenizer``, ``max_tokens`` and ``get_password()``
  never match.  Separately, a quoted ALL_CAPS_WITH_UNDERSCORES value
  (``token = "GITHUB_TOKEN"``) is treated as an environment-variable *name*.
* Values that are references rather than literals are left alone: calls
  (``get_key()``), subscripts (``os.environ["X"]``), ``$VAR``/``${VAR}``/
  ``{{ x }}`` templates, ``None``/``null``/``true``/empty, paths
  (``PWD=/home/me``), masks (``****``), ``<placeholder>``, ``file:``/``env:``
  indirections, and identifiers that name a secret (``password=db_password``,
  ``"input_token": "next_token"``).
* Code is not data, but only names made of words are code (``_wordlike``): a
  random token is a literal whatever its shape, so one starting with a
  capital letter is no CamelCase type.  A word-like identifier is a
  reference when it is followed by ``,``/``)``/``}``/``]``/``=`` or an
  operator (``f(password=pw)``), when it is an attribute path without
  random-looking digits (``password=args.password``), after ``:`` when it is
  a type (``password: str``, ``token: AccessToken``), and with an ``=``
  surrounded by blanks when it is an attribute path, a capitalised, snake or
  camel name (``token = Name``, ``key = settings.API_KEY``), up to three
  letters (``token = v``), or any letters-only word assigned to an indented,
  attribute, tuple or declared target (``self.token = nextchar``).  Any
  other bare word is a literal (``password=hunter2``, ``PGPASSWORD=x``, INI
  ``password = changeme`` at the start of its line), because in env files,
  shell, INI and CLI flags it is one.
* After ``:`` an unquoted key needs a blank (YAML) -- ``arn:...:secret:name``
  is data, not a mapping.  An unquoted value followed by more words on the
  line is a passphrase, masked to the end of the line, when it is 2-8 plain
  words none of which is a common prose word (``password: correct horse
  battery staple``); otherwise only its first word is masked, and only when
  that looks secret-ish (a digit, a symbol, or not word-like).  This keeps
  prose such as ``Reset password: click the link`` intact.  The same holds
  for a CLI flag value followed by a word.
* A bare ``PASS:`` is a test result, not a key (``db_pass:`` and ``"pass":``
  are keys), and a ``pass`` value of up to three digits is a counter.
* Overlapping candidates are merged: the earliest start wins, then the longest,
  then the detector listed first; the replaced span is widened to cover
  everything the overlapping candidates matched, so no tail of a secret leaks.
  A :class:`Finding` describes the span actually replaced.
* Text that is already a ``[REDACTED:...]`` marker is never matched again,
  and the output is rescanned until nothing new turns up (masking one secret
  can change the context of its neighbour), so scrubbing is idempotent.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "Finding",
    "ScrubPatternError",
    "ScrubResult",
    "Scrubber",
    "default_scrubber",
]

_CONFIG_HINT = "fix or remove it in git config edda.scrubPattern / edda.scrubAllow"


class _Frozen:
    """Immutable value object with equality, hashing and repr by fields.

    Hand-written instead of ``@dataclass(frozen=True)``: dataclasses imports
    inspect, about 5 ms on every hook process.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Finding(_Frozen):
    """One masked secret.

    ``start``/``end`` are offsets into the *original* text of the span that was
    replaced by ``[REDACTED:<detector>]``.
    """

    __slots__ = ("detector", "end", "start")
    detector: str
    start: int
    end: int

    def __init__(self, detector: str, start: int, end: int) -> None:
        object.__setattr__(self, "detector", detector)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)


class ScrubResult(_Frozen):
    """The scrubbed text and what was masked in it, in text order."""

    __slots__ = ("findings", "text")
    text: str
    findings: tuple[Finding, ...]

    def __init__(self, text: str, findings: tuple[Finding, ...]) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "findings", findings)


class ScrubPatternError(ValueError):
    """An extra or allowlist pattern from configuration is not a valid regex."""


# ---------------------------------------------------------------------------
# Character sets and small helpers.
# ---------------------------------------------------------------------------

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_LOWER_OR_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_WORD = _ALNUM | {"_"}
_WORD_DASH = _WORD | {"-"}
_TAG_CHARS = _WORD_DASH | {".", ":"}
_FLAG_LEFT = frozenset(" \t\r\n\"'`([{=,;|&")

# The marker this module writes.  Anything already shaped like it is left
# alone, which makes scrubbing idempotent.
_MARKER_PREFIX = "[REDACTED:"

_NULLISH = frozenset(
    {"", "none", "null", "nil", "undefined", "true", "false", "~", '""', "''", "n/a"}
)
# Names of types: ``password: str`` is an annotation or schema, not a secret.
_TYPE_NAMES = frozenset(
    [
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
    ]
)
# Words that start the right-hand side of a code assignment
# (``token = await get_token()``); such a value is never a literal secret.
_CODE_WORDS = frozenset(
    [
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
    ]
)
# An identifier value with one of these as a component is a variable
# (``password=db_password``, ``token: accessToken``), not a literal.
_KW_WORDS = frozenset(
    [
        "pass",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "key",
        "keys",
        "apikey",
        "token",
        "tokens",
    ]
)
# "<word>_key" names a secret key for these words (``ENCRYPTION_KEY``, Azure
# ``AccountKey``, ``SharedAccessKey``); a bare "key" or ``primary_key``,
# ``sort_key``, ``public_key`` do not.  ``secret_key`` is found as "secret".
# Keep them lower case and letters only (``_key_start`` relies on it).
_KEY_WORDS = (
    "api",
    "private",
    "encryption",
    "decryption",
    "signing",
    "master",
    "account",
    "storage",
    "access",
    "shared",
    "app",
    "auth",
    "admin",
    "hmac",
    "jwt",
    "aes",
    "crypto",
    "license",
    "subscription",
)
# Words that make a run of unquoted words prose rather than a passphrase
# (``password: see the wiki``, ``token: expired for user bob``).
_PROSE_TEXT = (
    "a an the to of in on at by for with from into onto via per and or but nor not no is "
    "are was were be been being am it its this that these those there here as if then "
    "than so such you your we our us i my me he she they them his her their who whom "
    "which what when where why how will would can could should must may might shall do "
    "does did done has have had see use used using click enter set get go all any each "
    "every some more most other only also just now again about after before during up "
    "down out over under until while because once very too required optional missing "
    "invalid incorrect expired empty unset changed reset updated saved accepted rejected "
    "denied failed ok yes"
)
_PROSE_WORDS = frozenset(_PROSE_TEXT.split())
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# An identifier value followed by one of these is part of a code expression
# (``f(is_first_token=offset == 0)``), not a literal.  Only symbols: words
# such as "and" or "if" also follow real secrets in prose.
_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "+ ", "* ", "% ", "? ")

_Span = tuple[int, int, str]
_Accept = Callable[[re.Match[str], str], _Span | None]


def _left_ok(text: str, start: int, forbidden: frozenset[str]) -> bool:
    """True unless the character before ``start`` glues the match to a longer word."""
    return start == 0 or text[start - 1] not in forbidden


def _line_rest(text: str, end: int) -> str:
    """The start of the rest of the line after ``end``, without leading blanks.

    Callers only look at its first characters; the window is bounded so that
    many keywords on one huge line (minified JSON) stay linear.
    """
    window = text[end : end + 64]
    nl = window.find("\n")
    return (window if nl < 0 else window[:nl]).lstrip(" \t\r")


def _secretish(value: str) -> bool:
    """Contains a digit or a symbol; a plain word is more likely prose."""
    return any(ch.isdigit() or ch in "!@#$%^&*+=?~_/|.:-" for ch in value)


def _wordlike(value: str) -> bool:
    """``value`` reads as words a person chose (``RSAPrivateKey``, ``user_input``,
    ``changeme``, ``OAuth2Token``), not as generated characters.

    The code and prose rules below keep names and words; without this test a
    random token that happens to start with a capital letter passed for a
    CamelCase type (``password: Xk3dQ...`` was kept).  Words are few, each of
    a word's length, pronounceable (a vowel, no five consonants in a row),
    never a letter three times in a row, with at most one digit group; one
    odd part (an acronym, a two-letter part, ``Http``) is tolerated.  A random
    mixed-case string splits into many short or unpronounceable humps, and a
    random one-case string is one run longer than any word.
    """
    if len(value) > 40 or not value[:1].isalpha():
        return False
    c = _compiled()
    parts = c.words.findall(value)
    if not parts or len(parts) > 6:
        return False
    mixed = not value.isupper()
    odd = digits = 0
    for part in parts:
        if part.isdigit():
            digits += 1
            continue
        low = part.lower()
        if len(part) > 15 or c.tripled.search(low):
            return False
        if (
            len(part) <= 2
            or (mixed and part.isupper() and len(parts) > 1)
            or c.consonants.search(low)
            or not any(ch in "aeiouy" for ch in low)
        ):
            odd += 1
    if digits > 1:
        return False
    return odd == 0 or (odd == 1 and (len(parts) > 1 or len(value) <= 3))


def _code_name(value: str) -> bool:
    """A name code assigns from (``token = Name``, ``password = user_input``).

    Only letters and underscores, word-like, and shaped as code names are:
    capitalised, snake_case or camelCase.  A single lower-case word is read
    as a literal (``password = changeme`` in an INI file).
    """
    if not value.replace("_", "").isalpha() or not _wordlike(value):
        return False
    return value[0].isupper() or "_" in value.strip("_") or not value.islower()


def _type_name(value: str) -> bool:
    """A CamelCase type after ``:`` (``token: AccessToken``), made of words.

    Digits make a literal: the types that have them (``Ed25519PrivateKey``)
    name a secret and are kept by ``_names_a_secret`` already.
    """
    return value.isalpha() and bool(_compiled().camel_type.fullmatch(value)) and _wordlike(value)


def _passphrase_end(text: str, s: int) -> int | None:
    """End of an unquoted multi-word value starting at ``s``, or None.

    ``password: correct horse battery staple`` (YAML, INI): the rest of the
    line, up to a `` #`` comment or a quote, is 2-8 plain words none of which
    is a common prose word.  Prose after a key (``password: see the wiki``)
    nearly always has one.
    """
    window = text[s : s + 256]
    cut = len(window)
    for stop in ("\n", " #", "\t#", '"', "'", "`", "\\"):
        i = window.find(stop)
        if 0 <= i < cut:
            cut = i
    if cut == len(window) == 256:
        return None  # no line end in sight: not a short value
    line = window[:cut].rstrip(" \t\r")
    words = line.split()
    if not 2 <= len(words) <= 8:
        return None
    pword = _pass_word()
    for word in words:
        if not pword.fullmatch(word) or word.lower() in _PROSE_WORDS:
            return None
    return s + len(line)


# How a detector's regex is applied (see ``Scrubber.scrub``).
_ON_TEXT = 0  # regex.finditer(text); the pattern starts with a literal
_ON_LOWER = 1  # regex.finditer(lower-cased text); lower-case pattern starting with a literal
_AT_KEYWORD = 2  # regex.match(lower-cased text, pos) at each secret keyword


class _Lazy:
    """A regex compiled on first use.

    Compiling every regex of this module took about 8 ms of each hook
    process, while a typical tool call needs a handful of them: detectors
    are skipped when their literal needles are absent (``_Detector``), and the
    helpers of the accept functions run only on candidates.
    """

    __slots__ = ("_flags", "_pattern", "_regex")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._regex: re.Pattern[str] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._regex = re.compile(self._pattern, self._flags)
        return self._regex

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        return self.regex.finditer(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.regex.match(text, pos)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.regex.search(text, pos, endpos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.regex.fullmatch(text)

    def findall(self, text: str) -> list[str]:
        return self.regex.findall(text)

    def subn(self, repl: str, text: str) -> tuple[str, int]:
        return self.regex.subn(repl, text)


class _Detector:
    """One detector: a compiled regex, how to apply it, and a match validator.

    ``re`` searches quickly for a pattern's leading *literal*, but scans
    slowly for case-insensitive alternations (an earlier version spent 1.4 ms
    per 10 KB on those).  So case-insensitive detectors are written in lower
    case and run on a lower-cased copy of the text (same offsets), and the
    key/value detectors, whose keys are an alternation, only run at the keyword
    positions found once per call by a few literal-prefixed finders.
    """

    __slots__ = ("accept", "mode", "name", "needles", "regex")

    def __init__(
        self,
        name: str,
        regex: re.Pattern[str] | _Lazy,
        accept: _Accept,
        mode: int,
        needles: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.regex = regex
        self.accept = accept
        self.mode = mode
        # Literals one of which every match contains (in the text it runs on):
        # without them the detector is skipped, and never even compiled.
        self.needles = needles


class _Compiled:
    """Every regex this module needs, compiled once and shared by all scrubbers."""

    __slots__ = (
        "attr_path",
        "b64_run",
        "camel_type",
        "consonants",
        "detectors",
        "dotted",
        "env_name",
        "ident",
        "keyword_finders",
        "marker",
        "path",
        "printf",
        "tripled",
        "words",
    )

    def __init__(self, detectors: tuple[_Detector, ...]) -> None:
        self.detectors = detectors
        # Secret keywords (see ``_KW``), each found by a regex that starts with
        # a literal and rejects "tokens"/"keyword"/"password_reset" in C.
        # "key" only counts as "api_key"/"private_key" and friends; fixed-width
        # look-behinds check that without giving up the literal prefix.
        # A keyword at the end of its line (Python's ``pass``, ``return
        # token``) has no value after it; skipping it here saves the three
        # key/value regexes a call each.
        end = r"(?![a-z0-9_])(?![ \t]*(?:\r?\n|$))"
        # (literal every match starts with, finder)
        self.keyword_finders = tuple(
            (p[:3], _Lazy(p + end))
            for p in (
                r"pass(?:word|wd|phrase)?",
                r"pwd",
                r"secret(?:[_-]?access[_-]?key|[_-]?key)?",
                r"token",
                # A "key" right after a quote or blank (JSON's "key") fails
                # the first look-behind instead of trying all of them.
                # "<word>_key": the word before it is checked in
                # ``_Scan.keywords`` (a look-behind per word made this regex
                # the slowest to compile, on every hook process).
                r"key(?<=[a-z_-]key)",
            )
        )
        self.marker = _Lazy(r"\[REDACTED:[A-Za-z0-9_.-]*\]")
        self.env_name = _Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
        self.path = _Lazy(r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*")
        self.printf = _Lazy(r"%(?:\([\w.]+\))?[sdrjv]|%[A-Za-z_]\w*%|\{[\w.]*\}|\?|:\w+")
        ident = r"[A-Za-z_][A-Za-z0-9_]*"
        self.ident = _Lazy(ident)
        self.dotted = _Lazy(ident + r"(?:\." + ident + r")+")
        # Attribute paths as people write them (``args.password``); segments
        # with digits inside (``ya29.a0Af3x...``) are random tokens instead.
        name = r"[A-Za-z_][A-Za-z_]*[0-9]{0,2}"
        self.attr_path = _Lazy(name + r"(?:\." + name + r")+")
        # CamelCase type names with at least two humps (``RSAPrivateKey``).
        self.camel_type = _Lazy(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*")
        self.b64_run = _Lazy(r"[A-Za-z0-9+/]{16}")
        # Components of snake_case / camelCase / UPPER_CASE identifiers.
        self.words = _Lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
        self.consonants = _Lazy(r"[b-df-hj-np-tv-xz]{5}")
        self.tripled = _Lazy(r"(.)\1\1")


# Regexes only some inputs need, compiled on first use rather than on every
# hook process.


@functools.cache
def _path_parts() -> re.Pattern[str]:
    return re.compile(r"[/~._@+-]+")


@functools.cache
def _pass_word() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z][A-Za-z0-9'-]{0,23}")


@functools.cache
def _cookie_name() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9_.!#$%&*+^|~-]+=")


@functools.cache
def _cli_command() -> re.Pattern[str]:
    """The command a short option such as "-p" belongs to (``_accept_cli_password``)."""
    return re.compile(
        r"(?:^|(?<=[\s/(\"';|&]))(mysql(?:dump|admin|import|check|show|pump|binlog|sh)?"
        r"|mariadb(?:-?dump|-?admin)?|sshpass|redis-cli|curl)(?=\s)"
    )


def _is_placeholder(value: str, *, allow_paths: bool = True) -> bool:
    """True for values that are obviously not literal secrets.

    Empty/null values, templates and variable references, masks such as
    ``****`` or ``...``, environment-variable *names*, printf/format
    placeholders, paths and this module's own ``[REDACTED:...]`` markers.
    """
    c = _compiled()
    s = value.strip()
    if s.lower() in _NULLISH:
        return True
    if s.startswith((_MARKER_PREFIX, "<", "{{", "%(")):
        return True
    if s[0] == "$" and len(s) > 1 and (s[1] in "{(_" or s[1].isalpha()):
        return True
    if "${" in s or "{{" in s or "$(" in s:
        return True
    if all(ch in "*xX.\u2022\u00b7#-" for ch in s):
        return True
    # An environment-variable *name* is made of words (GITHUB_TOKEN); a random
    # upper-case token with underscores is not.
    if (c.env_name.fullmatch(s) and _wordlike(s)) or c.printf.fullmatch(s):
        return True
    # Several format placeholders and punctuation ("%s:%s", "{user}:{pw}").
    if "%" in s or "{" in s:
        rest, n = c.printf.subn("", s)
        if n and not any(ch.isalnum() for ch in rest):
            return True
    if not (allow_paths and c.path.fullmatch(s)):
        return False
    # A path names its parts with words ("/run/secrets/db", "~/.ssh/id_ed25519");
    # a base64 token that happens to start with "/" has random ones.
    return all(not part or part.isdigit() or _wordlike(part) for part in _path_parts().split(s))


def _whole_or_secret(m: re.Match[str], name: str) -> _Span | None:
    """Span of the ``secret`` group if the pattern has one, else of the whole match."""
    if "secret" in m.re.groupindex:
        s, e = m.span("secret")
    else:
        s, e = m.span()
    if s < 0 or s >= e:
        return None
    return (s, e, name)


# ---------------------------------------------------------------------------
# Match validators.
# ---------------------------------------------------------------------------


def _named(name: str) -> _Accept:
    """Accept every match as detector ``name`` (the regex did all the checking)."""

    def accept(m: re.Match[str], text: str) -> _Span | None:
        return _whole_or_secret(m, name)

    return accept


def _accept_openai(m: re.Match[str], text: str) -> _Span | None:
    if m.group("ant") is not None:
        return (m.start(), m.end(), "anthropic-key")
    # Real keys are random and contain digits; "sk-some-long-css-class-name"
    # does not.  Checked here rather than with a look-ahead in the regex so a
    # rejected run is consumed, not rescanned from every later "sk-".
    if not any(ch.isdigit() for ch in m.group()):
        return None
    return (m.start(), m.end(), "openai-key")


def _accept_private_key(m: re.Match[str], text: str) -> _Span | None:
    # A real key has base64 lines; "-----BEGIN ... PRIVATE KEY-----" quoted in
    # docs or code that looks for such headers has none.
    if _compiled().b64_run.search(text, m.start() + 16, m.end()) is None:
        return None
    return (m.start(), m.end(), "private-key")


def _accept_stripe(m: re.Match[str], text: str) -> _Span | None:
    # The regex starts at "_live_"/"_test_" (a literal, fast to search for);
    # the two-letter key type in front of it is checked here.
    s = m.start() - 2
    if s < 0 or text[s : s + 2] not in ("sk", "rk", "pk") or not _left_ok(text, s, _WORD):
        return None
    return (s, m.end(), "stripe-key")


def _accept_url(m: re.Match[str], text: str) -> _Span | None:
    # The regex is anchored on "://"; a scheme must come right before it.
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
    if m.group("scheme") is None:
        # Without an auth scheme the value may be a plain word ("Authorization:
        # required") or code ("authorization = base64.decodebytes(...)"); only
        # a value with a digit that is not a call or attribute path counts.
        if not any(ch.isdigit() for ch in value) or text[e : e + 1] in ("(", "["):
            return None
        if _compiled().dotted.fullmatch(value):
            return None
    return (s, e, "authorization-header")


def _accept_bearer(m: re.Match[str], text: str) -> _Span | None:
    if not _left_ok(text, m.start(), _ALNUM):
        return None
    s, e = m.span("secret")
    # Real bearer tokens are random; a digit-free word after "bearer" is prose.
    if not any(ch.isdigit() for ch in text[s:e]):
        return None
    return (s, e, "bearer-token")


_FAMILIES = {
    "secretaccesskey": "aws-secret-key",
    "pass": "password-assignment",
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
    # Every "<word>_key" other than the named ones (ENCRYPTION_KEY, AccountKey).
    return _FAMILIES.get(kw.replace("_", "").replace("-", ""), "key-assignment")


def _kw_boundary(text: str, i: int) -> bool:
    """The keyword at ``i`` starts a key component (``DB_PASSWORD``, ``userPassword``)."""
    if i == 0:
        return True
    prev = text[i - 1]
    if prev not in _ALNUM:
        return True
    # camelCase ("userPassword", "clientSecret", "authToken") and glued
    # upper-case env names ("PGPASSWORD", "HTTPToken").
    return text[i].isupper() and (prev in _LOWER_OR_DIGIT or prev.isupper())


def _trim_unquoted(text: str, s: int, e: int) -> int:
    """Drop trailing ``,;:`` and unbalanced closing brackets from an unquoted value."""
    seg = text[s:e]
    n = len(seg)
    # Trimming only removes closers and punctuation, so opener counts are fixed.
    excess = {ch: seg.count(ch) - seg.count(op) for ch, op in _CLOSERS.items()}
    while n:
        ch = seg[n - 1]
        if ch in ",;:":
            n -= 1
        elif excess.get(ch, 0) > 0:
            excess[ch] -= 1
            n -= 1
        else:
            break
    return s + n


_QUOTE_GROUPS = ("dq", "sq", "bq", "eq")


def _names_a_secret(value: str) -> bool:
    """An identifier with a secret word as a component (``db_password``, ``nextToken``).

    Components, not substrings: a random ``FAKEkey0042`` is a value.  Names
    have a few components and at most one digit group; a random token with a
    "Key" hump among a dozen others is a value too.
    """
    parts = _compiled().words.findall(value)
    if len(parts) > 6 or sum(p.isdigit() for p in parts) > 1:
        return False
    return any(p.lower() in _KW_WORDS for p in parts)


def _check_value(
    m: re.Match[str],
    text: str,
    family: str,
    sep: str | None,
    spaced: bool,
    code_target: bool = False,
) -> _Span | None:
    """Validate the value of a key/value match and return the span to mask.

    ``sep`` is ``"="`` (also ``=>``, ``:=``), ``":"``, or ``None`` for CLI
    flags; ``spaced`` says an ``=`` had blanks on both sides, as code does;
    ``code_target`` says the key is an assignment target in code (see
    ``_code_target``).
    """
    c = _compiled()
    allow_paths = family != "aws-secret-key"
    for g in _QUOTE_GROUPS:
        if m.group(g) is not None:
            s, e = m.span(g)
            value = text[s:e]
            if _is_placeholder(value, allow_paths=allow_paths):
                return None
            # f-strings and JS template literals interpolate: not a literal.
            if "{" in value and (g == "bq" or "f" in m.group("pfx")):
                return None
            # A quoted identifier naming a secret is a name, not its value
            # ("input_token": "next_token", PASSWORD = "password").
            if c.ident.fullmatch(value) and _names_a_secret(value):
                return None
            return (s, e, family)
    s, e = m.span("uv")
    e = _trim_unquoted(text, s, e)
    if e <= s:
        return None
    value = text[s:e]
    if _is_placeholder(value, allow_paths=allow_paths):
        return None
    # Structures, YAML block scalars/tags/aliases/anchors, @file references,
    # and file:/env: indirections as in AWS CLI arguments.
    if value[0] in "{[(|>!@*&" or value.startswith(("file:", "fileb:", "env:")):
        return None
    if "(" in value or "[" in value:
        return None  # call or subscript
    rest = _line_rest(text, e)
    if sep is not None and rest and not _secretish(value):
        end = _passphrase_end(text, s)
        if end is not None:
            return (s, end, family)  # ``password: correct horse battery staple``
    if c.ident.fullmatch(value) or c.dotted.fullmatch(value):
        if value.lower() in _CODE_WORDS or _names_a_secret(value):
            return None
        if _wordlike(value) and (
            rest[:1] in (",", ")", "}", "]", "=") or rest.startswith(_OPERATORS)
        ):
            return None  # keyword argument, shorthand, chained assignment, expression
        if spaced and (
            "." in value
            or _code_name(value)
            or (value.isalpha() and (len(value) <= 3 or code_target) and _wordlike(value))
        ):
            # code: ``token = Name``, ``key = settings.API_KEY``,
            # ``self.token = nextchar``, ``token = v``; a lower-case word at
            # the start of a line (``password = changeme`` in an INI file), a
            # value with digits or a random token stays a literal.
            return None
        if sep == ":" and (rest[:1] in ("=", "|") or _type_name(value)):
            return None  # annotation: ``token: Token``, ``key: RSAPrivateKey | None``
        if c.attr_path.fullmatch(value):
            return None  # ``password=args.password``; random tokens have digits inside
    if sep == ":" and value.lower() in _TYPE_NAMES:
        return None
    if (
        not _secretish(value)
        and _wordlike(value)
        and (
            (sep == ":" and rest and not rest.startswith(("#", "//")))
            or (sep is None and rest[:1].isalpha())
        )
    ):
        return None  # prose: "password: click the link", "--token to use"
    return (s, e, family)


_DECLARATIONS = ("const", "let", "var", "val", "my", "local", "auto", "final", "static")


def _code_target(text: str, start: int) -> bool:
    """The key at ``start`` is an assignment target in code, not a config key.

    Config keys (INI, env files, ``.pypirc``) start their line; code assigns
    to attributes (``self.token = nextchar``), tuples (``a, token = pair``),
    declared names (``let token = tok``) and indented locals.
    """
    j = start
    while j > 0 and text[j - 1] in _WORD_DASH:
        j -= 1
    line = text.rfind("\n", max(0, j - 256), j) + 1
    before = text[line:j]
    if not before:
        return False
    if not before.strip(" \t") or before.endswith("."):
        return True  # indented, or an attribute
    head = before.rstrip(" \t")
    return head.endswith(",") or head.rsplit(None, 1)[-1] in _DECLARATIONS


def _accept_assignment(m: re.Match[str], text: str) -> _Span | None:
    ss, se = m.span("sep")
    kw = m.group("kw")
    if text[ss:se] == ":":
        # YAML needs a blank after ":" and JSON quotes its keys, so
        # "arn:aws:...:secret:name" or "token:abc" inside data is no mapping.
        if m.group("kq") is None and m.group("uv") is not None and text[se : se + 1] not in " \t":
            return None
        # A bare "PASS:" is a test result ("PASS: test_parse.py"), not a key;
        # "db_pass: x" and JSON's "pass": "x" are keys.
        if kw == "pass" and m.group("kq") is None and not _has_key_prefix(text, m.start()):
            return None
        span = _check_value(m, text, _family(kw), ":", False)
    else:
        spaced = text[ss - 1] in " \t" and text[se : se + 1] in (" ", "\t")
        code = spaced and m.group("uv") is not None and _code_target(text, m.start())
        span = _check_value(m, text, _family(kw), "=", spaced, code)
    # "pass" also ends counters in code (``n_pass = 3``); a password has more.
    if span is not None and kw == "pass":
        value = text[span[0] : span[1]]
        if len(value) < 4 and value.isdigit():
            return None
    return span


def _has_key_prefix(text: str, start: int) -> bool:
    """The keyword at ``start`` is the last component of a longer key (``db_pass``)."""
    return start > 0 and text[start - 1] in _WORD_DASH


def _accept_flag(m: re.Match[str], text: str) -> _Span | None:
    # The keyword is the last component of a "--flag" (or "-flag") followed by
    # its value, or of a compound key followed by a value that looks generated:
    # ``aws configure set aws_secret_access_key VALUE``.
    j = m.start()
    while j > 0 and text[j - 1] in _WORD_DASH:
        j -= 1
    if j > 0 and text[j - 1] not in _FLAG_LEFT:
        return None
    if text.startswith("-", j):
        return _check_value(m, text, _family(m.group("kw")), None, False)
    key = text[j : m.end("kw")]
    if "_" not in key and "-" not in key:
        return None  # a bare word ("password hunter2", "token 3 of 5") is prose
    span = _check_value(m, text, _family(m.group("kw")), None, False)
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if len(value) < 8 or (_wordlike(value) and not _secretish(value)):
        return None  # "the api_key parameter", "client_secret VARCHAR"
    return span


# Commands whose short option carries a password: command -> {option: how the
# value may follow it}.  "glued" is ``-pVALUE`` only: ``mysql -p dbname``
# prompts for the password and names a database.
_GLUED, _ANY = 1, 2
_CLI_PASSWORDS: dict[str, dict[str, int]] = {
    **{
        name: {"p": _GLUED}
        for name in (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlshow",
            "mysqlpump",
            "mysqlbinlog",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadbdump",
            "mariadb-admin",
            "mariadbadmin",
        )
    },
    "sshpass": {"p": _ANY},
    "redis-cli": {"a": _ANY},
    "curl": {"u": _ANY, "-user": _ANY},  # user:password
}
# Every command name above contains one of these.
_CLI_NAMES = ("mysql", "mariadb", "sshpass", "redis-cli", "curl")


def _accept_cli_password(m: re.Match[str], text: str) -> _Span | None:
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
    command = None
    for found in _cli_command().finditer(text[line:start]):
        command = found.group(1)
    if command is None:
        return None
    how = _CLI_PASSWORDS[command].get(m.group("flag"))
    sep = m.group("sep")
    if (
        how is None
        or (sep is not None and how == _GLUED)
        or (sep == "=" and m.group("flag") != "-user")
    ):
        return None
    s, e = m.span("val")
    if text[s] in "'\"":
        s, e = s + 1, e - 1
    if m.group("flag") in ("u", "-user"):
        colon = text.find(":", s, e)
        if colon < 0:
            return None  # no password: curl asks for it
        s = colon + 1
    if e <= s or _is_placeholder(text[s:e], allow_paths=False):
        return None
    return (s, e, "cli-password")


def _accept_cookie(m: re.Match[str], text: str) -> _Span | None:
    """``Cookie: a=1; b=2`` masks every value; ``Set-Cookie: sid=1; Path=/`` the first.

    The value must start with ``name=`` as cookies do, which keeps prose
    (``Cookie: a small file``) and annotations (``cookie: str = ""``) out.
    """
    start = m.start()
    is_set = start >= 4 and text[start - 4 : start].lower() == "set-"
    if not _left_ok(text, start - 4 if is_set else start, _ALNUM):
        return None
    vs, ve = m.span("secret")
    pair = _cookie_name().match(text, vs, ve)
    if pair is None:
        return None
    s = pair.end()
    e = vs + len(text[vs:ve].rstrip(" \t"))
    if is_set:
        semi = text.find(";", s, e)
        if semi >= 0:
            e = semi
    e = s + len(text[s:e].rstrip(" \t"))
    if e <= s or _is_placeholder(text[s:e], allow_paths=False):
        return None
    # Session cookies are generated; plain words ("Set-Cookie: fig=newton",
    # "Cookie: theme=dark; lang=en") are examples and preferences.
    values = [p.partition("=")[2].strip() for p in text[pair.start() : e].split(";")]
    if all(not v or (_wordlike(v) and not _secretish(v)) for v in values):
        return None
    return (s, e, "cookie")


def _accept_xml(m: re.Match[str], text: str) -> _Span | None:
    # <db_password>value</db_password>: the keyword ends the element name.
    j = m.start()
    while j > 0 and text[j - 1] in _TAG_CHARS:
        j -= 1
    if j == 0 or text[j - 1] != "<":
        return None
    tag = text[j : m.end("kw")]
    if not text.startswith(tag + ">", m.end()):
        return None
    s, e = m.span("xv")
    if _is_placeholder(text[s:e]):
        return None
    return (s, e, _family(m.group("kw")))


def _accept_custom(m: re.Match[str], text: str) -> _Span | None:
    return _whole_or_secret(m, "custom")


# ---------------------------------------------------------------------------
# Built-in detectors.
# ---------------------------------------------------------------------------

# Secret keywords, in lower case (the key/value regexes run on lower-cased
# text).  Only the *last* component of a key counts -- ``_kw_boundary`` checks
# the start, ``(?![a-z0-9_])`` the end -- so ``client_secret``,
# ``access_token`` and ``AWS_SECRET_ACCESS_KEY`` match while
# ``password_reset_url`` and ``tokenizer`` do not.
_KW = (
    r"(?P<kw>secret[_-]?access[_-]?key|pass(?:word|wd|phrase)?|pwd"
    r"|secret(?:[_-]?key)?|(?:" + "|".join(_KEY_WORDS) + r")[_-]?key|token)"
)
# A quoted literal with an optional Python string prefix (r"", b"", f"").
# JSON embedded in a string (\"password\": \"x\") has its own alternative.
# Lengths are bounded so that many keywords followed by an unterminated
# quote on one huge line cannot make the scan quadratic.
_QUOTED = (
    r"(?P<pfx>[rbuf]{0,2})(?:"
    r'"(?P<dq>(?:[^"\\\n]|\\.){0,8192})"'
    r"|'(?P<sq>(?:[^'\\\n]|\\.){0,8192})'"
    r"|`(?P<bq>[^`\n]{0,8192})`"
    r'|\\"(?P<eq>[^"\\\n]{0,8192})\\")'
)
# An unquoted value: one whitespace-free run.  ``&`` and ``;`` end it (URL
# query strings, connection strings, shell), so does a backslash (escaped
# text such as a literal "\n").
_VALUE = r"(?:" + _QUOTED + r"|(?P<uv>[^\s'\"`&;\\]+))"
# Separators: "=", ":", "=>", ":=", and "name: Type = value" annotations.
_SEP = r"(?P<sep>:[ \t]*[a-z_][\w.\[\], |]{0,80}?[ \t]+=(?![=>~])|=>|:=|=(?![=~>])|:(?![:=]))"


def _build() -> _Compiled:
    """Compile every built-in detector; runs once per process."""
    dets: list[_Detector] = []

    def add(name: str, pattern: str, accept: _Accept, needles: tuple[str, ...]) -> None:
        dets.append(_Detector(name, _Lazy(pattern), accept, _ON_TEXT, needles))

    def add_lower(
        name: str,
        pattern: str,
        accept: _Accept,
        mode: int = _ON_LOWER,
        needles: tuple[str, ...] = (),
    ) -> None:
        dets.append(_Detector(name, _Lazy(pattern), accept, mode, needles))

    # The order is the last tie-break (same start and length): specific
    # detectors come before the generic key/value ones.
    add(
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:"
        # Up to the END line, also when newlines are escaped (JSON strings).
        # The body may not run into another BEGIN line: grep output full of
        # headers without END lines would otherwise make this quadratic.
        r"(?:[^-]|-(?!----BEGIN))*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        # Truncated output: the header lines and base64 body that follow.
        r"|(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z0-9+/]{0,15}={1,2}"
        r"|(?:Proc-Type|DEK-Info|Comment|Version|Hash):[^\r\n\\]*))*)",
        _accept_private_key,
        ("-----BEGIN",),
    )
    # Each token regex starts with a literal and then a look-behind that
    # rejects a prefix glued to a longer word or blob ("task-..." is not
    # "sk-...", base64 may contain "AKIA").  Rejecting those inside the regex,
    # not afterwards, keeps a long run such as "sk-sk-sk-..." linear.
    add(
        "aws-access-key",
        r"A(?<![A-Za-z0-9+/]A)(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        _named("aws-access-key"),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    )
    add(
        "github-token",
        r"g(?<![A-Za-z0-9_]g)"
        r"(?:h[pousr]_[A-Za-z0-9]{30,251}|ithub_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
        _named("github-token"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    )
    add(
        "gitlab-token",
        r"gl(?<![A-Za-z0-9_-]gl)(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct)-"
        r"[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9]{2,})*",
        _named("gitlab-token"),
        (
            "glpat-",
            "gldt-",
            "glrt-",
            "glcbt-",
            "glptt-",
            "glft-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glsoat-",
            "glffct-",
        ),
    )
    add(
        "gitlab-token",
        r"GR1348941(?<![A-Za-z0-9_-]GR1348941)[A-Za-z0-9_-]{20,}",
        _named("gitlab-token"),
        ("GR1348941",),
    )
    add(
        # Anthropic and OpenAI keys share one scan for "sk-"; the "ant"
        # group tells them apart.
        "openai-key",
        r"sk-(?<![A-Za-z0-9_-]sk-)(?:(?P<ant>ant-)[A-Za-z0-9_-]{20,}"
        r"|(?!ant-)(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,})",
        _accept_openai,
        ("sk-",),
    )
    add(
        "slack-token",
        r"x(?<![A-Za-z0-9_-]x)(?:ox[abeoprs]|app)-(?=[A-Za-z0-9-]{10})"
        r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+",
        _named("slack-token"),
        ("xox", "xapp-"),
    )
    add(
        "slack-webhook",
        r"hooks\.slack\.com/(?<![A-Za-z0-9_]hooks\.slack\.com/)"
        r"(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*)",
        _named("slack-webhook"),
        ("hooks.slack.com/",),
    )
    add(
        "stripe-key",
        r"_(?:live|test)_[A-Za-z0-9]{10,}(?![A-Za-z0-9])",
        _accept_stripe,
        ("_live_", "_test_"),
    )
    add(
        "stripe-key",
        r"whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{20,}(?![A-Za-z0-9])",
        _named("stripe-key"),
        ("whsec_",),
    )
    add(
        "google-api-key",
        r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        _named("google-api-key"),
        ("AIza",),
    )
    add(
        "google-oauth-token",
        r"ya29\.(?<![A-Za-z0-9_-]ya29\.)[A-Za-z0-9_-]{20,}",
        _named("google-oauth-token"),
        ("ya29.",),
    )
    add(
        "npm-token",
        r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        _named("npm-token"),
        ("npm_",),
    )
    add(
        "huggingface-token",
        r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,}(?![A-Za-z0-9])",
        _named("huggingface-token"),
        ("hf_",),
    )
    add(
        "jwt",
        # header.payload.signature; the signature is empty for alg "none".
        # Possessive quantifiers: a long base64url run without dots fails
        # once instead of backtracking through every split.
        r"eyJ(?<![A-Za-z0-9_+/-]eyJ)[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+",
        _named("jwt"),
        ("eyJ",),
    )
    add(
        "url-credentials",
        # The password may contain "@" and ":"; the last "@" before the host
        # ends it.  A user part is optional (redis://:pass@host).
        r"://(?P<user>[^\s:/?#@'\"<>\[\]\\]*):(?P<secret>[^\s/?#'\"<>\\]+)@(?=[A-Za-z0-9\[])",
        _accept_url,
        ("://",),
    )
    add_lower(
        "authorization-header",
        r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
        r"(?:(?P<scheme>bearer|basic|token|digest|bot|apikey|negotiate|ntlm|aws4-hmac-sha256)"
        r"[ \t]+)?"
        r"(?P<secret>[a-z0-9_.~+/=-]+)",
        _accept_authorization,
        _ON_LOWER,
        ("authorization",),
    )
    add_lower(
        "bearer-token",
        r"bearer[ \t]+(?P<secret>[a-z0-9_.~+/-]{16,}=*)",
        _accept_bearer,
        _ON_LOWER,
        ("bearer",),
    )
    add_lower(
        "cookie",
        r"cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?(?P<secret>[^\r\n\"'\\]{1,8192})",
        _accept_cookie,
        _ON_LOWER,
        ("cookie",),
    )
    add(
        "cli-password",
        # A short option after a blank or quote: "-p", "-u", "-a", "--user".
        # (A leading blank instead of the look-behind: blanks are everywhere
        # in code, and the scan got three times slower.)
        r"-(?<![^\s'\"]-)(?P<flag>-user|[pua])(?P<sep>=|[ \t]+)?"
        r"(?P<val>'[^'\n]{1,512}'|\"[^\"\n]{1,512}\"|[^\s'\"`|;&<>]{1,512})",
        _accept_cli_password,
        ("-p", "-u", "-a"),
    )
    add_lower(
        "key-value",
        _KW + r"(?![a-z0-9_])(?P<kq>\\?[\"'])?[ \t]*" + _SEP + r"[ \t]*" + _VALUE,
        _accept_assignment,
        _AT_KEYWORD,
    )
    add_lower(
        "cli-flag",
        # The value is no option ("--token --verbose", "--password -v"); a
        # long random token may still start with "-".
        _KW + r"(?![a-z0-9_-])[ \t]+(?!-(?:-|[a-z0-9]{0,15}(?:[\s=]|$)))" + _VALUE,
        _accept_flag,
        _AT_KEYWORD,
    )
    add_lower(
        "xml-element",
        _KW + r">(?P<xv>[^<\n]{1,1024})</",
        _accept_xml,
        _AT_KEYWORD,
    )
    return _Compiled(tuple(dets))


@functools.cache
def _compiled() -> _Compiled:
    return _build()


def _lower_same_length(text: str) -> str:
    """``text.lower()`` with offsets preserved.

    A few characters (e.g. U+0130) lower-case to two code points, which would
    shift every later offset; those are kept as they are.
    """
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)


# What the "key" finder backs up over to the keyword's start ("api_" in "api_key").
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def _key_start(low: str, s: int) -> int | None:
    """Start of the "<word>_key" keyword whose "key" is at ``s``, or None.

    ``low`` is lower-cased text.  The word may be glued (``apikey``,
    ``AccountKey``) or joined by ``_``/``-`` (``api_key``, ``x-api-key``).
    """
    i = s - 1 if s > 0 and low[s - 1] in "_-" else s
    j = i
    while j > 0 and i - j < 16 and low[j - 1] in _LOWER:
        j -= 1
    letters = low[j:i]
    for word in _KEY_WORDS:
        if letters.endswith(word):
            return i - len(word)
    return None


class _Scan:
    """Per-call state: the lower-cased text and keyword positions, computed lazily."""

    __slots__ = ("_keywords", "_low", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None
        self._keywords: list[int] | None = None

    @property
    def low(self) -> str:
        if self._low is None:
            self._low = _lower_same_length(self.text)
        return self._low

    def keywords(self) -> list[int]:
        """Start offsets of secret keywords that begin a key component."""
        if self._keywords is None:
            low, text = self.low, self.text
            found: set[int] = set()
            for needle, finder in _compiled().keyword_finders:
                if needle not in low:
                    continue
                for m in finder.finditer(low):
                    s: int | None = m.start()
                    if low.startswith("key", m.start()):
                        s = _key_start(low, m.start())
                    if s is not None and _kw_boundary(text, s):
                        found.add(s)
            self._keywords = sorted(found)
        return self._keywords


# ---------------------------------------------------------------------------
# Public API.
# ---------------------------------------------------------------------------


def _compile_user(pattern: str, kind: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ScrubPatternError(
            f"invalid scrub {kind} pattern {pattern!r}: {exc}; {_CONFIG_HINT}"
        ) from exc


class Scrubber:
    """Finds and masks secrets in text.

    ``extra_patterns`` are regexes (``git config edda.scrubPattern``) reported
    as detector ``custom``; when a pattern has a named group ``secret`` only
    that group is masked.  A candidate whose secret text ``re.fullmatch``-es
    any ``allowlist`` regex (``edda.scrubAllow``) is left unchanged.  Raises
    :class:`ScrubPatternError` if any pattern is not a valid regex.
    """

    __slots__ = ("_allow", "_detectors")

    def __init__(self, extra_patterns: Iterable[str] = (), allowlist: Iterable[str] = ()) -> None:
        """Compile the configured patterns (built-in ones are compiled once per process)."""
        # A lone string is one pattern, not an iterable of one-character ones.
        if isinstance(extra_patterns, str):
            extra_patterns = (extra_patterns,)
        if isinstance(allowlist, str):
            allowlist = (allowlist,)
        custom = tuple(
            _Detector("custom", _compile_user(p, "extra"), _accept_custom, _ON_TEXT)
            for p in extra_patterns
        )
        self._allow: tuple[re.Pattern[str], ...] = tuple(
            _compile_user(p, "allowlist") for p in allowlist
        )
        self._detectors: tuple[_Detector, ...] = _compiled().detectors + custom

    def scrub(self, text: str) -> ScrubResult:
        """Return ``text`` with every detected secret replaced by ``[REDACTED:<detector>]``."""
        findings = self._find(text)
        if not findings:
            return ScrubResult(text, ())
        # Masking changes the context other candidates see (a token that was
        # glued to the tail of a private key stands alone once the key became
        # a marker), so rescan the output until nothing new turns up.  This is
        # what makes scrub() idempotent; it only costs anything when
        # something was found, and one extra pass is the norm.
        for _ in range(_MAX_ROUNDS):
            out, segments = _render(text, findings)
            extra = self._find(out)
            if not extra:
                break
            findings = sorted(findings + _map_back(extra, segments), key=lambda f: f.start)
        else:
            out, _ = _render(text, findings)
        return ScrubResult(out, tuple(findings))

    def _find(self, text: str) -> list[Finding]:
        """Non-overlapping findings in ``text``, sorted by start."""
        if not text:
            return []
        scan = _Scan(text)
        # (start, -end, detector index, name): sorting gives earliest start,
        # then longest, then detector order -- fully deterministic.
        candidates: list[tuple[int, int, int, str]] = []
        for prio, det in enumerate(self._detectors):
            matches: Iterable[re.Match[str]]
            if det.needles:
                hay = text if det.mode == _ON_TEXT else scan.low
                if not any(n in hay for n in det.needles):
                    continue
            if det.mode == _ON_TEXT:
                matches = det.regex.finditer(text)
            elif det.mode == _ON_LOWER:
                matches = det.regex.finditer(scan.low)
            else:
                matches = _match_at(det.regex, scan.low, scan.keywords())
            for m in matches:
                span = det.accept(m, text)
                if span is not None:
                    candidates.append((span[0], -span[1], prio, span[2]))
        if candidates and self._allow:
            candidates = [
                c
                for c in candidates
                if not any(a.fullmatch(text[c[0] : -c[1]]) for a in self._allow)
            ]
        if candidates and _MARKER_PREFIX in text:
            candidates = _drop_marker_overlaps(text, candidates)
        candidates.sort()
        merged: list[Finding] = []
        for s, neg_e, _prio, name in candidates:
            e = -neg_e
            if merged and s < merged[-1].end:
                # Overlap: the earlier/longer candidate keeps its name, but the
                # span grows so no part of the other candidate survives.
                if e > merged[-1].end:
                    merged[-1] = Finding(merged[-1].detector, merged[-1].start, e)
                continue
            merged.append(Finding(name, s, e))
        return merged

    def scrub_value(
        self, value: object, *, on_string: Callable[[str], tuple[str, int]] | None = None
    ) -> tuple[object, int]:
        """Recursively scrub every str inside dicts/lists/tuples, dict keys included;
        returns (new value, number of findings). Non-str scalars pass through unchanged.

        A key that changes keeps its masked form.  When masked keys collide
        with each other or with a key that did not change, the unchanged key
        keeps its name and the later masked ones, in the dict's order, get
        the first free suffix ``#2``, ``#3``, ... (``[REDACTED:github-token]#2``),
        so no entry is lost and the result is deterministic.

        A container without findings is returned as the same object; a changed
        one is rebuilt as a plain ``dict``/``list``/``tuple``.  Reference cycles
        are not followed.

        ``on_string`` replaces how a string value (not a key) is treated: it
        returns (new text, number of changes), and a non-zero count makes the
        containers around it rebuilt. Capture uses it to scrub and truncate in
        one pass (gitmem.capture.prepare).
        """
        return self._scrub_value(value, set(), on_string)

    def _scrub_value(
        self,
        value: object,
        active: set[int],
        on_string: Callable[[str], tuple[str, int]] | None = None,
    ) -> tuple[object, int]:
        if isinstance(value, str):
            if on_string is not None:
                return on_string(value)
            r = self.scrub(value)
            return (r.text, len(r.findings)) if r.findings else (value, 0)
        if not isinstance(value, dict | list | tuple) or id(value) in active:
            return value, 0
        active.add(id(value))
        try:
            total = 0
            if isinstance(value, dict):
                items: list[tuple[object, object]] = []
                masked_keys: list[int] = []
                for k, v in value.items():
                    nk: object = k
                    if isinstance(k, str):
                        r = self.scrub(k)
                        if r.findings:
                            nk = r.text
                            total += len(r.findings)
                            masked_keys.append(len(items))
                    nv, n = self._scrub_value(v, active, on_string)
                    total += n
                    items.append((nk, nv))
                if not total:
                    return value, 0
                if masked_keys:
                    items = _dedupe_keys(items, masked_keys)
                return dict(items), total
            seq: list[object] = []
            for v in value:
                nv, n = self._scrub_value(v, active, on_string)
                total += n
                seq.append(nv)
            if not total:
                return value, 0
            return (tuple(seq) if isinstance(value, tuple) else seq), total
        finally:
            active.discard(id(value))


def _dedupe_keys(
    items: list[tuple[object, object]], masked: list[int]
) -> list[tuple[object, object]]:
    """Suffix masked keys (at indexes ``masked``) that collide, so none is lost."""
    masked_set = set(masked)
    # Keys that did not change keep their names whatever comes later.
    used = {k for i, (k, _) in enumerate(items) if i not in masked_set}
    out = list(items)
    for i in masked:
        key, val = out[i]
        if key in used:
            n = 2
            while f"{key}#{n}" in used:
                n += 1
            key = f"{key}#{n}"
            out[i] = (key, val)
        used.add(key)
    return out


def _match_at(regex: re.Pattern[str] | _Lazy, low: str, starts: list[int]) -> list[re.Match[str]]:
    """``regex.match`` at each start, skipping starts inside the previous match.

    Like ``finditer``, matches never overlap, which keeps runs such as
    "password=password=password=..." linear.
    """
    out: list[re.Match[str]] = []
    end = 0
    for st in starts:
        if st < end:
            continue
        m = regex.match(low, st)
        if m is not None:
            out.append(m)
            end = m.end()
    return out


# Rescans after masking (see ``Scrubber.scrub``); one is the norm, more is
# pathological input, and the cap bounds the work.
_MAX_ROUNDS = 8

# (offset in output, offset in original, length) of each unmasked stretch.
_Segment = tuple[int, int, int]


def _render(text: str, findings: list[Finding]) -> tuple[str, list[_Segment]]:
    """Replace each finding by its marker; also return the unmasked segments."""
    out: list[str] = []
    segments: list[_Segment] = []
    pos = 0
    size = 0
    for f in findings:
        segments.append((size, pos, f.start - pos))
        out.append(text[pos : f.start])
        marker = f"[REDACTED:{f.detector}]"
        out.append(marker)
        size += f.start - pos + len(marker)
        pos = f.end
    segments.append((size, pos, len(text) - pos))
    out.append(text[pos:])
    return "".join(out), segments


def _map_back(extra: list[Finding], segments: list[_Segment]) -> list[Finding]:
    """Translate findings in rendered output back to original offsets.

    Findings never overlap a marker (``_drop_marker_overlaps``), so each lies
    inside one unmasked segment, which maps to the original by a shift.
    """
    out_starts = [seg[0] for seg in segments]
    mapped = []
    for f in extra:
        out_pos, orig_pos, _length = segments[bisect.bisect_right(out_starts, f.start) - 1]
        shift = orig_pos - out_pos
        mapped.append(Finding(f.detector, f.start + shift, f.end + shift))
    return mapped


def _drop_marker_overlaps(
    text: str, candidates: list[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Remove candidates that touch an existing ``[REDACTED:...]`` marker."""
    spans = [m.span() for m in _compiled().marker.finditer(text)]
    if not spans:
        return candidates
    starts = [s for s, _ in spans]
    kept = []
    for c in candidates:
        s, e = c[0], -c[1]
        # Markers never overlap each other, so only the last one starting
        # before the candidate's end can overlap it.
        k = bisect.bisect_left(starts, e) - 1
        if k >= 0 and spans[k][1] > s:
            continue
        kept.append(c)
    return kept


@functools.cache
def default_scrubber() -> Scrubber:
    """The shared scrubber with only the built-in detectors (created once per process)."""
    return Scrubber()
