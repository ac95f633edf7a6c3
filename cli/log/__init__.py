"""`scribe log ...`: inspect session logs from the shell. Nothing here calls a model or imports
the SDK, so these commands start fast; each lives in its own module."""

from __future__ import annotations

import typer

from .html import html_page
from .list import list_sessions
from .prompt import prompt
from .search import search_logs
from .serve import serve_page
from .show import show
from .stats import stats
from .tail import tail
from .verify import verify

log_app = typer.Typer(
    name="log",
    help="Inspect session logs: list, show, tail, stats, prompt, search, verify; html and serve draw a "
         "session as a page. "
         "A session is named by its id or a unique prefix, and defaults to the latest of this workspace.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
log_app.command("list")(list_sessions)
log_app.command("show")(show)
log_app.command("tail")(tail)
log_app.command("stats")(stats)
log_app.command("prompt")(prompt)
log_app.command("search")(search_logs)
log_app.command("verify")(verify)
log_app.command("html")(html_page)
log_app.command("serve")(serve_page)
