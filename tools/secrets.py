"""Secrets: the environment a command gets without them, and redacting their values from
whatever a tool hands back (the log keeps tool output, and the next request sends it to the
model).

Which variables are secret is workspace/sandbox/environment.py's (by name, or by credentials in a URL
value); scribe's own git calls leave them out the same way. Redaction works on values, not
names: a secret's value is replaced wherever it appears in a tool's output, whichever tool
produced it and however it got there (`env`, `cat .env`, a stack trace), and so are the shapes a
value takes when a program prints it encoded: its base64 (alone, or inside the base64 of a
longer text such as `NAME=value` or a whole `env`), its hex, the value reversed, and any of
these split by whitespace or zero-width characters (a wrapped `base64` output, a value pasted
with a zero-width space). What it cannot catch is said in docs: any other transformation (gzip,
encryption, ROT13, a value printed a few characters at a time with other text between)."""

from __future__ import annotations

import base64
import bisect
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from scribe.workspace.sandbox.environment import URL_CREDENTIALS as _URL_CREDENTIALS
from scribe.workspace.sandbox.environment import is_secret, is_secret_name, url_passwords, without_secrets

__all__ = ["Form", "Redactor", "command_env", "is_secret", "is_secret_name", "url_passwords", "value_forms"]

# A value shorter than this is not redacted by value: replacing every "1234" or "dev" in an
# output would wreck it, and a secret that short protects little.
MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"


def command_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: the parent's, minus every secret, plus scribe's markers."""
    env = without_secrets(environ)
    env.update(SCRIBE="1", PAGER="cat", GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0")
    return env


# What a program may put between the characters of a value it prints: line wrapping (`base64`
# wraps at 76 columns), spaces, and the invisible format characters a paste can carry.
_SPLITTERS = re.compile("[\\s\u200b-\u200f\u2060-\u2064\u180e\ufeff\u00ad]+")
# An encoded form shorter than this is not looked for: too likely to occur by chance.
MIN_FORM_CHARS = 8


@dataclass(frozen=True)
class Form:
    """One shape a secret's value can take in printed text, and what it is called there."""

    text: str
    name: str


def value_forms(value: str, name: str) -> list[Form]:
    """The shapes `value` takes when printed encoded. Base64 is made of groups of three bytes,
    so a value inside a longer encoded text (`NAME=value`, a whole `env`) shows one of three
    encodings depending on where it starts: each is taken whole groups only, the part no
    neighbouring byte can change."""
    raw = value.encode("utf-8")
    forms = [Form(value, name), Form(value[::-1], f"{name}, reversed"),
             Form(raw.hex(), f"{name}, hex"), Form(raw.hex().upper(), f"{name}, hex")]
    for skip in range(3):
        whole = raw[skip:][: (len(raw) - skip) // 3 * 3]
        encoded = base64.b64encode(whole).decode("ascii")
        forms += [Form(encoded, f"{name}, base64"),
                  Form(encoded.replace("+", "-").replace("/", "_"), f"{name}, base64")]
    unique: dict[str, Form] = {}
    for form in forms:
        if len(form.text) >= MIN_FORM_CHARS:
            unique.setdefault(form.text, form)
    return list(unique.values())


@dataclass(frozen=True)
class Redactor:
    """Replaces known secret values in text, in every printed shape `value_forms` knows, also
    when whitespace or zero-width characters split them. Built from scribe's own environment:
    the values of its secret variables (the API key first among them) and the passwords in URLs
    it holds; credentials written inside any URL of the text are replaced too."""

    # (value, what it is), longest first so a value that contains another is replaced whole.
    values: tuple[tuple[str, str], ...] = ()
    forms: tuple[Form, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        forms = [form for value, name in self.values for form in value_forms(value, name)]
        forms.sort(key=lambda form: -len(form.text))
        object.__setattr__(self, "forms", tuple(forms))

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
        for form in self.forms:
            if form.text in text:
                text = text.replace(form.text, f"[redacted {form.name}]")
        if self.forms:
            text = self._split(text)
        return _URL_CREDENTIALS.sub(_without_credentials, text) if "://" in text else text

    def _split(self, text: str) -> str:
        """Redact the forms that only appear once the splitting characters are taken out. The
        common case (no split secret) costs one substitution and a search per form."""
        joined = _SPLITTERS.sub("", text)
        if len(joined) == len(text) or not any(form.text in joined for form in self.forms):
            return text
        # Where each joined character stands in `text`: the removed runs, with how many
        # characters were removed before each.
        runs = [(m.start(), m.end()) for m in _SPLITTERS.finditer(text)]
        starts, removed = [], []
        total = 0
        for start, end in runs:
            starts.append(start - total)
            total += end - start
            removed.append(total)
        spans: list[tuple[int, int, str]] = []
        for form in self.forms:
            for at in _occurrences(joined, form.text):
                first = _original(at, starts, removed)
                last = _original(at + len(form.text) - 1, starts, removed)
                spans.append((first, last + 1, form.name))
        out: list[str] = []
        done = 0
        for start, end, name in sorted(spans):
            if start < done:  # inside a span already replaced (a longer form came first)
                continue
            out += [text[done:start], f"[redacted {name}]"]
            done = end
        out.append(text[done:])
        return "".join(out)


def _occurrences(text: str, part: str) -> Iterator[int]:
    at = text.find(part)
    while at != -1:
        yield at
        at = text.find(part, at + len(part))


def _original(index: int, starts: list[int], removed: list[int]) -> int:
    """Where the joined text's character `index` stands in the original text."""
    run = bisect.bisect_right(starts, index)
    return index + (removed[run - 1] if run else 0)


def _without_credentials(match: re.Match[str]) -> str:
    if match.group("token") is not None:
        return f"{match.group('scheme')}{REDACTED}@"
    return f"{match.group('scheme')}{match.group('user')}:{REDACTED}@"
