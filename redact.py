"""Credentials kept out of what the model, the transcript and the screen see: the one secret filter.

A credential reaches the run in two ways, and both are filtered from every tool result, check
output, transcript line and screen line:

- the run's own secrets, known exactly: the API key and the base URL's user:password (`secrets()`);
- any credential by its content, wherever it sits (a `.git/config`, a `settings.yml`, a key file
  under any name): the shapes in SHAPES below. Each keeps what tells the reader what was there
  (`Authorization: basic`, `password =`, the key's BEGIN line) and replaces only the secret part
  with `[redacted]`.

    >>> redact("url = https://bot:pw@example.org/a.git\\n  extraheader = AUTHORIZATION: basic eC1hY2Nlc3M6dA==")
    'url = https://[redacted]@example.org/a.git\\n  extraheader = AUTHORIZATION: basic [redacted]'

Ordinary code passes unchanged: a `password = ...` line counts only when its value is a literal
(a quoted or bare value of 6 characters or more, not a name such as `password = password`, a call or
a type), so `self.password = password` or `token = next(tokens)` stay as they are.

Left out on purpose: a credential a command encodes (`base64 .git/config`) or splits across lines,
a short value (under 6 characters) after `password =`, and a token of a shape not listed here
that sits under a name not listed here. The filter is a safety net for what tools show; it is no
reason to keep credentials in a project.
"""

import re
import urllib.parse

MARK = "[redacted]"
KEYWORDS = (r"(?:pass(?:word|wd|phrase)?|secret|secret[_-]?key|client[_-]?secret|token|auth[_-]?token|"
            r"access[_-]?token|refresh[_-]?token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|_auth)")
END = r"""(?=[\s,;"'`<>]|$)"""  # where a bare value ends
VALUE = (r"""(?:"[^"\s\\]{6,}"|'[^'\s\\]{6,}'"""  # a quoted literal, or a bare one that is not a name:
         rf"""|(?![A-Za-z_.]+{END})[^\s"'`<>,;()\[\]{{}}\\]{{6,}}{END})""")

# Each shape is (what stays before)(the secret)(what stays after): only group 2 becomes [redacted].
SHAPES = [
    # a private key block (PEM, OpenSSH, PGP), or the start of one that a shortened output cut
    re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)([\s\S]*?)(-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)"),
    # tokens known by their shape: GitHub, GitLab, npm, PyPI, AWS access key ids, Slack, OpenAI-style keys
    re.compile(r"()\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|npm_[A-Za-z0-9]{30,}"
               r"|pypi-[\w-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[abposre]-[\w-]{10,}|sk-(?:proj-|ant-)?[\w-]{20,})()"),
    # an HTTP Authorization header (git's extraheader, curl -H, a log line), with or without its scheme
    re.compile(r"((?=[aA])(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:(?:basic|bearer|token|digest|negotiate)\s+)?)"
               r"([^\s\"'`\\,;{}$<>]{6,})()"),
    # the user:password@ (or token@) of any URL, as git keeps it in a remote
    re.compile(r"(://)(?!\*+@)([^\s/@\"'\\]+)(@)"),  # (***@: already masked, as transcript.shown does)
    # a credential in a URL's query: ?private_token=..., &access_token=..., &key=...
    re.compile(r"(?i)([?&](?:[\w-]*token|key|api[_-]?key|secret|password|sig|signature|auth|"
               r"x-amz-credential|x-amz-signature)=)([^&\s#\"'`\\{}$<>]*[A-Za-z0-9][^&\s#\"'`\\{}$<>]*)()"),
    # npm's `//registry/:_authToken=...` and `_auth=`, whatever their value looks like
    re.compile(r"((?=_)(?i:_auth(?:token)?)[ \t]*=[ \t]*)([^\s\"'`\\]*[A-Za-z0-9][^\s\"'`\\]*)()"),
    # `password = ...`, `db_password: ...`, `"api_key": "..."`, `token = ...` in configuration
    re.compile(rf"((?=[pstacPSTAC_])(?i:{KEYWORDS})[\"']?[ \t]*(?::|=(?!=))[ \t]*)({VALUE})()"),
    # <password>...</password> in XML (Maven's settings.xml)
    re.compile(r"(<(?i:password|passphrase|privatekey|token|secret)>)([^<]+)(</)"),
]


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` without the run's `secrets` (each replaced where it occurs) and without any
    credential by its content (SHAPES)."""
    for secret in secrets:
        text = text.replace(secret, MARK)
    for shape in SHAPES:
        text = shape.sub(kept, text)
    return text


def everywhere(value, secrets: list[str] | tuple[str, ...] = ()):
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: everywhere(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [everywhere(item, secrets) for item in value]
    return value


def kept(match: re.Match) -> str:
    """A shape's match with only its secret replaced; a quoted secret keeps its quotes."""
    head, secret, tail = match.groups()
    quote = secret[0] if secret[:1] in ("'", '"') and secret[-1:] == secret[:1] and len(secret) > 1 else ""
    return f"{head}{quote}{MARK}{quote}{tail}"


def secrets(api_key: str, base_url: str) -> list[str]:
    """The run's own secrets: the API key, and the user:password of the base URL and its password
    alone. Values under 6 characters (the default key "local", a short user name) are left alone:
    replacing them would mangle ordinary text."""
    parts = urllib.parse.urlsplit(base_url)
    return [s for s in (api_key, parts.netloc.rpartition("@")[0], parts.password) if s and len(s) >= 6]
