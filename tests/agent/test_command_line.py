"""The command-line reader the permission rules match on (agent/command_line.py): what a line
will run, read as bash reads it, and what it cannot be sure of. The properties generate lines
from a grammar of bash's compositions, with a denied command placed anywhere in them, and hold
that no such line is ever allowed by allow rules alone."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scribe.agent.command_line import split_line
from scribe.agent.permissions import Call, PermissionPolicy
from scribe.settings.rules import parse_rule


@pytest.mark.parametrize(("line", "commands"), [
    ("git status", ["git status"]),
    ("git status; rm -rf x", ["git status", "rm -rf x"]),
    ("git status && rm -rf x || echo no", ["git status", "rm -rf x", "echo no"]),
    ("make | tee log |& cat & wait", ["make", "tee log", "cat", "wait"]),
    ("git status\nrm -rf x", ["git status", "rm -rf x"]),
    ('echo "$(curl x | sh)"', ["curl x", "sh", "echo $(...)"]),
    ("echo `rm x`", ["rm x", "echo `...`"]),
    ("(cd sub && make)", ["cd sub", "make"]),
    ("{ git status; } 2>/dev/null", ["git status"]),
    ("bash -c 'make; make install'", ["make", "make install"]),
    ("sh -ec \"rm -rf 'build dir'\"", ["rm -rf build dir"]),
    ("eval 'rm x'", ["rm x"]),
    ("diff <(ls a) <(ls b)", ["ls a", "ls b", "diff <(...) <(...)"]),
    ("echo ${X:-$(rm y)}", ["rm y", "echo ${X:-$(rm y)}"]),
    ("if git diff --quiet; then echo same; else git stash; fi", ["git diff --quiet", "echo same", "git stash"]),
    ("while read l; do echo $l; done < list", ["read l", "echo $l"]),
    ("! grep -q x f", ["grep -q x f"]),
    ("time -p make", ["make"]),
    ("\\rm x", ["rm x"]),
    ("r'm' x", ["rm x"]),
    ("$'\\x72\\155' -rf x", ["rm -rf x"]),
    ("git log --format='%h %s' # the last ones", ["git log --format=%h %s"]),
    ("ls 2>&1 >/dev/null", ["ls"]),
    ("X=1 Y=2 make", ["X=1 Y=2 make"]),
])
def test_a_line_is_split_into_every_command_it_would_run(line: str, commands: list[str]) -> None:
    found = split_line(line)
    assert found.certain, found.unsure
    assert [c.text for c in found.commands] == commands


@pytest.mark.parametrize(("line", "why"), [
    ("echo 'open", "a ' left open"),
    ('echo "open', 'a " left open'),
    ("echo $(ls", "a ( left open"),
    ("echo `ls", "a ` left open"),
    ("ls \\", "a backslash at the end of the line"),
    ("cat <<EOF\nrm x\nEOF", "a here-document"),
    ("git status > notes.txt", "output sent to notes.txt"),
    ("git status &>> notes.txt", "output sent to notes.txt"),
    ("$CMD x", "a program named only when the line runs ($CMD)"),
    ("$(which rm) x", "a program named only when the line runs ($(...))"),
    ("/bin/r? x", "a program named only when the line runs (/bin/r?)"),
    ('bash -c "$SCRIPT"', "a shell runs a string known only when the line runs ($SCRIPT)"),
    ("for f in *; do rm $f; done", "a for loop"),
    ("case $x in a) rm y;; esac", "a case statement"),
    ("[[ -f x ]] && rm y", "a [[ ]] test"),
    ("echo $((1 + 2))", "an arithmetic $(( )) expansion"),
    ("f() { rm x; }", "a ( inside a command (a function definition or an array)"),
    ("ls )", "a ) that closes nothing"),
    ("echo " + "$(" * 20 + "rm x" + ")" * 20, "lines nested more than 12 deep"),
])
def test_what_cannot_be_read_with_certainty_says_why(line: str, why: str) -> None:
    found = split_line(line)
    assert why in found.unsure


@pytest.mark.parametrize("opening", ["${", '"${', "$(", '"$(', "(", "<(", "`", "bash -c '", "$((", "{ "])
def test_a_line_nested_past_any_depth_is_unsure_and_never_fails(opening: str) -> None:
    """Nesting is the model's to choose: 50,000 levels of it end in a refusal to be sure, never
    in a RecursionError that would end the turn."""
    line = opening * 50_000 + "rm -rf x"
    found = split_line(line)
    assert not found.certain
    decision = PermissionPolicy("full-auto", rules=[parse_rule("run_command(rm *)", "deny", "test")]).decide(
        "run_command", "command", {"command": line})
    assert decision.verdict != "allow"


def test_a_line_too_long_to_read_is_read_roughly_and_asked_about_where_a_deny_rule_could_not_check_it() -> None:
    body = "\n".join(f"line {n} of a large file" for n in range(10_000))
    line = f"cat > big.txt <<'EOF'\n{body}\nEOF\nrm -rf build"
    found = split_line(line)
    assert "a line longer than 100,000 characters" in found.unsure and found.partial
    assert "rm -rf build" in found.spellings()
    deny = [parse_rule("run_command(rm *)", "deny", "mine")]
    assert PermissionPolicy("full-auto", rules=deny).decide("run_command", "command", {"command": line}).verdict == "deny"
    quiet = line.replace("rm -rf build", "true")
    policy = PermissionPolicy("full-auto", rules=deny)
    decision = policy.decide("run_command", "command", {"command": quiet})
    assert decision.verdict == "ask" and decision.rule == deny[0]
    assert policy.refusal_of(decision, "run_command", "command", {"command": quiet}, asked=False) == (
        "run_command was not run: the line is too long or nested too deeply to be read to its end, so the deny "
        "rule run_command(rm *) (from mine) could not be checked against all of it, and nobody can answer in this run")
    assert PermissionPolicy("full-auto").decide("run_command", "command", {"command": quiet}).verdict == "allow"


def test_an_unsure_line_is_still_read_for_the_commands_a_deny_rule_would_know() -> None:
    found = split_line("cat <<EOF\nrm -rf x\nEOF")
    assert "rm -rf x" in found.spellings()  # a here-document fed to nothing still shows its text
    rough = split_line("echo 'oops; rm -rf x")  # the quote swallows the rest, but not roughly
    assert "rm -rf x" in rough.spellings()


def test_a_deny_rule_knows_a_command_by_every_spelling_of_it() -> None:
    spelled = {line: split_line(line).spellings() for line in [
        "/bin/rm -rf x", "sudo -u root rm -rf x", "env -i X=1 rm -rf x", "timeout -s KILL 5 rm -rf x",
        "X=1 rm -rf x", "nohup nice -n 5 rm -rf x", "find . -name x -exec rm -rf x ;", "xargs -n 1 rm -rf x"]}
    for line, spellings in spelled.items():
        assert "rm -rf x" in spellings, (line, spellings)


# -- properties --------------------------------------------------------------------------------

DENY = parse_rule("run_command(rm *)", "deny", "test")
# Everything the benign commands are, and the wrappers around them, is allowed: only the
# denied command may keep a line from running without a question.
ALLOW = [parse_rule(f"run_command({p})", "allow", "test") for p in [
    "git *", "ls*", "echo*", "cat*", "grep*", "make*", "true", "bash*", "sh*", "eval*", "diff*", "sudo*", "env*",
    "command*", "timeout*", "nohup*", "xargs*", "tee*", "wc*", "cd*", "test*", "/bin/*", "X=*", "printf*"]]
BENIGN = ["git status", "ls -la", "echo hi there", "cat README.md", "grep -n x f.txt", "make test", "true",
          "wc -l f.txt", "printf '%s\\n' a"]


def _spell(word: str, style: int) -> str:
    """One word in one of the ways bash reads as that same word."""
    if style == 1:
        return shlex.quote(word) if word.isalnum() else shlex.quote(word)
    if style == 2:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`") + '"'
    if style == 3 and len(word) > 1:
        return word[0] + "'" + word[1:] + "'"
    if style == 4:
        return "\\" + word[0] + word[1:]
    if style == 5 and word.isascii():
        return "$'" + "".join(f"\\x{ord(c):02x}" for c in word) + "'"
    return word


@st.composite
def denied(draw: st.DrawFn) -> str:
    """`rm -rf target`, spelled any way bash reads as rm, behind any wrapper."""
    program = draw(st.sampled_from(["rm", "/bin/rm", "/usr/bin/rm"]))
    words = [program, draw(st.sampled_from(["-rf", "-f", "-r -f", "--force"])), "target"]
    spelled = " ".join(_spell(w, draw(st.integers(0, 5))) if " " not in w else w for w in words)
    wrapper = draw(st.sampled_from(["", "sudo ", "sudo -u root ", "env ", "env X=1 ", "X=1 ", "command ",
                                    "timeout 5 ", "nohup ", "exec ", "xargs ", "time ", "! "]))
    return wrapper + spelled


@st.composite
def lines(draw: st.DrawFn, depth: int = 0) -> tuple[str, bool]:
    """A line from bash's grammar, and whether the denied command is in it."""
    kind = draw(st.sampled_from(["leaf", "leaf", "denied", "binary", "group", "substitution", "shell",
                                 "control", "redirect"] if depth < 3 else ["leaf", "denied"]))
    if kind == "leaf":
        return draw(st.sampled_from(BENIGN)), False
    if kind == "denied":
        return draw(denied()), True
    if kind == "binary":
        (left, l_denied), (right, r_denied) = draw(lines(depth + 1)), draw(lines(depth + 1))
        operator = draw(st.sampled_from([" ; ", " && ", " || ", " | ", " |& ", " & ", "\n", ";", "&&"]))
        return left + operator + right, l_denied or r_denied
    inner, has = draw(lines(depth + 1))
    if kind == "group":
        shape = draw(st.sampled_from(["( {} )", "({})", "{{ {}; }}", "{{ {}\n}}"]))
        return shape.format(inner), has
    if kind == "substitution":
        shape = draw(st.sampled_from(['echo "$({})"', "echo $({})", "echo `{}`", 'echo "`{}`"', "cat <({})",
                                      "echo ${{X:-$({})}}", "X=$({}) true", "diff <({}) f.txt"]))
        if "`" in shape and "`" in inner:
            shape = "echo $({})"  # backquotes inside backquotes need escaping: not this grammar's
        return shape.format(inner), has
    if kind == "shell":
        quoted = draw(st.sampled_from([shlex.quote(inner), _spell(inner, 2)]))
        shape = draw(st.sampled_from(["bash -c {}", "sh -c {}", "bash -ec {}", "bash -lc {}", "sudo sh -c {}",
                                      "eval {}", "xargs sh -c {}", "bash -o pipefail -c {}"]))
        return shape.format(quoted), has
    if kind == "control":
        (other, o_denied) = draw(lines(depth + 1))
        shape = draw(st.sampled_from(["if {}; then {}; fi", "while {}; do {}; done", "until {}\ndo {}\ndone",
                                      "if true; then {}; else {}; fi", "! {} && {}", "time {} ; {}"]))
        return shape.format(inner, other), has or o_denied
    shape = draw(st.sampled_from(["{} 2>/dev/null", "{} 2>&1", "{} > out.txt", "{} < f.txt", "{} >> /dev/null",
                                  "{} 2> errors.txt"]))
    return shape.format(inner), has


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_no_line_that_holds_a_denied_command_is_allowed_by_allow_rules_alone(generated: tuple[str, bool]) -> None:
    line, has_denied = generated
    args = {"command": line}
    for mode in ("ask", "accept-edits", "full-auto"):
        decision = PermissionPolicy(mode, rules=[DENY, *ALLOW]).decide("run_command", "command", args)
        if has_denied:
            # Spelled out anywhere in the line (not computed when it runs): the deny rule finds it.
            assert decision.verdict == "deny", (mode, line, split_line(line))
            assert decision.rule == DENY
    if not has_denied and split_line(line).certain:
        allowed = PermissionPolicy("ask", rules=[DENY, *ALLOW]).decide("run_command", "command", args)
        assert allowed.verdict == "allow", (line, split_line(line))


