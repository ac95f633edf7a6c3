"""Curating the project notes off the person's path.

A new session starts at once with the notes as they are; the earlier sessions that said
something the notes have not taken are curated meanwhile, in a thread, while the person types
or the turn runs (agent/curation/curator.py does the curating). Each earlier session is another log
with a writer of its own (its lock is taken for the curation), so the one-writer rule holds.

What is curated reaches the next session. What is not finished when scribe ends is not lost:
each log says what of it has been curated (`notes` events), so the next start picks up the
rest. Stopping is cooperative: `stop()` lets the curation of the session in hand end (a model
call cannot be cut short without losing its usage record), and the thread is a daemon, so an
exit that does not wait for it (the REPL's) never waits on a model.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from pathlib import Path

from scribe.agent.curation.curator import Curation, curate
from scribe.agent.session.session import notes_path, store_for
from scribe.agent.session.start import open_session
from scribe.log.jsonl import LogError, SessionLocked
from scribe.log.store import SessionFile
from scribe.memory.uncurated import needs_curation
from scribe.model.client import ModelClient
from scribe.settings.values import Settings


def uncurated(workspace: Path, settings: Settings) -> list[SessionFile]:
    """The sessions of the workspace whose logs say something the notes have not taken, oldest
    first (none when `curate_notes` is off). A sub-agent's session is not among them: its
    messages are its parent model's words, not the person's."""
    if not settings.curate_notes:
        return []
    return [found for found in store_for(workspace).sessions(workspace)
            if found.parent is None and needs_curation(found.path)]


class BackgroundCuration:
    """The curation of `sessions` into the workspace's notes, in a thread of its own."""

    def __init__(self, workspace: Path, settings: Settings, model: ModelClient,
                 sessions: Sequence[SessionFile]) -> None:
        self.workspace, self.settings, self.model = workspace, settings, model
        self.sessions = list(sessions)
        self._done: queue.SimpleQueue[Curation] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="scribe-curation", daemon=True)
        self._started = False

    def start(self) -> BackgroundCuration:
        """Start curating, once (a second call does nothing)."""
        if self.sessions and not self._started:
            self._started = True
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def finished(self) -> list[Curation]:
        """What was curated since the last time this was asked (to be shown)."""
        out: list[Curation] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the curation to end, at most `timeout_s`; True when it has."""
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Curate no further session after the one in hand."""
        self._stop.set()

    @property
    def failure(self) -> BaseException | None:
        """What ended the thread other than a curation's own outcome (a log that could not be
        written, say), for the front end to say."""
        return self._failure

    def _run(self) -> None:
        try:
            for found in self.sessions:
                if self._stop.is_set():
                    return
                self._done.put(curate_session(found, self.model, self.settings, self.workspace))
        except Exception as exc:  # noqa: BLE001 - handed to the front end, which says it in one line
            self._failure = exc


def curate_session(found: SessionFile, model: ModelClient, settings: Settings, workspace: Path) -> Curation:
    """Curate one earlier session into the workspace's notes, taking its log's one writer for it.
    One another process writes is passed over without a word: it is curated once it ends."""
    try:
        session = open_session(found)
    except SessionLocked:
        return Curation(False, f"notes: session {found.id} is in use by another process; skipped",
                        noteworthy=False)
    except LogError as exc:
        return Curation(False, f"notes: session {found.id} skipped: {exc}")
    try:
        return curate(session, model, settings, notes_path(workspace))
    finally:
        session.close()
