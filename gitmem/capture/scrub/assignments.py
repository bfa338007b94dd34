"""The key/value rows: where secret keywords are, and whether the value after one is a secret.

The key/value rows of the detector table run only at the keyword positions
:func:`keyword_positions` finds, once per scan, with a few literal-prefixed
regexes; their checks here decide what the value is.  The decisions on
debatable cases (``tests/test_scrub.py`` pins them down):

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
* Code is not data, but only names made of words are code (``wordlike``): a
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

The checks read these groups of the table's key/value patterns: ``kw`` (the
keyword), ``kq`` (a quote closing the key), ``sep``, ``pfx`` (a string
prefix), the quoted value ``dq``/``sq``/``bq``/``eq``, the unquoted value
``uv``, and ``xv`` (an XML element's text).
"""

from __future__ import annotations

import re

from gitmem.capture.scrub.base import Lazy, Span
from gitmem.capture.scrub.shapes import (
    ALNUM,
    ATTR_PATH,
    CODE_WORDS,
    DOTTED,
    IDENT,
    KEY_WORDS,
    LOWER,
    LOWER_OR_DIGIT,
    OPERATORS,
    TYPE_NAMES,
    WORD_DASH,
    code_name,
    is_placeholder,
    line_rest,
    names_a_secret,
    passphrase_end,
    secretish,
    trim_unquoted,
    type_name,
    wordlike,
)

# Secret keywords, each found by a regex that starts with a literal and
# rejects "tokens"/"keyword"/"password_reset" in C.  "key" only counts as
# "api_key"/"private_key" and friends; a fixed-width look-behind checks the
# character before it without giving up the literal prefix.  A keyword at the
# end of its line (Python's ``pass``, ``return token``) has no value after
# it; skipping it here saves the key/value regexes a call each.
_END = r"(?![a-z0-9_])(?![ \t]*(?:\r?\n|$))"
# (literal every match starts with, finder)
_KEYWORD_FINDERS = tuple(
    (p[:3], Lazy(p + _END))
    for p in (
        r"pass(?:word|wd|phrase)?",
        r"pwd",
        r"secret(?:[_-]?access[_-]?key|[_-]?key)?",
        r"token",
        # A "key" right after a quote or blank (JSON's "key") fails the
        # look-behind instead of trying all of them.  The word before
        # "<word>_key" is checked in ``_key_start`` (a look-behind per word
        # made this regex the slowest to compile, on every hook process).
        r"key(?<=[a-z_-]key)",
    )
)


def keyword_positions(text: str, low: str) -> list[int]:
    """Start offsets of secret keywords that begin a key component.

    The :data:`~gitmem.capture.scrub.base.Locator` of the key/value rows;
    ``low`` is ``text`` lower-cased, with the same offsets.
    """
    found: set[int] = set()
    for needle, finder in _KEYWORD_FINDERS:
        if needle not in low:
            continue
        for m in finder.finditer(low):
            s: int | None = m.start()
            if low.startswith("key", m.start()):
                s = _key_start(low, m.start())
            if s is not None and _kw_boundary(text, s):
                found.add(s)
    return sorted(found)


def _key_start(low: str, s: int) -> int | None:
    """Start of the "<word>_key" keyword whose "key" is at ``s``, or None.

    ``low`` is lower-cased text.  The word may be glued (``apikey``,
    ``AccountKey``) or joined by ``_``/``-`` (``api_key``, ``x-api-key``).
    """
    i = s - 1 if s > 0 and low[s - 1] in "_-" else s
    j = i
    while j > 0 and i - j < 16 and low[j - 1] in LOWER:
        j -= 1
    letters = low[j:i]
    for word in KEY_WORDS:
        if letters.endswith(word):
            return i - len(word)
    return None


def _kw_boundary(text: str, i: int) -> bool:
    """The keyword at ``i`` starts a key component (``DB_PASSWORD``, ``userPassword``)."""
    if i == 0:
        return True
    prev = text[i - 1]
    if prev not in ALNUM:
        return True
    # camelCase ("userPassword", "clientSecret", "authToken") and glued
    # upper-case env names ("PGPASSWORD", "HTTPToken").
    return text[i].isupper() and (prev in LOWER_OR_DIGIT or prev.isupper())


# The detector each keyword reports, by the keyword without "_"/"-".
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


_QUOTE_GROUPS = ("dq", "sq", "bq", "eq")


