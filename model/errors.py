"""Failures the agent reports upward. Kept free of heavy imports so the CLI can name them
without loading the SDK (which takes over a second to import)."""

from __future__ import annotations


class ModelError(Exception):
    """A model call failed for good; the message is one line fit for the person."""


class ClientSetupError(ModelError):
    """The model client cannot be set up from the environment: fix it and run again."""


class MissingCredentials(ClientSetupError):
    pass


class BadBaseUrl(ClientSetupError):
    pass


class ContextOverflow(ModelError):
    """The server refused the request for its size (HTTP 400 naming its context window): the
    same request would be refused again, so it is not retried as it is (agent/loop.py compresses
    and tries once more)."""

    def __init__(self, message: str, requested: int | None, window: int) -> None:
        super().__init__(message)
        self.requested = requested
        self.window = window


class SideCallTooSlow(ModelError):
    """A side call ran past its deadline (model/sidecall.side_deadline) and was stopped."""
