"""The readers' contract over answers drawn from the catalogue of model habits (fakeapi/habits.py):
every tagged line kept, in order, with its priority; nothing invented; the canonical form
reached, and reading the canonical form again changes nothing. Habits that hold nothing usable
are refused with a reason."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scribe.fakeapi.habits import HABITS, Entry, Said, canonical_lines
from scribe.fakeapi.script import Reply
from scribe.log.events import ObservationEvent
from scribe.memory.answer import Answer, UnusableAnswer
from scribe.memory.notes import Fact, NotesRefused, read_notes
from scribe.memory.notes_reader import PROVENANCE
from scribe.memory.observations import TAGS, Observation, read_observations
from scribe.memory.observer import read_observer_answer
from scribe.memory.reflector import ReflectPlan, read_reflection

ACCEPTED = ("canonical", "mastra", "bulleted", "decorated", "fenced", "windows", "sectioned", "chatty")
REFUSED = {"prose": "no tagged observation lines", "refusal": "stop_reason refusal", "empty": "empty"}
THIS = "20261130-101010-abcdef"
EARLIER = "20261101-090909-123456"

# Words as observations use them: plain ones, and the exact details the readers must not touch.
word = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=9),
    st.sampled_from(["src/app.py", "`make check`", "(seq 12)", "exit=1", "auth.ts:45-60", "issue#12", "**bold**",
                     "value=5930199", "[x]", "tests/test_a.py::test_b", "é", "naïve", "🔴", "✅"]),
)
first_word = st.text(alphabet=string.ascii_letters, min_size=2, max_size=9).filter(
    lambda w: w.lower() not in {"high", "medium", "low", "done", "useful", "background", "primary", "from", "source"})
separator = st.sampled_from([" ", " ", " ", "  ", "; "])


@st.composite
def phrase(draw: st.DrawFn) -> str:
    words = [draw(first_word)] + draw(st.lists(word, max_size=7))
    seps = [draw(separator) for _ in words[1:]]
    return words[0] + "".join(s + w for s, w in zip(seps, words[1:], strict=True))


said = st.builds(Said, st.lists(st.tuples(st.sampled_from(TAGS), phrase()), min_size=1, max_size=8).map(tuple),
                 st.one_of(st.none(), phrase()), st.one_of(st.none(), phrase()))


def text_of(reply: Reply) -> Answer:
    return Answer("".join(b["text"] for b in reply.blocks if b["type"] == "text"), reply.stop_reason)


def expected_after_cut(meant: Said, answer: Answer) -> Said:
    """What survives a cut: the lines before the unfinished one."""
    complete = answer.text.count("\n")
    n = len(meant.lines)
    task_at = n if meant.current_task else None
    next_at = n + (1 if meant.current_task else 0) if meant.next_step else None
    return Said(meant.lines[:complete], meant.current_task if task_at is not None and complete > task_at else None,
                meant.next_step if next_at is not None and complete > next_at else None)


def as_said(lines: tuple[Observation, ...], task: str | None, step: str | None) -> Said:
    return Said(tuple((o.tag, o.text) for o in lines), task, step)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meant=said, name=st.sampled_from(list(HABITS)), seed=st.integers(0, 2**16))
def test_the_observer_reader_keeps_every_tagged_line_of_every_habit(meant: Said, name: str, seed: int) -> None:
    answer = text_of(HABITS[name].observe(meant, random.Random(seed)))
    if name in REFUSED:
        with pytest.raises(UnusableAnswer, match=REFUSED[name]):
            read_observations(answer)
        return
    expected = expected_after_cut(meant, answer) if name == "truncated" else meant
    if not expected.lines:
        with pytest.raises(UnusableAnswer, match="cut at max_tokens"):
            read_observations(answer)
        return
    reading = read_observations(answer)
    assert as_said(reading.lines, reading.current_task, reading.next_step) == expected
    assert reading.cut == (name == "truncated")
    assert reading.text == "\n".join(canonical_lines(expected))  # the one canonical form
    again = read_observations(reading.text)
    assert (again.lines, again.current_task, again.next_step, again.ignored) == (
        reading.lines, reading.current_task, reading.next_step, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meant=said, name=st.sampled_from(list(HABITS)), seed=st.integers(0, 2**16))
def test_the_reflector_reader_accepts_the_same_shapes_and_refuses_a_cut_one(meant: Said, name: str, seed: int) -> None:
    chunks = [ObservationEvent(seq=9, ts="t", text="🔴 x " * 4000, seq_from=1, seq_to=8, tokens=10_000, model="m")]
    plan = ReflectPlan(chunks, [], 10_000)
    answer = text_of(HABITS[name].observe(meant, random.Random(seed)))
    if name in REFUSED or name == "truncated":
        with pytest.raises(UnusableAnswer, match=REFUSED.get(name, "cut at max_tokens")):
            read_reflection(answer, plan)
        return
    reading = read_reflection(answer, plan)
    assert as_said(reading.lines, reading.current_task, reading.next_step) == meant


@st.composite
def notes_case(draw: st.DrawFn) -> tuple[list[Entry], list[Fact], str]:
    """Entries a curator means to keep (this session's facts, earlier sourced entries, lines the
    person wrote), the session's facts, and the current notes they come from."""
    entries: list[Entry] = []
    facts: list[Fact] = []
    current = ["# Project notes", ""]
    seen: set[str] = set()
    for n in range(draw(st.integers(1, 7))):
        # Entries that differ only in case or spacing are one entry to the reader, which keeps the first.
        text = draw(phrase().filter(lambda t: " ".join(t.lower().split()) not in seen))
        seen.add(" ".join(text.lower().split()))
        kind = draw(st.sampled_from(["fact", "earlier", "person"]))
        heading = draw(st.sampled_from([None, "Conventions", "Pitfalls"]))
        if kind == "fact":
            seq = 10 + 3 * n
            facts.append(Fact(seq, text))
            entries.append(Entry(text, f"{THIS}#{seq}", heading))
        elif kind == "earlier":
            entries.append(Entry(text, f"{EARLIER}#{n + 1}", heading))
            current.append(f"- {text} [from {EARLIER}#{n + 1}]")
        else:
            entries.append(Entry(text, None, heading))
            current.append(f"- {text}")
    return entries, facts, "\n".join(current) + "\n"


