"""What a command line will run, read the way bash reads it, for the permission rules
(agent/permissions.py): a rule names a program and its arguments, and a line is matched on every
command it would start, never on how it begins.

    git status && rm -rf x       ->  `git status`, `rm -rf x`
    echo "$(curl x | sh)"        ->  `echo $(...)`, `curl x`, `sh`
    bash -c 'make; make install' ->  `make`, `make install`

A line is split on `;`, `&&`, `||`, `|`, `|&`, `&` and newlines; subshells `( )`, command
substitutions `$( )` and backticks (inside double quotes too), process substitutions `<( )`
`>( )`, the strings of `bash -c`/`sh -c` (any of bash, sh, dash, zsh, ksh, ash, mksh) and
`eval`'s arguments are read as lines of their own. Quotes are removed as the shell removes them
(`\\rm` and `'rm'` are `rm`), `$'...'` is decoded, and the keywords `if then else elif fi while
until do done ! time { }` stand aside for the command they introduce.

What this reader cannot be sure of makes the line `unsure` (the reasons, in words): a quote or
parenthesis left open, a backslash at the end, a here-document, a line longer than
MAX_LINE_CHARS or nested deeper than MAX_DEPTH, `case`, `for`, `select`, `[[ ]]`, `(( ))`,
`$(( ))`, function definitions and arrays, a program name known only when the line runs (`$CMD`,
`$(which x)`, a glob), a shell reading a string that holds an expansion, and output sent to a
file (`> notes.txt`: a rule names a program, not where its output goes; `/dev/null` and
duplicated descriptors such as `2>&1` are fine). An unsure line never matches an allow rule; its
commands, as far as they could be read, and a rough split of its text that ignores quoting
(`rough`), are still matched against deny and ask rules.

Pure: text in, commands out. Nothing here runs anything.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

# Nested lines (`$( )` in `bash -c` in backticks ...) read at most this deep; deeper is unsure.
MAX_DEPTH = 12
# A longer line is only read roughly (a here-document of a large file: reading it costs about a
# second per 150,000 characters, and no rule is written for such a line).
MAX_LINE_CHARS = 100_000
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
# Outputs that are not files a command writes.
SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Keywords that only introduce the command after them, and the ones that close a block.
_LEADING = frozenset({"!", "time", "if", "then", "else", "elif", "while", "until", "do", "{"})
_CLOSING = frozenset({"fi", "done", "esac", "}"})
# Keywords whose syntax this reader does not follow.
_UNFOLLOWED = {"for": "a for loop", "select": "a select loop", "case": "a case statement",
               "function": "a function definition", "[[": "a [[ ]] test", "coproc": "a coprocess"}
# The longest brace list `{a,b}` looked for (one longer is read as literal text).
_BRACE_CHARS = 4096
# Characters that end an unquoted word.
_BREAKS = frozenset(" \t\n;&|()<>")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
# Shell options that take no file and change nothing of what `-c` runs (so `bash -ec 'x'` is x).
_PLAIN_SHELL_OPTIONS = frozenset("ceuxvf")
_PLAIN_SET_OPTIONS = frozenset({"pipefail", "errexit", "nounset", "xtrace", "verbose", "noglob"})
# Programs that run the command they are given (`sudo rm x`), with the options of theirs that
# take a value; a deny rule sees the command they run.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
                       "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T",
                       "--command-timeout"}),
    "doas": frozenset({"-u", "-C"}),
    "nohup": frozenset(), "setsid": frozenset(), "builtin": frozenset(), "command": frozenset(),
    "exec": frozenset({"-a"}), "time": frozenset(), "unbuffer": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}), "ionice": frozenset({"-c", "--class", "-n", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xargs": frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-i", "-L", "-l", "-n",
                        "--max-args", "-P", "--max-procs", "-s", "--max-chars"}),
}
# Wrappers whose first argument is not the command (`timeout 5 rm x`).
_WRAPPER_ARGUMENT = frozenset({"timeout"})
_EXEC_OPTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True)
class Command:
    """One simple command: its words as the shell passes them (quotes removed; an expansion
    keeps its spelling, `$HOME`), leading assignments included (`CC=clang make`)."""

    words: tuple[str, ...]
    # How many of the first words are assignments (`FOO=1`).
    assignments: int = 0

    @property
    def text(self) -> str:
        """The words joined by one space: what a rule's pattern is matched on."""
        return " ".join(self.words)

    @property
    def program(self) -> tuple[str, ...]:
        """The words from the program on, without the assignments before it."""
        return self.words[self.assignments:]

    def spellings(self) -> list[str]:
        """Every text a deny or ask rule may know this command by: as written, without its
        assignments, with its program's folder left out (`/bin/rm` is `rm`), and the command
        a wrapper runs (`sudo rm x`, `env X=1 rm x`, `timeout 5 rm x`, `find . -exec rm {} ;`)."""
        found: list[str] = []
        self._spell(self.words, found, 0)
        self._spell(self.program, found, 0)
        return list(dict.fromkeys(text for text in found if text))

    def _spell(self, words: tuple[str, ...], found: list[str], depth: int) -> None:
        if not words or depth > 8:
            return
        found.append(" ".join(words))
        base = os.path.basename(words[0])
        if base != words[0] and base:
            found.append(" ".join((base, *words[1:])))
        for at, word in enumerate(words):
            if word in _EXEC_OPTIONS:  # find's -exec runs what follows, up to `;` or `+`
                rest = words[at + 1:]
                end = next((i for i, w in enumerate(rest) if w in (";", "+")), len(rest))
                self._spell(rest[:end], found, depth + 1)
        if base in _WRAPPERS:
            self._spell(_unwrapped(base, words[1:]), found, depth + 1)


