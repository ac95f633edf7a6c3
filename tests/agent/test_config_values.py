"""Config values are strict: no NaN or infinity, no float for a whole number, no boolean or
string for a number in TOML, environment variables parsed as strictly; each refusal is one
line naming where the value came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_scribe, scribe_env, trust, trust_here
from scribe.settings.files import ConfigError
from scribe.settings.values import load_settings


@pytest.fixture
def write_config(workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("SCRIBE_HOME", raising=False)

    def write(text: str) -> Path:
        path = workspace / ".scribe" / "config.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text + "\n")
        trust_here(workspace)  # the person's own trust, in home's config folder
        return path
    return write


@pytest.mark.parametrize(("line", "message"), [
    ("command_timeout_s = nan", "command_timeout_s must be a finite number, got nan"),
    ("retry_backoff_s = nan", "retry_backoff_s must be a finite number, got nan"),
    ("request_timeout_s = inf", "request_timeout_s must be a finite number, got inf"),
    ("retention = -nan", "retention must be a finite number, got nan"),
    ('max_turns = "5"', "max_turns: expected int, got '5'"),
    ("max_turns = 2.7", "max_turns: expected int, got 2.7"),
    ("max_turns = 5.0", "max_turns: expected int, got 5.0"),
    ("command_timeout_s = true", "command_timeout_s: expected float, got True"),
    ('command_timeout_s = "30"', "command_timeout_s: expected float, got '30'"),
    ('watch_files = "no"', "watch_files: expected bool, got 'no'"),
    ("command_timeout_s = 1" + "0" * 400, "command_timeout_s: expected float, got 1000000000"),
    ("request_timeout_s = 0", "request_timeout_s must be at least 0.1, got 0.0"),
], ids=lambda value: value if " = " in value else None)
def test_a_toml_value_of_the_wrong_kind_is_refused(write_config, workspace: Path, line: str,  # type: ignore[no-untyped-def]
                                                   message: str) -> None:
    path = write_config(line)
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace, environ={})
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200 + len(str(path))


@pytest.mark.parametrize(("variable", "raw", "message"), [
    ("SCRIBE_COMMAND_TIMEOUT_S", "nan", "command_timeout_s must be a finite number, got nan"),
    ("SCRIBE_RETRY_BACKOFF_S", "NaN", "retry_backoff_s must be a finite number, got nan"),
    ("SCRIBE_REQUEST_TIMEOUT_S", "inf", "request_timeout_s must be a finite number, got inf"),
    ("SCRIBE_RETENTION", "1e400", "retention must be a finite number, got inf"),
    ("SCRIBE_MAX_TURNS", "5_000", "expected int, got '5_000'"),
])
def test_an_environment_value_is_parsed_strictly(workspace: Path, write_config, variable: str, raw: str,  # type: ignore[no-untyped-def]
                                                 message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace, environ={variable: raw})
    assert str(caught.value).startswith(f"{variable}: ") and message in str(caught.value)


def test_values_of_the_right_kind_are_taken(workspace: Path, write_config) -> None:  # type: ignore[no-untyped-def]
    write_config("command_timeout_s = 30\nmax_turns = 7\nwatch_files = false\nretry_backoff_s = 0.5")
    settings = load_settings(workspace, environ={"SCRIBE_REQUEST_TIMEOUT_S": " 45.5 ", "SCRIBE_MAX_RETRIES": "+2",
                                                 "SCRIBE_AUTO_COMMIT": "yes", "SCRIBE_OBSERVE_TOKENS": "9000"})
    assert (settings.command_timeout_s, settings.max_turns, settings.watch_files) == (30.0, 7, False)
    assert isinstance(settings.command_timeout_s, float) and settings.retry_backoff_s == 0.5
    assert (settings.request_timeout_s, settings.max_retries, settings.auto_commit) == (45.5, 2, True)
    assert settings.observe_tokens == 9000
    assert load_settings(workspace, environ={"SCRIBE_COMMAND_TIMEOUT_S": "1e3"}).command_timeout_s == 1000.0


@pytest.mark.parametrize(("setup", "message"), [
    ({"toml": "command_timeout_s = nan"}, "config.toml: command_timeout_s: command_timeout_s must be a finite number, got nan"),
    ({"SCRIBE_COMMAND_TIMEOUT_S": "nan"},
     "scribe: SCRIBE_COMMAND_TIMEOUT_S: command_timeout_s must be a finite number, got nan"),
], ids=["toml-nan", "env-nan"])
def test_scribe_run_refuses_a_bad_value_in_one_line(workspace: Path, home: Path, setup: dict[str, str],
                                                    message: str) -> None:
    if "toml" in setup:
        (workspace / ".scribe").mkdir(exist_ok=True)
        (workspace / ".scribe" / "config.toml").write_text(setup.pop("toml") + "\n")
        trust(workspace, home)
    ran = run_scribe(["run", "hi"], workspace, scribe_env("http://127.0.0.1:9", home, **setup))
    assert ran.code == 2
    assert ran.err.count("\n") == 1 and message in ran.err and "Traceback" not in ran.err


def test_preview_chars_is_still_set_by_its_earlier_name(write_config, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    """A config or a variable that says render_output_chars meant how much of an output the
    model sees; preview_chars is that setting now."""
    write_config("render_output_chars = 5000")
    assert load_settings(workspace, environ={}).preview_chars == 5000
    assert load_settings(workspace, environ={"SCRIBE_PREVIEW_CHARS": "800"}).preview_chars == 800
    path = write_config("render_output_chars = 100")
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace, environ={})
    assert str(caught.value) == f"{path}: render_output_chars: preview_chars must be at least 200, got 100"
    path = write_config("render_output_chars = 5000\npreview_chars = 3000")
    with pytest.raises(ConfigError) as caught:
        load_settings(workspace, environ={})
    assert str(caught.value) == f"{path}: render_output_chars is the earlier name of preview_chars; set one of them"
    write_config("")
    old = {"SCRIBE_RENDER_OUTPUT_CHARS": "700"}
    assert load_settings(workspace, environ=old).preview_chars == 700
    assert load_settings(workspace, environ=old | {"SCRIBE_PREVIEW_CHARS": "900"}).preview_chars == 900
