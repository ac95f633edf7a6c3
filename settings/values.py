"""Effective settings: flags > SCRIBE_* environment > workspace config > user config > defaults.

Each setting is one field of `Settings`; its environment variable is SCRIBE_<NAME> and its
config-file key is <name>, so the three spellings never drift apart.

The workspace config (`<workspace>/.scribe/config.toml`) applies only once the person trusts
the workspace (settings/trust.py): until then its settings are ignored, whole. A state folder that
SCRIBE_HOME moves outside the workspace is the person's own, and so is the config file in it.
Which files apply, and reading them once, is settings/files.py's.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .files import ConfigError, ConfigFiles, read_config
from .trust import WorkspaceTrust

# The current Sonnet and Haiku in the SDK's model list (anthropic 2.14).
DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_OBSERVER_MODEL = "claude-haiku-5-5"


class PermissionMode(StrEnum):
    """What runs without asking (agent/permissions.py has the table)."""

    READ_ONLY = "read-only"
    PLAN = "plan"  # reading only, until the person accepts the plan
    ASK = "ask"
    ACCEPT_EDITS = "accept-edits"
    FULL_AUTO = "full-auto"


PERMISSION_MODES = tuple(m.value for m in PermissionMode)
# When the REPL compresses memory: "auto" between turns (while the person types) on a server whose
# calls are slow, else at the call that needs it; "always" and "never" decide it outright.
OBSERVE_AHEAD = ("auto", "always", "never")
# What a session leaves to do as it ends (compressing its memory, curating the notes), in `scribe
# run` and the REPL: "detached" after scribe exits, by a short-lived process of its own;
# "inline" before scribe exits (the exit waits for it, and says so).
HOUSEKEEPING = ("detached", "inline")
# Seconds a model call may go without a byte from the server: enough for a long prompt to be
# read and for the pauses of a long answer, far short of the SDK's ten minutes.
DEFAULT_REQUEST_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL
    observer_model: str = DEFAULT_OBSERVER_MODEL
    max_tokens: int = 16384
    permission_mode: PermissionMode = PermissionMode.ACCEPT_EDITS
    max_turns: int = 50
    observe_tokens: int = 30_000
    reflect_tokens: int = 40_000
    retention: float = 0.2
    observe_on_payback: bool = True
    compress_when_cold: bool = True
    reflect_on_payback: bool = True
    command_timeout_s: float = 120.0
    # A longer tool output enters the prompt as a preview of this many characters (its head, and
    # its tail where the end matters), saying how to `recall` the rest (context/preview.py).
    preview_chars: int = 2_000
    settled_output_chars: int = 2_000
    output_cap_bytes: int = 1_000_000
    max_retries: int = 4
    retry_backoff_s: float = 1.0
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    allowed_paths: tuple[str, ...] = ()
    auto_commit: bool = False
    curate_notes: bool = True
    notes_tokens: int = 2000
    # The most tokens one observer, reflector or curator request may hold, whatever the log's size.
    side_call_tokens: int = 50_000
    # The most tokens a side call may answer with.
    side_call_max_tokens: int = 4096
    # Side calls ask for a forced tool call with a schema (servers without tools answer text).
    side_call_tools: bool = True
    observe_ahead: str = "auto"
    housekeeping: str = "detached"
    watch_files: bool = True
    # MCP servers (configured in [mcp.servers.NAME] tables or a trusted .mcp.json; settings/mcp_servers.py).
    mcp_start_timeout_s: float = 10.0
    mcp_call_timeout_s: float = 120.0
    trust_mcp_json: bool = False
    # Commands run in a bubblewrap sandbox where the platform allows it (workspace/sandbox/protection.py).
    sandbox: bool = True
    # In the sandbox: the most processes (threads too) one command may run, and the most address
    # space, in MiB, each of its processes may map; 0: no limit (workspace/sandbox/limits.py).
    command_max_processes: int = 4096
    command_max_memory_mb: int = 16384
    # Seconds of regular-expression matching one search may spend (search_files, recall, log search).
    regex_timeout_s: float = 5.0
    # New sessions offer the model the todo tool (its task list); a session keeps what it started with.
    todo_tool: bool = True
    # New sessions offer the model the task tool: sub-agents it hands work to (agent/task.py).
    task_tool: bool = True
    # The model's context window in tokens; 0: known from the model (Claude), the server's own
    # report (llama.cpp's /props) or a refused request's words (model/window.py).
    context_tokens: int = 0
    # web_fetch (tools/web.py): in new sessions, and what one fetch may cost and reach.
    web_fetch: bool = False
    web_fetch_domains: tuple[str, ...] = ()
    web_fetch_max_bytes: int = 2_000_000
    web_fetch_timeout_s: float = 30.0
    # OpenTelemetry export (telemetry/): off unless turned on; prompt text only when asked for.
    enable_telemetry: bool = False
    telemetry_log_prompts: bool = False

    def __post_init__(self) -> None:
        # Built from a file, the environment, a flag or code, the mode is always the enum.
        object.__setattr__(self, "permission_mode", PermissionMode(self.permission_mode))

    def recorded(self) -> dict[str, Any]:
        """What the session event keeps: everything, so a request is rebuilt from the log alone."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_recorded(cls, record: Mapping[str, Any]) -> Settings:
        """The settings `recorded()` gave (a setting this scribe does not know is left out)."""
        values: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
                                  for name, value in record.items() if name in FIELDS}
        return cls(**values)


FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
# The range in which each number makes sense; a value outside is refused, not used. (Outputs cut
# to a handful of characters would hide the very line that names what to recall.)
LIMITS: dict[str, tuple[float, float | None]] = {
    "max_tokens": (1, None), "max_turns": (1, None), "observe_tokens": (500, None),
    "reflect_tokens": (500, None), "retention": (0.0, 0.9), "command_timeout_s": (0.1, None),
    "preview_chars": (200, None), "settled_output_chars": (200, None),
    "output_cap_bytes": (1000, None), "max_retries": (0, None), "retry_backoff_s": (0.0, None),
    "request_timeout_s": (0.1, None), "notes_tokens": (0, None), "mcp_start_timeout_s": (0.1, None),
    "mcp_call_timeout_s": (0.1, None), "regex_timeout_s": (0.01, None), "context_tokens": (0, None),
    "command_max_processes": (0, None), "command_max_memory_mb": (0, None),
    # Room for the instructions and a little input at least (a local model's window may be 4,096
    # tokens); at most a 200k-token context window less the side call's own answer and a margin.
    "side_call_tokens": (1_500, 190_000), "side_call_max_tokens": (64, 32_000),
    "web_fetch_max_bytes": (1_000, 100_000_000), "web_fetch_timeout_s": (0.1, 600.0),
}


# Settings known by an earlier name, which config files and SCRIBE_* variables may still use:
# the old name sets the new setting (naming both is refused).
RENAMED: Mapping[str, str] = {"render_output_chars": "preview_chars"}


# The REPL's own defaults: a person is there to answer, so it asks before edits and commands.
REPL_DEFAULTS: Mapping[str, Any] = {"permission_mode": PermissionMode.ASK}
# What `scribe run` uses where the settings say `ask`: headless, nobody can answer.
HEADLESS_FOR_ASK = PermissionMode.ACCEPT_EDITS


def anthropic_url(base_url: str | None) -> bool:
    """No base URL (the SDK's default) or one of Anthropic's own hosts: Anthropic's API, whose
    bill the list prices are. Any other server (llama.cpp, Ollama, a proxy) is not."""
    if not base_url:
        return True
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:  # malformed: no call is made with it (model/client.check_credentials says why)
        return False
    return host == "anthropic.com" or host.endswith(".anthropic.com")