def _unwrapped(wrapper: str, rest: tuple[str, ...]) -> tuple[str, ...]:
    """The command a wrapper runs: its options, their values and (for env) assignments skipped."""
    takes_value = _WRAPPERS[wrapper]
    at = 0
    while at < len(rest):
        word = rest[at]
        if word == "--":
            at += 1
            break
        if word.startswith("-") and len(word) > 1:
            at += 2 if word in takes_value else 1
            continue
        if wrapper == "env" and _ASSIGNMENT.match(word):
            at += 1
            continue
        break
    if wrapper in _WRAPPER_ARGUMENT and at < len(rest):
        at += 1  # timeout's duration
    return rest[at:]


@dataclass(frozen=True)
class CommandLine:
    """Every command a line would run, as far as it could be read, and why it could not be read
    with certainty (empty: it was)."""

    commands: tuple[Command, ...]
    unsure: tuple[str, ...] = ()
    # For an unsure line only: its text cut at every operator and quote, whatever the quoting,
    # so a deny rule still finds what the reader lost track of.
    rough: tuple[str, ...] = ()
    # The reader stopped before the end (too long, nested too deep): what it did not read may
    # hold any command, which no rule has seen.
    partial: bool = False

    @property
    def certain(self) -> bool:
        return not self.unsure

    def spellings(self) -> list[str]:
        """Every text a deny or ask rule is matched on."""
        found = [text for command in self.commands for text in command.spellings()]
        return list(dict.fromkeys([*found, *self.rough]))


def split_line(line: str) -> CommandLine:
    """The commands `line` would run (see the module docstring)."""
    if len(line) > MAX_LINE_CHARS:
        return CommandLine((), (f"a line longer than {MAX_LINE_CHARS:,} characters",), _rough(line), partial=True)
    reader = _Reader(line)
    reader.read_list(closer=None)
    unsure = tuple(dict.fromkeys(reader.unsure))
    return CommandLine(tuple(reader.commands), unsure, _rough(line) if unsure else (), partial=reader.stopped)


def _rough(line: str) -> tuple[str, ...]:
    """The text between operators, quotes taken out: what a deny rule is also matched on when the
    reader lost track (a quote left open, a here-document)."""
    pieces = re.split(r"[;&|()\n`<>{}]|\$\(", re.sub(r"[\"'\\]", " ", line))
    found = []
    for piece in pieces:
        words = piece.split()
        while words and words[0] in _LEADING | _CLOSING:
            words = words[1:]
        if words:
            found.append(" ".join(words))
    return tuple(dict.fromkeys(found))


