"""What a candidate value looks like: a secret, a name, prose, or a placeholder.

The checks of the detector table ask these questions of the text a regex
matched, with the vocabulary below (plain data, in lower case: the
key/value rows run on lower-cased text, and values are compared
lower-cased).  Every regex here is compiled on first use: most scans never
get as far as asking.
"""

from __future__ import annotations

from gitmem.capture.scrub.base import MARKER_PREFIX, Lazy

# ---------------------------------------------------------------------------
# Vocabulary.
# ---------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    """The blank-separated words of ``text``, in order: word lists stay compact."""
    return tuple(text.split())


ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
LOWER_OR_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
WORD = ALNUM | {"_"}
WORD_DASH = WORD | {"-"}

# Values that stand for "no value".
NULLISH = frozenset(
    {"", "none", "null", "nil", "undefined", "true", "false", "~", '""', "''", "n/a"}
)

# Names of types: ``password: str`` is an annotation or schema, not a secret.
TYPE_NAMES = frozenset(
    _words(
        "str bytes string int integer bool boolean float number object any unknown secretstr "
        "secretbytes secret optional union char varchar text uuid buffer uint8array list dict "
        "option vec required"
    )
)

# Words that start the right-hand side of a code assignment
# (``token = await get_token()``); such a value is never a literal secret.
CODE_WORDS = frozenset(
    _words(
        "await new yield lambda typeof function async not this self cls super if else and or in is"
    )
)

# An identifier value with one of these as a component is a variable
# (``password=db_password``, ``token: accessToken``), not a literal.
KW_WORDS = frozenset(
    _words("pass password passwd passphrase pwd secret secrets key keys apikey token tokens")
)

# "<word>_key" names a secret key for these words (``ENCRYPTION_KEY``, Azure
# ``AccountKey``, ``SharedAccessKey``); a bare "key" or ``primary_key``,
# ``sort_key``, ``public_key`` do not.  ``secret_key`` is found as "secret".
# Keep them lower case and letters only (the keyword locator relies on it).
KEY_WORDS = _words(
    "api private encryption decryption signing master account storage access shared app "
    "auth admin hmac jwt aes crypto license subscription"
)

# Words that make a run of unquoted words prose rather than a passphrase
# (``password: see the wiki``, ``token: expired for user bob``).
PROSE_WORDS = frozenset(
    _words(
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
)

# An identifier value followed by one of these is part of a code expression
# (``f(is_first_token=offset == 0)``), not a literal.  Only symbols: words
# such as "and" or "if" also follow real secrets in prose.
OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "+ ", "* ", "% ", "? ")

# ---------------------------------------------------------------------------
# Judgements.
# ---------------------------------------------------------------------------