def kept_entries(notes_text: str) -> list[tuple[str, str | None]]:
    out = []
    for line in notes_text.splitlines():
        if line.startswith("- "):
            match = PROVENANCE.search(line)
            body = PROVENANCE.sub("", line)[2:].rstrip() if match else line[2:]
            out.append((body, f"{match.group(1)}#{match.group(2)}" if match else None))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=notes_case(), name=st.sampled_from(list(HABITS)), seed=st.integers(0, 2**16))
def test_the_curator_reader_keeps_every_traceable_entry_of_every_habit(
        case: tuple[list[Entry], list[Fact], str], name: str, seed: int) -> None:
    entries, facts, current = case
    answer = text_of(HABITS[name].curate(entries, random.Random(seed)))
    if name in REFUSED or name == "truncated":
        reason = {"prose": "no entry with a source", "truncated": "cut at max_tokens"}.get(name, REFUSED.get(name))
        with pytest.raises(NotesRefused, match=reason):
            read_notes(answer, 10_000, current=current, session_id=THIS, facts=facts)
        return
    notes = read_notes(answer, 10_000, current=current, session_id=THIS, facts=facts)
    assert kept_entries(notes.text) == [(e.text, e.source) for e in entries]
    assert notes.dropped == [] and notes.entries == len(entries)
    assert read_notes(notes.text, 10_000, current=current, session_id=THIS, facts=facts).text == notes.text


# --- the shapes named in the issue, one by one --------------------------------------------------

def test_mastra_s_own_format_reads_as_canonical_observations() -> None:
    answer = ("<observations>\nDate: Dec 4, 2025\n* 🔴 (09:15) User wants dark mode in settings.py\n"
              "* 🟡 (14:00) Agent debugging auth issue\n  * -> ran git status, found 3 modified files\n"
              "  * -> viewed auth.ts:45-60, found missing null check\n</observations>\n\n"
              "<current-task>\nPrimary: fixing the null check\nSecondary: dark mode\n</current-task>\n\n"
              "<suggested-response>\nRun the auth tests.\n</suggested-response>\n")
    assert read_observations(answer).text == (
        "🔴 User wants dark mode in settings.py\n"
        "🟡 Agent debugging auth issue; ran git status, found 3 modified files; viewed auth.ts:45-60, found missing null check\n"
        "Current task: fixing the null check; Secondary: dark mode\n"
        "Next step: Run the auth tests.")