# `observer_model` when nothing sets it and the base URL is not Anthropic's: the side calls go to
# the same server as the agent's, which may serve only its own model (llama.cpp answers a Claude
# name with it, and it would be logged as Claude), or pass Anthropic's answers on (a proxy).
OBSERVER_AUTO = "auto"
OBSERVER_FOLLOWS = (f"default: {OBSERVER_AUTO}, the server is not Anthropic's (the agent's model; "
                    f"{DEFAULT_OBSERVER_MODEL} once Anthropic's API is seen answering through it)")


def observer_for(observer_model: str, anthropic_answers: bool, agent_model: str) -> str:
    """The model an observer, reflector or curator call asks for: `observer_model` as set, or for
    `auto` the default observer where Anthropic's API answers the agent (its own URL, or a proxy
    passing its answers on: they carry its header), else the agent's own model."""
    if observer_model != OBSERVER_AUTO:
        return observer_model
    return DEFAULT_OBSERVER_MODEL if anthropic_answers else agent_model


def modes_by_front_end(settings: Settings, origin: Mapping[str, str]) -> dict[str, str]:
    """The permission mode each front end starts in with these settings (`scribe config`)."""
    repl = REPL_DEFAULTS["permission_mode"] if origin.get("permission_mode") == "default" else settings.permission_mode
    return {"repl": repl, "run": HEADLESS_FOR_ASK if settings.permission_mode == "ask" else settings.permission_mode}


def load_settings(workspace: Path, flags: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None,
                  defaults: Mapping[str, Any] | None = None, *, trust: WorkspaceTrust | None = None,
                  config: ConfigFiles | None = None) -> Settings:
    """`defaults` replace the built-in defaults for one front end (the REPL asks by default),
    below every file, variable and flag. `config`: the files as read already, else read now
    under `trust` (as `trust_of` finds it, unless given)."""
    return explain_settings(workspace, flags, environ, defaults, trust=trust, config=config)[0]


def explain_settings(workspace: Path, flags: Mapping[str, Any] | None = None,
                     environ: Mapping[str, str] | None = None,
                     defaults: Mapping[str, Any] | None = None, *,
                     trust: WorkspaceTrust | None = None,
                     config: ConfigFiles | None = None) -> tuple[Settings, dict[str, str]]:
    """The effective settings, and where each came from (`scribe config` shows both)."""
    environ = os.environ if environ is None else environ
    config = config or read_config(workspace, trust)
    values: dict[str, Any] = dict(defaults or {})
    origin = {name: "default" for name in FIELDS}
    for path, data in config.parsed:
        found = _settings_in(path, data)
        values.update(found)
        origin.update({name: str(path) for name in found})
    for name, variable in _variables():
        raw = environ.get(variable)
        if raw is not None and raw != "":
            values[name] = _from_environment(name, raw, variable)
            origin[name] = variable
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values.update(given)
    origin.update({name: "flag" for name in given})
    if origin["observer_model"] == "default" and not anthropic_url(environ.get("ANTHROPIC_BASE_URL")):
        # A Claude name asked of a local server is answered by its own model, and logged as
        # Claude: the default there is the model the agent uses.
        values["observer_model"] = OBSERVER_AUTO
        origin["observer_model"] = OBSERVER_FOLLOWS
    mode = values.get("permission_mode", PermissionMode.ACCEPT_EDITS)
    if mode not in PERMISSION_MODES:
        raise ConfigError(f"permission_mode '{mode}' is not one of {', '.join(PERMISSION_MODES)}")
    values["permission_mode"] = PermissionMode(mode)
    settings = Settings(**values)
    if settings.observe_ahead not in OBSERVE_AHEAD:
        raise ConfigError(f"observe_ahead '{settings.observe_ahead}' is not one of {', '.join(OBSERVE_AHEAD)}")
    if settings.housekeeping not in HOUSEKEEPING:
        raise ConfigError(f"housekeeping '{settings.housekeeping}' is not one of {', '.join(HOUSEKEEPING)}")
    return settings, origin


