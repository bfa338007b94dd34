"""The built-in detectors, as a table: one row per regex, with what it catches.

A row (:class:`~gitmem.capture.scrub.base.Detector`) names the detector,
gives the regex source, the needles without which it is skipped, whether it
runs on lower-cased text or only at keyword positions, and the check that
judges a match (``checks.py`` for tokens and credentials, ``assignments.py``
for key/value pairs).  Without a check, the match is the secret, or its
``secret`` group when the pattern has one.

The order is the last tie-break between candidates with the same start and
length: specific rows come before the generic key/value ones.  Every row has
a positive and a negative example in ``tests/test_scrub.py`` (``ROW_EXAMPLES``).

How a pattern stays fast (the scan runs on every agent tool call, so each
one is measured; a full scan costs about 0.1 ms per 256 KB):

* It starts with a literal, which ``re`` searches for quickly, and is skipped
  outright when none of its needles is in the text.
* Case-insensitive patterns are written in lower case and set ``lower``;
  ``re.IGNORECASE`` alternations crawl (the first version, built on them,
  took 1.4 ms per 10 KB, against 0.1-0.25 ms now).
* A literal never starts with a common character (a leading blank tripled
  one scan's cost), and rows share a scan where they can (Anthropic and
  OpenAI keys share "sk-").
* A prefix glued to a longer word or blob ("task-..." is not "sk-...",
  base64 may contain "AKIA") is rejected by a look-behind right after the
  literal, inside the regex, so a run such as "sk-sk-sk-..." stays linear;
  possessive quantifiers, bounded repeats and non-overlapping keyword matches
  keep every other pathological input in the tens of milliseconds.
"""

from __future__ import annotations

from gitmem.capture.scrub import assignments, checks
from gitmem.capture.scrub.base import Detector
from gitmem.capture.scrub.shapes import KEY_WORDS

_PEM = (
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:"
    # Up to the END line, also when newlines are escaped (JSON strings).
    # The body may not run into another BEGIN line: grep output full of
    # headers without END lines would otherwise make this quadratic.
    r"(?:[^-]|-(?!----BEGIN))*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    # Truncated output: the header lines and base64 body that follow.
    r"|(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z0-9+/]{0,15}={1,2}"
    r"|(?:Proc-Type|DEK-Info|Comment|Version|Hash):[^\r\n\\]*))*)"
)

