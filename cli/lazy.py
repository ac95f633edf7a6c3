"""A command group whose commands are built from their modules on first use: `scribe --help`
and `scribe log list` import only what they show or run (start-up time is paid on every call)."""

from __future__ import annotations

import importlib
from typing import ClassVar

import typer
from typer._click import Command, Context, HelpFormatter
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup


class LazyCommand:
    """Where a command is defined: a module and the name of its function or Typer app there,
    and optionally the first paragraph of its help, so listing it needs no import."""

    def __init__(self, module: str, attribute: str, summary: str | None = None) -> None:
        self.module, self.attribute, self.summary = module, attribute, summary


class LazyGroup(TyperGroup):
    """A group whose `table` names its commands; each is built as `app.command()` or
    `app.add_typer()` would, the first time it is asked for."""

    table: ClassVar[dict[str, LazyCommand]] = {}

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.table:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = build_command(cmd_name, self.table[cmd_name])
        return self.commands[cmd_name]

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        if any(entry.summary is None for entry in self.table.values()):
            super().format_commands(ctx, formatter)  # listing loads what has no summary of its own
            return
        limit = formatter.width - 6 - max(len(name) for name in self.table)
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(entry.summary or "", limit))
                                for name, entry in self.table.items()])


def build_command(name: str, entry: LazyCommand) -> Command:
    defined = getattr(importlib.import_module(entry.module), entry.attribute)
    holder = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)
    if isinstance(defined, typer.Typer):
        holder.add_typer(defined, name=name)
    else:
        holder.command(name=name)(defined)
    return typer.main.get_group(holder).commands[name]