def _variables() -> list[tuple[str, str]]:
    """(setting, SCRIBE_* variable) for every setting, each earlier name's variable before the
    current one's, so that the current one wins where both are set."""
    old = [(new, f"SCRIBE_{name.upper()}") for name, new in RENAMED.items()]
    return old + [(name, f"SCRIBE_{name.upper()}") for name in FIELDS]


def _settings_in(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    # [mcp.servers.NAME] tables are read by settings/mcp_servers.py, [prices.MODEL] by settings/prices.py,
    # [[hooks.EVENT]] by settings/hooks.py, [permissions] by settings/rules.py.
    unknown = sorted(set(data) - set(FIELDS) - set(RENAMED) - TABLES)
    if unknown:
        raise ConfigError(f"{path}: unknown setting {', '.join(unknown)} (known: {', '.join(FIELDS)})")
    both = sorted(old for old, new in RENAMED.items() if old in data and new in data)
    if both:
        raise ConfigError(f"{path}: {both[0]} is the earlier name of {RENAMED[both[0]]}; set one of them")
    return {RENAMED.get(k, k): _coerce(RENAMED.get(k, k), v, f"{path}: {k}") for k, v in data.items() if k not in TABLES}


TABLES = {"mcp", "prices", "hooks", "permissions"}


def _coerce(name: str, value: Any, where: str) -> Any:
    """Check a TOML value (or a parsed environment value) against the field's type, or say
    clearly why not.

    Strict on purpose: TOML has numbers and booleans of its own, so a string, a float where an
    int belongs, or a boolean where a number belongs is a mistake to report, not a value to
    convert (`true` as a timeout once became 1 s). NaN and infinities are never a setting: NaN
    compares false with everything, so a NaN timeout never fires."""
    default = FIELDS[name].default
    try:
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ValueError
            return value
        if isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError
            return _within(name, value, where)
        if isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{where}: {name} must be a finite number, got {value}")
            return _within(name, float(value), where)
        if isinstance(default, tuple):
            if isinstance(value, str):
                return tuple(p for p in value.split(os.pathsep) if p)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return tuple(value)
            raise ValueError
        if not isinstance(value, str):
            raise ValueError
        return value
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{where}: expected {_kind(default)}, got {clipped_repr(value)}") from None


def _from_environment(name: str, raw: str, variable: str) -> Any:
    """An environment variable's text as the field's type: strings by nature, parsed as
    strictly as TOML would spell the value (no `2.7` for a whole number, no `5_000`)."""
    default = FIELDS[name].default
    text = raw.strip()
    value: Any = raw
    if isinstance(default, bool):
        value = {"1": True, "true": True, "yes": True, "on": True,
                 "0": False, "false": False, "no": False, "off": False}.get(text.lower(), raw)
    elif isinstance(default, int):
        value = int(text) if _INT.fullmatch(text) else raw
    elif isinstance(default, float):
        value = float(text) if _NUMBER.fullmatch(text) else raw
    if isinstance(value, str) and not isinstance(default, (str, tuple)):
        raise ConfigError(f"{variable}: expected {_kind(default)}, got {raw!r}")
    return _coerce(name, value, variable)


def clipped_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(default: Any) -> str:
    return "list of strings" if isinstance(default, tuple) else type(default).__name__


# Numbers as the environment spells them: decimal, with an optional sign, fraction and exponent;
# `nan` and `inf` parse, so that they are refused by name rather than called "not a number".
_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def _within(name: str, value: float, where: str) -> Any:
    low, high = LIMITS.get(name, (None, None))
    if low is not None and value < low:
        raise ConfigError(f"{where}: {name} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ConfigError(f"{where}: {name} must be at most {high}, got {value}")
    return value
