"""Which of scribe's environment variables are secrets, and the environment without them: what
every program scribe starts because of the workspace gets (a command, and scribe's own git and
whatever git starts). tools/secrets.py redacts the same secrets' values from tool output. And,
for a program that runs outside any sandbox, scribe's own environment kept out of its reach
(`hide_own_process`).

Two rules decide what is secret. By name: a variable whose name has a secret-looking word in
it (KEY, TOKEN, SECRET, PASSWORD, PWD, PASS, PAT, AUTH, DSN, CREDENTIAL, COOKIE, WEBHOOK,
CONNECTION_STRING, a `_SK` word, ...), every ANTHROPIC_* and OP_SESSION_* variable. By value: a
variable whose value carries credentials in a URL (`postgres://app:pw@db`,
`http://user:pw@proxy:3128`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# Substrings that make a name secret wherever they stand (APIKEY, GITHUBTOKEN, DB_PASSWORD).
# WEBHOOK: a Slack or Discord webhook URL posts as its owner; a connection string (Azure's)
# carries its account key.
_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "WEBHOOK", "CONNECTION_STRING",
            "CONNSTR", "PRIVATE", "SIGNATURE")
# Whole words of a name (split at "_") that make it secret: too short to match as substrings
# (PATH holds PAT, PASSENGER holds PASS, TASK holds SK), so they count only as words of their
# own. `sk` is Stripe's secret-key family (STRIPE_SK), `sas` an
# Azure shared-access signature, `jwt` and `bearer` tokens by another name.
_WORDS = frozenset({"pat", "auth", "authorization", "dsn", "cred", "creds", "cookie", "cookies", "sk", "sas",
                    "jwt", "bearer", "otp", "passphrase", "hmac"})
# Name prefixes that make it secret: 1Password's CLI keeps its session in OP_SESSION_<account>.
_PREFIXES = ("ANTHROPIC_", "OP_SESSION_")
# Word endings that make it secret: MYSQL_PWD, PGPASS, SMTP_PASS.
_ENDINGS = ("pwd", "pass")
# Names that match the rules above but hold nothing secret, and that commands need.
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
# Credentials inside a URL: scheme://user:password@host, or a token as the user
# (https://ghp_...@github.com). A plain `user@` (git@, ssh://me@host) is not a secret.
URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?:(?P<user>[^\s:/@]*):(?P<password>[^\s/@]+)|(?P<token>[\w.~-]{16,}))@"
)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    if upper.startswith(_PREFIXES) or any(marker in upper for marker in _MARKERS):
        return True
    words = [w for w in name.lower().split("_") if w]
    return any(w in _WORDS or w.endswith(_ENDINGS) for w in words)


def url_passwords(value: str) -> list[str]:
    """The passwords and tokens written inside the URLs in `value`."""
    found = []
    for match in URL_CREDENTIALS.finditer(value):
        secret = match.group("password") or match.group("token")
        if secret:
            found.append(secret)
    return found


def is_secret(name: str, value: str) -> bool:
    return is_secret_name(name) or bool(url_passwords(value))


def without_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environ` (scribe's own by default) less every secret variable."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if not is_secret(name, value)}


def trusted_program(name: str, outside: Sequence[Path] = (), path: str | None = None) -> str | None:
    """The first executable `name` in an absolute folder of PATH (`path`, scribe's own by default)
    that is not inside any of `outside` (the workspace): never one a relative entry (`.`, `bin`, an
    empty entry) finds from the folder scribe runs in, nor one a workspace ships or a command wrote
    in a folder the person put on PATH (`$PWD/node_modules/.bin`). None when there is none. (A
    workspace that is the whole file system avoids nothing.)"""
    avoid = [Path(os.path.realpath(folder)) for folder in outside if Path(os.path.realpath(folder)) != Path("/")]
    for entry in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        folder = Path(os.path.realpath(entry))
        if any(folder == place or folder.is_relative_to(place) for place in avoid):
            continue
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


_PR_SET_DUMPABLE = 4


@functools.cache
def can_hide_process() -> bool:
    return sys.platform.startswith("linux") and ctypes.util.find_library("c") is not None


@functools.cache
def hide_own_process() -> bool:
    """Make scribe non-dumpable: its /proc files (environ, mem) become unreadable to processes
    of the same user that lack CAP_SYS_PTRACE, and they cannot attach to it. Once per process;
    before any program runs outside the sandbox (a command, or git without one)."""
    if not can_hide_process():
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
