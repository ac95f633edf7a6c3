"""Secrets: which environment variables a command must not inherit, and redacting their
values from whatever a tool hands back (the log keeps tool output, and the next request sends
it to the model).

Two rules decide what is secret. By name: a variable whose name has a secret-looking word in
it (KEY, TOKEN, SECRET, PASSWORD, PWD, PASS, PAT, AUTH, DSN, CREDENTIAL, COOKIE, ...), and every
ANTHROPIC_* variable. By value: a variable whose value carries credentials in a URL
(`postgres://app:pw@db`, `http://user:pw@proxy:3128`). Redaction then works on values, not
names: a secret's value is replaced wherever it appears in a tool's output, whichever tool
produced it and however it got there (`env`, `cat .env`, a stack trace)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

# Substrings that make a name secret wherever they stand (APIKEY, GITHUBTOKEN, DB_PASSWORD).
_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# Whole words of a name (split at "_") that make it secret: too short to match as substrings
# (PATH holds PAT, PASSENGER holds PASS), so they count only as words of their own.
_WORDS = frozenset({"pat", "auth", "authorization", "dsn", "cred", "creds", "cookie", "cookies"})
# Word endings that make it secret: MYSQL_PWD, PGPASS, SMTP_PASS.
_ENDINGS = ("pwd", "pass")
# Names that match the rules above but hold nothing secret, and that commands need.
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
# Credentials inside a URL: scheme://user:password@host, or a token as the user
# (https://ghp_...@github.com). A plain `user@` (git@, ssh://me@host) is not a secret.
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?:(?P<user>[^\s:/@]*):(?P<password>[^\s/@]+)|(?P<token>[\w.~-]{16,}))@"
)
# A value shorter than this is not redacted by value: replacing every "1234" or "dev" in an
# output would wreck it, and a secret that short protects little.
MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    if upper.startswith("ANTHROPIC_") or any(marker in upper for marker in _MARKERS):
        return True
    words = [w for w in name.lower().split("_") if w]
    return any(w in _WORDS or w.endswith(_ENDINGS) for w in words)


def url_passwords(value: str) -> list[str]:
    """The passwords and tokens written inside the URLs in `value`."""
    found = []
    for match in _URL_CREDENTIALS.finditer(value):
        secret = match.group("password") or match.group("token")
        if secret:
            found.append(secret)
    return found


def is_secret(name: str, value: str) -> bool:
    return is_secret_name(name) or bool(url_passwords(value))


def command_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: the parent's, minus every secret, plus scribe's markers."""
    environ = os.environ if environ is None else environ
    env = {name: value for name, value in environ.items() if not is_secret(name, value)}
    env.update(SCRIBE="1", PAGER="cat", GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0")
    return env


@dataclass(frozen=True)
class Redactor:
    """Replaces known secret values in text. Built from scribe's own environment: the values of
    its secret variables (the API key first among them) and the passwords in URLs it holds;
    credentials written inside any URL of the text are replaced too."""

    # (value, what it is), longest first so a value that contains another is replaced whole.
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        environ = os.environ if environ is None else environ
        found: dict[str, str] = {}
        for name, value in environ.items():
            if is_secret_name(name) and len(value) >= MIN_SECRET_CHARS:
                found.setdefault(value, name)
            for password in url_passwords(value):
                if len(password) >= MIN_SECRET_CHARS:
                    found.setdefault(password, f"{name} password")
        ordered = sorted(found.items(), key=lambda item: (-len(item[0]), item[1]))
        return cls(tuple(ordered))

    def __call__(self, text: str) -> str:
        for value, name in self.values:
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return _URL_CREDENTIALS.sub(_without_credentials, text) if "://" in text else text


def _without_credentials(match: re.Match[str]) -> str:
    if match.group("token") is not None:
        return f"{match.group('scheme')}{REDACTED}@"
    return f"{match.group('scheme')}{match.group('user')}:{REDACTED}@"
