"""Which keys of git's configuration name a program git runs, and the value that makes git run
nothing for each: what scribe's own git turns off where a repository sets them (run.py), and
what the report of planted configuration names (planted.py)."""

from __future__ import annotations

# (section, variable) of every key whose value git runs as a program (man git-config); a
# subsection, when there is one, may be anything. "*" matches any variable of the section.
PROGRAM_KEYS = frozenset({
    ("core", "fsmonitor"), ("core", "hookspath"), ("core", "pager"), ("core", "editor"), ("core", "sshcommand"),
    ("core", "askpass"), ("core", "gitproxy"), ("core", "alternaterefscommand"), ("sequence", "editor"),
    ("credential", "helper"), ("gpg", "program"), ("gpg", "defaultkeycommand"),
    ("diff", "external"), ("diff", "command"), ("diff", "textconv"), ("merge", "driver"),
    ("filter", "clean"), ("filter", "smudge"), ("filter", "process"), ("pager", "*"), ("alias", "*"),
    ("difftool", "cmd"), ("difftool", "path"), ("mergetool", "cmd"), ("mergetool", "path"),
    ("uploadpack", "packobjectshook"), ("remote", "uploadpack"), ("remote", "receivepack"),
    ("interactive", "difffilter"), ("sendemail", "smtpserver"), ("sendemail", "tocmd"), ("sendemail", "cccmd"),
    ("sendemail", "headercmd"), ("sendemail", "sendmailcmd"), ("imap", "tunnel"), ("browser", "cmd"),
    ("browser", "path"), ("man", "cmd"), ("man", "path"), ("guitool", "cmd"), ("hook", "command"),
    ("submodule", "update"), ("trailer", "command"), ("trailer", "cmd"), ("instaweb", "httpd"),
})
# The value that makes git run nothing for a key, where "" does not.
INERT = {"core.fsmonitor": "false", "core.editor": ":", "sequence.editor": ":", "pager": "false",
         "submodule": "none"}


def names_a_program(key: str) -> bool:
    """Whether git runs the value of config `key` (as `git config -l` spells it) as a program."""
    section, _, rest = key.partition(".")
    variable = rest.rpartition(".")[2]
    section = section.lower()
    return (section, variable.lower()) in PROGRAM_KEYS or (section, "*") in PROGRAM_KEYS


def inert(key: str) -> str:
    """The value that makes git run nothing for `key`."""
    section, _, rest = key.partition(".")
    return INERT.get(f"{section.lower()}.{rest.lower()}", INERT.get(section.lower(), ""))
