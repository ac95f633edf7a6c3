"""Known failures become one clear line on stderr and an exit code; nothing else is caught."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from scribe.context.render import RenderError
from scribe.log.jsonl import LogError, LogWriteError
from scribe.log.seal import SealError
from scribe.model.errors import ClientSetupError, ModelError
from scribe.settings.files import ConfigError
from scribe.settings.trust import TrustFileError
from scribe.workspace.images import ImageRefused

from .visible import visible

# Documented in docs/usage.md ("Exit codes").
EXIT_OK = 0
EXIT_FAILED = 1  # the model call or the turn failed
EXIT_USAGE = 2  # bad flags, config, credentials, or session choice
EXIT_MAX_TURNS = 3
EXIT_STORAGE = 4  # the file system refused to write the log or state folder (full, read-only)
EXIT_INTERRUPTED = 130


def warn(message: str) -> None:
    """One line on stderr, as `fail` says it, for what goes wrong without ending scribe."""
    print(f"scribe: {visible(message)}", file=sys.stderr)


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    # The message may carry a path or a server's words: shown, never obeyed by the terminal.
    print(f"scribe: {visible(message)}", file=sys.stderr)
    return typer.Exit(code)


@contextmanager
def cli_errors() -> Iterator[None]:
    try:
        yield
    except (LogWriteError, SealError) as exc:
        raise fail(str(exc), EXIT_STORAGE) from None
    except (ConfigError, TrustFileError, LogError, RenderError, ClientSetupError, ImageRefused) as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    except ModelError as exc:
        raise fail(str(exc), EXIT_FAILED) from None