@dataclass
class _Word:
    text: list[str] = field(default_factory=list)
    quoted: bool = False  # some of it was quoted or escaped: not a keyword
    expanded: bool = False  # it holds an expansion: its value is known only when the line runs
    glob: bool = False  # an unquoted *, ? or [ (or a brace list): it may stand for other words
    started: bool = False  # something was read into it (an empty "" is a word)
    # The length of its text before the first quote, escape or expansion (None: there is none).
    literal: int | None = None

    def value(self) -> str:
        return "".join(self.text)

    def mark(self) -> None:
        """What follows is quoted or expanded: a keyword or an assignment's name ends before it."""
        if self.literal is None:
            self.literal = len(self.value())

    def keyword(self) -> str | None:
        """The word, when it may be a keyword (nothing of it quoted)."""
        return None if self.quoted or self.expanded else self.value()

    def assignment(self) -> bool:
        """`NAME=value`, its name and `=` unquoted (`"A"=1` is a command named `A=1`)."""
        found = _ASSIGNMENT.match(self.value())
        return found is not None and (self.literal is None or found.end() <= self.literal)


@dataclass
class _Building:
    """The command being read: its words, and what was noticed about them."""

    words: list[_Word] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # files its output is sent to


class _Reader:
    def __init__(self, text: str, depth: int = 0, unsure: list[str] | None = None,
                 commands: list[Command] | None = None) -> None:
        self.text, self.pos, self.depth = text, 0, depth
        self.unsure: list[str] = unsure if unsure is not None else []
        self.commands: list[Command] = commands if commands is not None else []
        self.stopped = False  # a nested line was too deep to read

    # -- lists and commands -----------------------------------------------------------------

    def read_list(self, closer: str | None) -> None:
        """Commands up to `closer` (`)`, consumed) or the end of the text."""
        text = self.text
        building = _Building()
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t":
                self.pos += 1
            elif char == "\\" and text.startswith("\\\n", self.pos):
                self.pos += 2
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif char in "\n;":
                if text.startswith(";;", self.pos) or text.startswith(";&", self.pos):
                    self.unsure.append("a case statement")
                self.pos += 1
                self._end(building)
                building = _Building()
            elif char == "&" and text[self.pos + 1:self.pos + 2] == ">":
                self.pos += 1  # &> and &>>: both outputs to a file
                self._redirect(building, ">", both=True)
            elif char in "&|":
                self.pos += 2 if text[self.pos:self.pos + 2] in ("&&", "||", "|&") else 1
                self._end(building)
                building = _Building()
            elif char == "(":
                if building.words:
                    self.unsure.append("a ( inside a command (a function definition or an array)")
                    self._end(building)
                    building = _Building()
                if text.startswith("((", self.pos):
                    self.unsure.append("an arithmetic (( )) command")
                self.pos += 1
                self._inner()
            elif char == ")":
                self.pos += 1
                if closer == ")":
                    self._end(building)
                    return
                self.unsure.append("a ) that closes nothing")
                self._end(building)
                building = _Building()
            elif char in "<>" and text[self.pos + 1:self.pos + 2] != "(":
                self._redirect(building, char)
            else:
                word = self._word()
                if word is None:
                    continue
                if (char.isdigit() or char == "{") and self.pos < len(text) and text[self.pos] in "<>" \
                        and text[self.pos + 1:self.pos + 2] != "(" and _is_descriptor(word):
                    continue  # `2>`, `{fd}>`: a descriptor, not a word; the redirection follows
                building.words.append(word)
        if closer is not None:
            self.unsure.append(f"a {'(' if closer == ')' else closer} left open")
        self._end(building)

    def _end(self, building: _Building) -> None:
        """The command read so far, if any, is complete."""
        words = building.words
        while words and words[0].keyword() in _LEADING:
            dropped, words = words[0].keyword(), words[1:]
            if dropped == "time" and words and words[0].keyword() == "-p":
                words = words[1:]
        if len(words) == 1 and words[0].keyword() in _CLOSING:
            words = []
        if not words:
            if building.writes:
                self.unsure.append(f"output sent to {building.writes[0]}")
            return
        first = words[0].keyword()
        if first in _UNFOLLOWED:
            self.unsure.append(_UNFOLLOWED[first])
        elif first in _CLOSING:
            words = words[1:]  # `} | x` was split already; `done x` is not shell
            self.unsure.append(f"a {first} where a command belongs")
        if building.writes:
            self.unsure.append(f"output sent to {building.writes[0]}")
        texts = tuple(w.value() for w in words)
        assignments = 0
        while assignments < len(words) and words[assignments].assignment():
            assignments += 1
        if assignments < len(words):
            program = words[assignments]
            if program.expanded or program.glob:
                self.unsure.append(f"a program named only when the line runs ({program.value()})")
        command = Command(texts, assignments)
        if not self._shell_string(command, words) and not self._eval(command, words):
            self.commands.append(command)

    def _shell_string(self, command: Command, words: list[_Word]) -> bool:
        """`bash -c STRING` (wherever a shell's name stands: `sudo sh -c`, `xargs sh -c`): the
        string is read as a line. True when the command is only that shell reading it, with
        options that change nothing of what runs (then its own words are not a command to match)."""
        texts = command.words
        alone = False
        for at in range(len(texts)):
            if os.path.basename(texts[at]) not in SHELLS or words[at].expanded:
                continue
            script, plain = _shell_script(texts, at + 1)
            if script is None:
                continue
            if words[script].expanded:
                self.unsure.append(f"a shell runs a string known only when the line runs ({texts[script]})")
            self._read_text(texts[script])
            alone = alone or (at == command.assignments == 0 and plain)
        return alone

    def _eval(self, command: Command, words: list[_Word]) -> bool:
        """`eval ARGS`: the arguments joined are read as a line, in place of the command."""
        if command.assignments or not command.words or command.words[0] != "eval" or words[0].quoted:
            return False
        if any(w.expanded for w in words[1:]):
            self.unsure.append("eval of a string known only when the line runs")
        script = " ".join(command.words[1:])
        self._read_text(script)
        return True

    def _deeper(self) -> bool:
        """Whether a nested line may be read (else the line is unsure: too deep)."""
        if self.depth < MAX_DEPTH:
            return True
        self.unsure.append(f"lines nested more than {MAX_DEPTH} deep")
        self.stopped = True
        return False

    def _inner(self) -> None:
        """A nested line in this text, from here to its `)` (`(`, `$(`, `<(`)."""
        if not self._deeper():
            self.pos = len(self.text)  # what is left is read roughly (CommandLine.rough)
            return
        self.depth += 1
        try:
            self.read_list(closer=")")
        finally:
            self.depth -= 1

    def _read_text(self, text: str) -> None:
        """A line of its own (a backquoted or `bash -c` string, eval's arguments), one level deeper."""
        if self._deeper():
            inner = _Reader(text, self.depth + 1, self.unsure, self.commands)
            inner.read_list(closer=None)
            self.stopped = self.stopped or inner.stopped

    def _redirect(self, building: _Building, char: str, *, both: bool = False) -> None:
        text = self.text
        operator = ""
        for candidate in ("<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"):
            if text.startswith(candidate, self.pos):
                operator = candidate
                break
        self.pos += len(operator)
        while self.pos < len(text) and text[self.pos] in " \t":
            self.pos += 1
        if operator in ("<<", "<<-"):
            self.unsure.append("a here-document")
        following = text[self.pos:self.pos + 1]
        # A word, or a process substitution (`> >(tee log)`).
        readable = following and (following not in _BREAKS or text[self.pos:self.pos + 2] in ("<(", ">("))
        target = self._word() if readable else None
        if target is None:
            self.unsure.append(f"a {operator or char} without a target")
            return
        value = target.value()
        if operator in ("<&", ">&") and (value == "-" or value.isdigit()):
            return  # a duplicated or closed descriptor
        if operator in (">", ">>", ">|", "<>", ">&") or both:
            if value not in SINKS or target.expanded:
                building.writes.append(value)

    # -- words ------------------------------------------------------------------------------

    def _word(self) -> _Word | None:
        """One word from here, its quotes removed and its substitutions read as lines; None at
        an operator (nothing read)."""
        text = self.text
        word = _Word()
        while self.pos < len(text):
            char = text[self.pos]
            if char in "<>" and text[self.pos + 1:self.pos + 2] == "(":
                self.pos += 2  # <( ) and >( ): a process substitution, read as a line
                word.mark()
                self._inner()
                word.text.append(f"{char}(...)")
                word.expanded = word.started = True
                continue
            if char in _BREAKS:
                break
            word.started = True
            if char in "\\'\"`$":
                word.mark()
            if char == "\\":
                if self.pos + 1 >= len(text):
                    self.unsure.append("a backslash at the end of the line")
                    self.pos += 1
                    break
                if text[self.pos + 1] != "\n":
                    word.text.append(text[self.pos + 1])
                word.quoted = True
                self.pos += 2
            elif char == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    self.unsure.append("a ' left open")
                    end = len(text)
                word.text.append(text[self.pos + 1:end])
                word.quoted = True
                self.pos = end + 1
            elif char == '"':
                self.pos += 1
                self._double_quoted(word)
            elif char == "`":
                self._backquoted(word)
            elif char == "$":
                self._dollar(word, in_double=False)
            else:
                if char in "*?[" or (char == "{" and self._brace_list()):
                    word.glob = True
                if char == "~" and not word.text:
                    word.expanded = self._tilde_user()
                word.text.append(char)
                self.pos += 1
        return word if word.started else None

    def _brace_list(self) -> bool:
        """`{a,b}` or `{1..3}` from here: brace expansion, which makes several words of one."""
        end = self.text.find("}", self.pos, self.pos + _BRACE_CHARS)  # bounded: a line of `{` stays linear
        inside = self.text[self.pos + 1:end] if end > 0 else ""
        return bool(inside) and ("," in inside or ".." in inside) and not set(inside) & set(" \t\n;&|()<>")

    def _tilde_user(self) -> bool:
        """`~name/...` names another user's home (known only when run); `~` and `~/` are $HOME."""
        following = self.text[self.pos + 1:self.pos + 2]
        return bool(following) and following not in "/" and following not in _BREAKS

    def _double_quoted(self, word: _Word) -> None:
        text = self.text
        word.quoted = True
        while self.pos < len(text):
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in '$`"\\\n':
                if text[self.pos + 1] != "\n":
                    word.text.append(text[self.pos + 1])
                self.pos += 2
            elif char == "`":
                self._backquoted(word)
            elif char == "$":
                self._dollar(word, in_double=True)
            else:
                word.text.append(char)
                self.pos += 1
        self.unsure.append('a " left open')

    def _backquoted(self, word: _Word) -> None:
        """`...`: its text, with \\` \\$ \\\\ unescaped, read as a line."""
        text = self.text
        self.pos += 1
        inner: list[str] = []
        while self.pos < len(text) and text[self.pos] != "`":
            if text[self.pos] == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in "`$\\":
                inner.append(text[self.pos + 1])
                self.pos += 2
            else:
                inner.append(text[self.pos])
                self.pos += 1
        if self.pos >= len(text):
            self.unsure.append("a ` left open")
        self.pos += 1
        self._read_text("".join(inner))
        word.text.append("`...`")
        word.expanded = word.started = True

    def _dollar(self, word: _Word, *, in_double: bool) -> None:
        text, at = self.text, self.pos
        following = text[at + 1:at + 2]
        word.started = True
        if text.startswith("$((", at):
            self.unsure.append("an arithmetic $(( )) expansion")
            self.pos += 3
            self._inner()
            if self.text[self.pos:self.pos + 1] == ")":
                self.pos += 1
            word.text.append("$((...))")
            word.expanded = True
        elif following == "(":
            self.pos += 2
            self._inner()
            word.text.append("$(...)")
            word.expanded = True
        elif following == "{":
            self._parameter(word)
        elif following == "'" and not in_double:
            self._ansi_c(word)
        elif following == '"' and not in_double:
            self.pos += 2  # $"...": a translated string, read as "..."
            self._double_quoted(word)
        elif following and (_NAME.match(following) or following in "@*#?$!-0123456789"):
            name = _NAME.match(text, at + 1)
            end = name.end() if name else at + 2
            word.text.append(text[at:end])
            word.expanded = True
            self.pos = end
        else:
            word.text.append("$")
            self.pos += 1

    def _parameter(self, word: _Word) -> None:
        """${...}: to its closing brace, the substitutions inside it read as lines."""
        text = self.text
        start = self.pos
        word.expanded = True
        if not self._deeper():  # `${${${...`: what is left is read roughly (CommandLine.rough)
            self.pos = len(text)
            return
        self.pos += 2
        inner = _Word()
        self.depth += 1
        try:
            self._parameter_body(inner)
        finally:
            self.depth -= 1
        word.text.append(text[start:self.pos])

    def _parameter_body(self, inner: _Word) -> None:
        """From after `${` to past its closing brace."""
        text = self.text
        depth = 1
        while self.pos < len(text) and depth:
            char = text[self.pos]
            if char == "}":
                depth -= 1
                self.pos += 1
            elif char == "{":
                depth += 1
                self.pos += 1
            elif char == "\\":
                self.pos += 2
            elif char == "'":
                end = text.find("'", self.pos + 1)
                self.pos = len(text) if end < 0 else end + 1
            elif char == '"':
                self.pos += 1
                self._double_quoted(inner)
            elif char == "`":
                self._backquoted(inner)
            elif char == "$":
                self._dollar(inner, in_double=True)
            else:
                self.pos += 1
        if depth:
            self.unsure.append("a ${ left open")

    def _ansi_c(self, word: _Word) -> None:
        """$'...': decoded as bash decodes it; an escape this reader does not know makes the
        word's value unknown."""
        text = self.text
        self.pos += 2
        out: list[str] = []
        while self.pos < len(text) and text[self.pos] != "'":
            char = text[self.pos]
            if char != "\\" or self.pos + 1 >= len(text):
                out.append(char)
                self.pos += 1
                continue
            decoded, used = _escape(text, self.pos + 1)
            if decoded is None:
                word.expanded = True
                decoded = text[self.pos:self.pos + 1 + used]
            out.append(decoded)
            self.pos += 1 + used
        if self.pos >= len(text):
            self.unsure.append("a $' left open")
        self.pos += 1
        word.text.append("".join(out))
        word.quoted = True


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _escape(text: str, at: int) -> tuple[str | None, int]:
    """The character a `$'...'` escape starting at `text[at]` (after the backslash) stands for,
    and how many characters it takes; None for one not decoded here."""
    char = text[at]
    if char in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[char], 1
    for lead, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if char == lead:
            found = re.match(f"[0-9a-fA-F]{{1,{digits}}}", text[at + 1:])
            if not found:
                return None, 1
            return chr(min(int(found.group(), base), 0x10FFFF)), 1 + len(found.group())
    octal = re.match(r"[0-7]{1,3}", text[at:])
    if octal:
        return chr(int(octal.group(), 8) & 0xFF), len(octal.group())
    return None, 1