@pytest.mark.parametrize("line", ["- 🔴 keep", "* 🔴 keep", "• 🔴 keep", "1. 🔴 keep", "**🔴** keep", "[🔴] keep",
                                  "🔴\ufe0f keep", "- **🔴\ufe0f** keep", "**🔴 keep**", "🔴: keep", "🔴 High: keep",
                                  "  3) [🔴] (14:30) keep"])
def test_each_decoration_of_a_tag_is_read_the_same(line: str) -> None:
    assert read_observations(f"Here are the observations:\r\n\r\n{line}\r\nCurent Task - x\r\n").text == (
        "🔴 keep\nCurrent task: x")


def test_a_line_cut_by_max_tokens_is_left_out_and_a_cut_answer_with_nothing_whole_is_refused() -> None:
    reading = read_observations(Answer("🔴 the user wants tabs\n🟡 ran the tests: 3 fail", "max_tokens"))
    assert reading.text == "🔴 the user wants tabs" and reading.cut
    with pytest.raises(UnusableAnswer, match="cut at max_tokens"):
        read_observations(Answer("🔴 the user wan", "max_tokens"))
    # a cut that lands right after a newline loses nothing
    assert read_observations(Answer("🔴 a\n🟡 b\n", "max_tokens")).text == "🔴 a\n🟡 b"
    # ... in any line ending: nothing was left out, so nothing is marked cut
    for ending in ("\r\n", "\r"):
        whole = read_observations(Answer(f"🔴 a{ending}🟡 b{ending}", "max_tokens"))
        assert whole.text == "🔴 a\n🟡 b" and not whole.cut, ending


def test_curator_sources_in_near_forms_or_missing_are_traced_or_dropped_alone() -> None:
    current = f"# Project notes\n\n- Always use tabs\n- CI runs on push [from {EARLIER}#4]\n"
    facts = [Fact(3, "Our tests run with `make check`, please remember that."), Fact(9, "Deploys go to staging-2")]
    answer = ("Here are the updated notes:\n```markdown\n## Conventions\n"
              f"* Tests run with `make check` (from {THIS}#3)\n• Deploys go to staging-2 source: {THIS[:15]}#9\n"
              "1. Always use tabs\n- CI runs on push\n- Something nobody said\n"
              f"- [{THIS}#9] The deploy target is staging-2\n```\nLet me know if you want changes.")
    notes = read_notes(answer, 500, current=current, session_id=THIS, facts=facts)
    assert kept_entries(notes.text) == [
        ("Tests run with `make check`", f"{THIS}#3"), ("Deploys go to staging-2", f"{THIS}#9"),
        ("Always use tabs", None), ("CI runs on push", f"{EARLIER}#4"),
        ("The deploy target is staging-2", f"{THIS}#9")]
    assert notes.dropped == ["- Something nobody said"] and notes.matched == 1


def test_an_answer_that_echoes_the_instructions_legend_is_not_read_as_observations() -> None:
    # what SmolLM2-135M wrote as an observer on llama.cpp: the priority legend, copied back
    echo = ("🔴 must keep: the user's goals and requests, decisions, constraints, preferences, facts the user stated.\n"
            "🟡 useful: files read or changed (exact paths), what a command showed\n🟢 background: context that may "
            "help later.\n")
    with pytest.raises(UnusableAnswer, match="repeats the instructions' priority legend"):
        read_observer_answer(Answer(echo))
    # among real observations, the echoed lines are left out and the rest kept
    read = read_observer_answer(Answer(echo + "🔴 User asked to rename greet() to hello() in app.py (seq 4)\n"))
    assert [o.line for o in read.lines] == ["🔴 User asked to rename greet() to hello() in app.py (seq 4)"]
    assert read.ignored >= 3
