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
