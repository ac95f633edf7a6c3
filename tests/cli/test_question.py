"""An approval question's answers, typed through prompt-toolkit's pipe input (no terminal, so no
guard): which keys and lines answer, and which are text that answers nothing."""

from __future__ import annotations

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from scribe.cli.repl.approve import KEYS, WORDS
from scribe.cli.repl.keys import Choice
from scribe.cli.repl.question import Answers, ask

ANSWERS = Answers(KEYS, WORDS, on_escape="no", meaning={"always": "no more questions about it"})
ESC, CTRL_D, UP = "\x1b", "\x04", "\x1b[A"


def answer(keys: str) -> Choice:
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys)
        return ask("  allow it? › ", ANSWERS)


@pytest.mark.parametrize(("keys", "word", "by_letter"), [
    ("y", "yes", True), ("N", "no", True),  # a lone first key, nothing after it
    ("y\r", "yes", False), ("n\r", "no", False),  # the letter and Enter: a word
    ("yes\r", "yes", False), ("no\r", "no", False),  # a key close behind the letter: a word
    ("always\r", "always", False), ("ALWAYS\r", "always", False),  # only ever a word
    ("a\ry", "yes", True), ("al\rn", "no", True),  # not a word: asked again
    ("yse\rn", "no", True), ("ys\rno\r", "no", False),  # a letter with more behind it is no answer
    ("xy\ryes\r", "yes", False), ("x\x7f\x7fy\r", "yes", False),  # once typing, y is text
    ("\r" + UP + "n", "no", True),  # Enter alone and an arrow only show the choices
    (ESC, "no", False), (CTRL_D, "no", False), ("wait" + ESC, "no", False),
])
def test_what_answers_a_question(keys: str, word: str, by_letter: bool) -> None:
    assert answer(keys) == Choice(word, by_letter)


def test_a_sentence_is_the_persons_message_not_an_answer() -> None:
    assert answer("what about xyz, is that a good idea?\r") == Choice(
        "message", False, message="what about xyz, is that a good idea?")
    assert answer("  any yes or no in here  \r").message == "any yes or no in here"
    assert answer("yes please\r") == Choice("message", False, message="yes please")