@settings(max_examples=200, deadline=None)
@given(lines(), st.sampled_from(['"$(echo rm)" -rf target', "$RM -rf target", "`which rm` -rf target",
                                 "${RM:-rm} -rf target", "/bin/r? -rf target"]))
def test_a_program_named_only_when_the_line_runs_is_never_allowed_by_a_rule(
        generated: tuple[str, bool], computed: str) -> None:
    line = generated[0] + " && " + computed
    decision = PermissionPolicy("ask", rules=[DENY, *ALLOW]).decide("run_command", "command", {"command": line})
    assert decision.verdict != "allow", line
    assert not split_line(line).certain


SHELL_TEXT = st.text(alphabet=st.sampled_from(list("ab rm-x;&|()<>$`'\"\\\n{}*?#=!~")), max_size=60)


@settings(max_examples=500, deadline=None)
@given(SHELL_TEXT)
def test_any_text_is_read_without_failing_and_its_exact_rule_allows_exactly_it(text: str) -> None:
    """Whatever the model sends, the reader ends and says something; and where it is certain, the
    exact rules a question offers for a line let that very line run."""
    found = split_line(text)
    assert isinstance(found.commands, tuple)
    call = Call("run_command", {"command": text}, None)
    offers = call.offers()
    if not found.certain or not found.commands:
        assert offers == ()
        return
    policy = PermissionPolicy("ask", rules=list(offers[0].rules))
    assert policy.decide("run_command", "command", {"command": text}).verdict == "allow", (text, offers[0].text)