def _check_value(
    m: re.Match[str],
    text: str,
    family: str,
    sep: str | None,
    spaced: bool,
    code_target: bool = False,
) -> Span | None:
    """Validate the value of a key/value match and return the span to mask.

    ``sep`` is ``"="`` (also ``=>``, ``:=``), ``":"``, or ``None`` for CLI
    flags; ``spaced`` says an ``=`` had blanks on both sides, as code does;
    ``code_target`` says the key is an assignment target in code (see
    ``_code_target``).
    """
    allow_paths = family != "aws-secret-key"
    for g in _QUOTE_GROUPS:
        if m.group(g) is not None:
            s, e = m.span(g)
            value = text[s:e]
            if is_placeholder(value, allow_paths=allow_paths):
                return None
            # f-strings and JS template literals interpolate: not a literal.
            if "{" in value and (g == "bq" or "f" in m.group("pfx")):
                return None
            # A quoted identifier naming a secret is a name, not its value
            # ("input_token": "next_token", PASSWORD = "password").
            if IDENT.fullmatch(value) and names_a_secret(value):
                return None
            return (s, e, family)
    s, e = m.span("uv")
    e = trim_unquoted(text, s, e)
    if e <= s:
        return None
    value = text[s:e]
    if is_placeholder(value, allow_paths=allow_paths):
        return None
    # Structures, YAML block scalars/tags/aliases/anchors, @file references,
    # and file:/env: indirections as in AWS CLI arguments.
    if value[0] in "{[(|>!@*&" or value.startswith(("file:", "fileb:", "env:")):
        return None
    if "(" in value or "[" in value:
        return None  # call or subscript
    rest = line_rest(text, e)
    if sep is not None and rest and not secretish(value):
        end = passphrase_end(text, s)
        if end is not None:
            return (s, end, family)  # ``password: correct horse battery staple``
    if IDENT.fullmatch(value) or DOTTED.fullmatch(value):
        if value.lower() in CODE_WORDS or names_a_secret(value):
            return None
        if wordlike(value) and (
            rest[:1] in (",", ")", "}", "]", "=") or rest.startswith(OPERATORS)
        ):
            return None  # keyword argument, shorthand, chained assignment, expression
        if spaced and (
            "." in value
            or code_name(value)
            or (value.isalpha() and (len(value) <= 3 or code_target) and wordlike(value))
        ):
            # code: ``token = Name``, ``key = settings.API_KEY``,
            # ``self.token = nextchar``, ``token = v``; a lower-case word at
            # the start of a line (``password = changeme`` in an INI file), a
            # value with digits or a random token stays a literal.
            return None
        if sep == ":" and (rest[:1] in ("=", "|") or type_name(value)):
            return None  # annotation: ``token: Token``, ``key: RSAPrivateKey | None``
        if ATTR_PATH.fullmatch(value):
            return None  # ``password=args.password``; random tokens have digits inside
    if sep == ":" and value.lower() in TYPE_NAMES:
        return None
    if (
        not secretish(value)
        and wordlike(value)
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
    while j > 0 and text[j - 1] in WORD_DASH:
        j -= 1
    line = text.rfind("\n", max(0, j - 256), j) + 1
    before = text[line:j]
    if not before:
        return False
    if not before.strip(" \t") or before.endswith("."):
        return True  # indented, or an attribute
    head = before.rstrip(" \t")
    return head.endswith(",") or head.rsplit(None, 1)[-1] in _DECLARATIONS


def assignment(m: re.Match[str], text: str) -> Span | None:
    """``key = value``, ``key: value``, ``"key": "value"``, ``key => value`` and friends."""
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
    return start > 0 and text[start - 1] in WORD_DASH


_FLAG_LEFT = frozenset(" \t\r\n\"'`([{=,;|&")


def flag(m: re.Match[str], text: str) -> Span | None:
    """``--password VALUE``, and ``aws_secret_access_key VALUE`` with a generated value."""
    # The keyword is the last component of a "--flag" (or "-flag") followed by
    # its value, or of a compound key followed by a value that looks generated:
    # ``aws configure set aws_secret_access_key VALUE``.
    j = m.start()
    while j > 0 and text[j - 1] in WORD_DASH:
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
    if len(value) < 8 or (wordlike(value) and not secretish(value)):
        return None  # "the api_key parameter", "client_secret VARCHAR"
    return span


_TAG_CHARS = WORD_DASH | {".", ":"}


def xml_element(m: re.Match[str], text: str) -> Span | None:
    """``<db_password>value</db_password>``: the keyword ends the element name."""
    j = m.start()
    while j > 0 and text[j - 1] in _TAG_CHARS:
        j -= 1
    if j == 0 or text[j - 1] != "<":
        return None
    tag = text[j : m.end("kw")]
    if not text.startswith(tag + ">", m.end()):
        return None
    s, e = m.span("xv")
    if is_placeholder(text[s:e]):
        return None
    return (s, e, _family(m.group("kw")))