# Key/value patterns, in lower case (they run on lower-cased text).
#
# Secret keywords.  Only the *last* component of a key counts -- the keyword
# locator checks the start, ``(?![a-z0-9_])`` the end -- so
# ``client_secret``, ``access_token`` and ``AWS_SECRET_ACCESS_KEY`` match
# while ``password_reset_url`` and ``tokenizer`` do not.
_KW = (
    r"(?P<kw>secret[_-]?access[_-]?key|pass(?:word|wd|phrase)?|pwd"
    r"|secret(?:[_-]?key)?|(?:" + "|".join(KEY_WORDS) + r")[_-]?key|token)"
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

_GITLAB_PREFIXES = "glpat- gldt- glrt- glcbt- glptt- glft- glimt- glagent- gloas- glsoat- glffct-"

DETECTORS: tuple[Detector, ...] = (
    # PEM private-key blocks (RSA, EC, OpenSSH, encrypted, ...), also cut
    # short by truncated output or with escaped newlines inside JSON strings;
    # a header without base64 lines (docs, grep patterns) is not one.
    Detector("private-key", _PEM, needles=("-----BEGIN",), check=checks.private_key),
    # AWS access key ids: AKIA (long-term), ASIA (temporary), ABIA, ACCA.
    Detector(
        "aws-access-key",
        r"A(?<![A-Za-z0-9+/]A)(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        needles=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    # GitHub tokens: personal (ghp_), OAuth (gho_), user-to-server (ghu_),
    # server-to-server (ghs_), refresh (ghr_), fine-grained (github_pat_).
    Detector(
        "github-token",
        r"g(?<![A-Za-z0-9_]g)"
        r"(?:h[pousr]_[A-Za-z0-9]{30,251}|ithub_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    # GitLab tokens by prefix: personal, deploy, runner, CI build, trigger,
    # feed, incoming mail, agent, OAuth secrets, SCIM, feature flags.
    Detector(
        "gitlab-token",
        r"gl(?<![A-Za-z0-9_-]gl)(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct)-"
        r"[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9]{2,})*",
        needles=tuple(_GITLAB_PREFIXES.split()),
    ),
    # GitLab runner registration tokens (GR1348941...).
    Detector(
        "gitlab-token",
        r"GR1348941(?<![A-Za-z0-9_-]GR1348941)[A-Za-z0-9_-]{20,}",
        needles=("GR1348941",),
    ),
    # OpenAI keys (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic keys
    # (sk-ant-), one "sk-" scan for both; the check names which it is.
    Detector(
        "openai-key",
        r"sk-(?<![A-Za-z0-9_-]sk-)(?:(?P<ant>ant-)[A-Za-z0-9_-]{20,}"
        r"|(?!ant-)(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_-]{20,})",
        needles=("sk-",),
        check=checks.openai_key,
    ),
    # Slack bot, user, app, refresh and legacy tokens (xoxb-, xoxp-, xapp-, ...).
    Detector(
        "slack-token",
        r"x(?<![A-Za-z0-9_-]x)(?:ox[abeoprs]|app)-(?=[A-Za-z0-9-]{10})"
        r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+",
        needles=("xox", "xapp-"),
    ),
    # Slack incoming-webhook and workflow URLs: the path after the host is the secret.
    Detector(
        "slack-webhook",
        r"hooks\.slack\.com/(?<![A-Za-z0-9_]hooks\.slack\.com/)"
        r"(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*)",
        needles=("hooks.slack.com/",),
    ),
    # Stripe secret, restricted and publishable keys (sk_/rk_/pk_ + live/test);
    # the scan starts at "_live_"/"_test_", the check looks before it.
    Detector(
        "stripe-key",
        r"_(?:live|test)_[A-Za-z0-9]{10,}(?![A-Za-z0-9])",
        needles=("_live_", "_test_"),
        check=checks.stripe_key,
    ),
    # Stripe webhook signing secrets (whsec_).
    Detector(
        "stripe-key",
        r"whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{20,}(?![A-Za-z0-9])",
        needles=("whsec_",),
    ),
    # Google API keys (AIza + 35 characters).
    Detector(
        "google-api-key",
        r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        needles=("AIza",),
    ),
    # Google OAuth access tokens (ya29.).
    Detector(
        "google-oauth-token",
        r"ya29\.(?<![A-Za-z0-9_-]ya29\.)[A-Za-z0-9_-]{20,}",
        needles=("ya29.",),
    ),
    # npm access tokens (npm_ + 36 characters).
    Detector(
        "npm-token",
        r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        needles=("npm_",),
    ),
    # Hugging Face tokens (hf_).
    Detector(
        "huggingface-token",
        r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,}(?![A-Za-z0-9])",
        needles=("hf_",),
    ),
    # JSON Web Tokens: header.payload.signature, the signature empty for alg
    # "none".  Possessive quantifiers: a long base64url run without dots
    # fails once instead of backtracking through every split.
    Detector(
        "jwt",
        r"eyJ(?<![A-Za-z0-9_+/-]eyJ)[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+",
        needles=("eyJ",),
    ),
    # The password in scheme://user:PASSWORD@host.  It may contain "@" and
    # ":"; the last "@" before the host ends it.  The user may be empty
    # (redis://:pass@host).
    Detector(
        "url-credentials",
        r"://(?P<user>[^\s:/?#@'\"<>\[\]\\]*):(?P<secret>[^\s/?#'\"<>\\]+)@(?=[A-Za-z0-9\[])",
        needles=("://",),
        check=checks.url_credentials,
    ),
    # The credentials of an Authorization (or Proxy-Authorization) header,
    # with or without an auth scheme, also inside JSON.
    Detector(
        "authorization-header",
        r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
        r"(?:(?P<scheme>bearer|basic|token|digest|bot|apikey|negotiate|ntlm|aws4-hmac-sha256)"
        r"[ \t]+)?"
        r"(?P<secret>[a-z0-9_.~+/=-]+)",
        needles=("authorization",),
        lower=True,
        check=checks.authorization,
    ),
    # A token after "Bearer" outside an Authorization header (curl -H 'Bearer ...').
    Detector(
        "bearer-token",
        r"bearer[ \t]+(?P<secret>[a-z0-9_.~+/-]{16,}=*)",
        needles=("bearer",),
        lower=True,
        check=checks.bearer,
    ),
    # Cookie values of Cookie: headers, and the first value of Set-Cookie:.
    Detector(
        "cookie",
        r"cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?(?P<secret>[^\r\n\"'\\]{1,8192})",
        needles=("cookie",),
        lower=True,
        check=checks.cookie,
    ),
    # openssl's -pass, -passin and -passout pass:VALUE (env:, file:, fd: and
    # stdin say where the password is instead).
    Detector(
        "openssl-pass",
        r"-pass(?<![^\s'\"]-pass)(?:in|out)?[ \t]+[\"']?pass:(?P<secret>[^\s'\"`|;&<>]{1,512})",
        needles=("pass:",),
        check=checks.literal("openssl-pass"),
    ),
    # keytool's -storepass and -keypass VALUE, also -srcstorepass, -destkeypass
    # (-storepass:env NAME and -storepass:file PATH are references).
    Detector(
        "keytool-pass",
        r"-(?<![^\s'\"]-)(?:src|dest)?(?:store|key)pass(?![\w:])[ \t]+[\"']?"
        r"(?P<secret>[^\s'\"`|;&<>]{1,512})",
        needles=("storepass", "keypass"),
        check=checks.literal("keytool-pass"),
    ),
    # .netrc entries: machine HOST login USER password VALUE.
    Detector(
        "netrc-password",
        r"password(?<![\w.-]password)[ \t]+(?P<secret>[^\s]{1,512})",
        needles=("password",),
        check=checks.netrc,
    ),
    # Passwords given to a command's short option: mysql -pX, sshpass -p X,
    # redis-cli -a X, mongosh -p X, docker login -p X, curl -u user:X, and
    # curl -b 'sid=X' (cookies).  The option must follow a blank or a
    # quote (a leading blank instead of the look-behind made the scan three
    # times slower: blanks are everywhere in code).
    Detector(
        "cli-password",
        r"-(?<![^\s'\"]-)(?P<flag>-user|-cookie|[puab])(?P<sep>=|[ \t]+)?"
        r"(?P<val>'[^'\n]{1,512}'|\"[^\"\n]{1,512}\"|[^\s'\"`|;&<>]{1,512})",
        needles=("-p", "-u", "-a", "-b", "-cookie"),
        check=checks.cli_password,
    ),
    # key = value, key: value, "key": "value", key => value, key := value
    # (JSON, YAML, INI, env files, code, headers such as X-Auth-Token:);
    # reports password-, secret-, api-key-, token-, private-key- and
    # key-assignment, or aws-secret-key.
    Detector(
        "key-value",
        _KW + r"(?![a-z0-9_])(?P<kq>\\?[\"'])?[ \t]*" + _SEP + r"[ \t]*" + _VALUE,
        lower=True,
        at=assignments.keyword_positions,
        check=assignments.assignment,
    ),
    # --password VALUE, and a compound key followed by a generated-looking
    # value (aws configure set aws_secret_access_key VALUE).  The value is no
    # option ("--token --verbose"); a long random token may still start with "-".
    Detector(
        "cli-flag",
        _KW + r"(?![a-z0-9_-])[ \t]+(?!-(?:-|[a-z0-9]{0,15}(?:[\s=]|$)))" + _VALUE,
        lower=True,
        at=assignments.keyword_positions,
        check=assignments.flag,
    ),
    # <db_password>value</db_password>
    Detector(
        "xml-element",
        _KW + r">(?P<xv>[^<\n]{1,1024})</",
        lower=True,
        at=assignments.keyword_positions,
        check=assignments.xml_element,
    ),
)