def _shell_script(words: tuple[str, ...], at: int) -> tuple[int | None, bool]:
    """Where the string of a shell's `-c` stands among `words` (the shell's options start at
    `at`), and whether its options are all plain ones (`-e`, `-u`, `-x`, `-o pipefail` ...)."""
    seen_c, plain = False, True
    while at < len(words):
        word = words[at]
        if word == "--":
            at += 1
            break
        if word[:1] in "-+" and len(word) > 1 and not word.startswith("--"):
            letters = word[1:]
            seen_c = seen_c or "c" in letters
            if set(letters) & {"o", "O"}:  # -o NAME, -O NAME: the option's value follows
                at += 1
                plain = (plain and set(letters) <= _PLAIN_SHELL_OPTIONS | {"o"} and at < len(words)
                         and words[at] in _PLAIN_SET_OPTIONS)
            else:
                plain = plain and set(letters) <= _PLAIN_SHELL_OPTIONS
            at += 1
            continue
        if word.startswith("--"):
            plain = False
            at += 1
            continue
        break
    return (at if seen_c and at < len(words) else None), plain


def _is_descriptor(word: _Word) -> bool:
    value = word.value()
    if word.quoted or word.expanded:
        return False
    return value.isdigit() or bool(re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", value))


def quoted(command: Command) -> str:
    """The command spelled so that a rule's pattern reads back exactly these words (`*` and
    quotes included): the exact rule a person may keep for it."""
    return " ".join(shlex.quote(word) for word in command.words)
