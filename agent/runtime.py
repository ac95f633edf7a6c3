"""Assembling an agent for a workspace: settings, session (new or continued), tools, client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scribe.memory.events import to_record
from scribe.memory.tokens import TokenEstimator
from scribe.tools.base import ToolContext
from scribe.tools.registry import builtin_tools, tool_definitions

from .compress import Compressor
from .config import Settings
from .loop import Agent, Approver
from .model import ModelClient
from .permissions import PermissionPolicy
from .session import Session, open_session, start_session, store_for


@dataclass(frozen=True)
class SessionChoice:
    """Which session to run in: a new one, the latest of the workspace, or a given id."""

    continue_latest: bool = False
    session_id: str | None = None


def find_workspace(cwd: Path) -> Path:
    """The repository root when inside one, else the folder itself."""
    cwd = cwd.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def choose_session(workspace: Path, settings: Settings, choice: SessionChoice) -> Session:
    store = store_for(workspace)
    if choice.session_id:
        return open_session(store.find(choice.session_id, workspace))
    if choice.continue_latest:
        return open_session(store.latest(workspace))
    return start_session(workspace, settings, tool_definitions(builtin_tools()))


def build_agent(workspace: Path, settings: Settings, session: Session, *,
                approver: Approver | None = None, model: ModelClient | None = None) -> Agent:
    tools = builtin_tools()
    context = ToolContext(
        workspace=workspace,
        allowed_roots=tuple(Path(p).expanduser().resolve() for p in settings.allowed_paths),
        command_timeout_s=settings.command_timeout_s,
        output_cap_bytes=settings.output_cap_bytes,
        read_log=lambda: [to_record(e) for e in session.events],
    )
    client = model or ModelClient(max_retries=settings.max_retries, stream_retries=settings.stream_retries)
    output_chars = int(session.header.config.get("render_output_chars", settings.render_output_chars))
    return Agent(
        session=session,
        model=client,
        tools=tools,
        context=context,
        policy=PermissionPolicy(settings.permission_mode),
        max_turns=settings.max_turns,
        approver=approver,
        memory=Compressor(client, settings, TokenEstimator(output_chars=output_chars)),
    )