IDENT = Lazy(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED = Lazy(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# Attribute paths as people write them (``args.password``); segments with
# digits inside (``ya29.a0Af3x...``) are random tokens instead.
ATTR_PATH = Lazy(r"[A-Za-z_][A-Za-z_]*[0-9]{0,2}(?:\.[A-Za-z_][A-Za-z_]*[0-9]{0,2})+")
# Components of snake_case / camelCase / UPPER_CASE identifiers.
WORDS = Lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")

# CamelCase type names with at least two humps (``RSAPrivateKey``).
_CAMEL_TYPE = Lazy(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*")
_CONSONANTS = Lazy(r"[b-df-hj-np-tv-xz]{5}")
_TRIPLED = Lazy(r"(.)\1\1")
_ENV_NAME = Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_PATH = Lazy(r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*")
_PATH_PARTS = Lazy(r"[/~._@+-]+")
_PRINTF = Lazy(r"%(?:\([\w.]+\))?[sdrjv]|%[A-Za-z_]\w*%|\{[\w.]*\}|\?|:\w+")
_PASS_WORD = Lazy(r"[A-Za-z][A-Za-z0-9'-]{0,23}")

_CLOSERS = {")": "(", "]": "[", "}": "{"}


def left_ok(text: str, start: int, forbidden: frozenset[str]) -> bool:
    """True unless the character before ``start`` glues the match to a longer word."""
    return start == 0 or text[start - 1] not in forbidden


def line_rest(text: str, end: int) -> str:
    """The start of the rest of the line after ``end``, without leading blanks.

    Callers only look at its first characters; the window is bounded so that
    many keywords on one huge line (minified JSON) stay linear.
    """
    window = text[end : end + 64]
    nl = window.find("\n")
    return (window if nl < 0 else window[:nl]).lstrip(" \t\r")


def secretish(value: str) -> bool:
    """Contains a digit or a symbol; a plain word is more likely prose."""
    return any(ch.isdigit() or ch in "!@#$%^&*+=?~_/|.:-" for ch in value)


def wordlike(value: str) -> bool:
    """``value`` reads as words a person chose (``RSAPrivateKey``, ``user_input``,
    ``changeme``, ``OAuth2Token``), not as generated characters.

    The code and prose rules of the checks keep names and words; without this
    test a random token that happens to start with a capital letter passed
    for a CamelCase type (``password: Xk3dQ...`` was kept).  Words are few,
    each of a word's length, pronounceable (a vowel, no five consonants in a
    row), never a letter three times in a row, with at most one digit group;
    one odd part (an acronym, a two-letter part, ``Http``) is tolerated.  A
    random mixed-case string splits into many short or unpronounceable humps,
    and a random one-case string is one run longer than any word.
    """
    if len(value) > 40 or not value[:1].isalpha():
        return False
    parts = WORDS.findall(value)
    if not parts or len(parts) > 6:
        return False
    mixed = not value.isupper()
    odd = digits = 0
    for part in parts:
        if part.isdigit():
            digits += 1
            continue
        low = part.lower()
        if len(part) > 15 or _TRIPLED.search(low):
            return False
        if (
            len(part) <= 2
            or (mixed and part.isupper() and len(parts) > 1)
            or _CONSONANTS.search(low)
            or not any(ch in "aeiouy" for ch in low)
        ):
            odd += 1
    if digits > 1:
        return False
    return odd == 0 or (odd == 1 and (len(parts) > 1 or len(value) <= 3))


def code_name(value: str) -> bool:
    """A name code assigns from (``token = Name``, ``password = user_input``).

    Only letters and underscores, word-like, and shaped as code names are:
    capitalised, snake_case or camelCase.  A single lower-case word is read
    as a literal (``password = changeme`` in an INI file).
    """
    if not value.replace("_", "").isalpha() or not wordlike(value):
        return False
    return value[0].isupper() or "_" in value.strip("_") or not value.islower()


def type_name(value: str) -> bool:
    """A CamelCase type after ``:`` (``token: AccessToken``), made of words.

    Digits make a literal: the types that have them (``Ed25519PrivateKey``)
    name a secret and are kept by :func:`names_a_secret` already.
    """
    return value.isalpha() and bool(_CAMEL_TYPE.fullmatch(value)) and wordlike(value)


def names_a_secret(value: str) -> bool:
    """An identifier with a secret word as a component (``db_password``, ``nextToken``).

    Components, not substrings: a random ``FAKEkey0042`` is a value.  Names
    have a few components and at most one digit group; a random token with a
    "Key" hump among a dozen others is a value too.
    """
    parts = WORDS.findall(value)
    if len(parts) > 6 or sum(p.isdigit() for p in parts) > 1:
        return False
    return any(p.lower() in KW_WORDS for p in parts)


def passphrase_end(text: str, s: int) -> int | None:
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
    for word in words:
        if not _PASS_WORD.fullmatch(word) or word.lower() in PROSE_WORDS:
            return None
    return s + len(line)


def trim_unquoted(text: str, s: int, e: int) -> int:
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


def is_placeholder(value: str, *, allow_paths: bool = True) -> bool:
    """True for values that are obviously not literal secrets.

    Empty/null values, templates and variable references, masks such as
    ``****`` or ``...``, environment-variable *names*, printf/format
    placeholders, paths and the scrubber's own ``[REDACTED:...]`` markers.
    """
    s = value.strip()
    if s.lower() in NULLISH:
        return True
    if s.startswith((MARKER_PREFIX, "<", "{{", "%(")):
        return True
    if s[0] == "$" and len(s) > 1 and (s[1] in "{(_" or s[1].isalpha()):
        return True
    if "${" in s or "{{" in s or "$(" in s:
        return True
    if all(ch in "*xX.\u2022\u00b7#-" for ch in s):
        return True
    # An environment-variable *name* is made of words (GITHUB_TOKEN); a random
    # upper-case token with underscores is not.
    if (_ENV_NAME.fullmatch(s) and wordlike(s)) or _PRINTF.fullmatch(s):
        return True
    # Several format placeholders and punctuation ("%s:%s", "{user}:{pw}").
    if "%" in s or "{" in s:
        rest, n = _PRINTF.subn("", s)
        if n and not any(ch.isalnum() for ch in rest):
            return True
    if not (allow_paths and _PATH.fullmatch(s)):
        return False
    # A path names its parts with words ("/run/secrets/db", "~/.ssh/id_ed25519");
    # a base64 token that happens to start with "/" has random ones.
    return all(not part or part.isdigit() or wordlike(part) for part in _PATH_PARTS.split(s))
