"""The error a request can be rejected with, shared by the validators and the server."""

from __future__ import annotations

__all__ = ["InvalidRequest"]


class InvalidRequest(Exception):
    """A request the real API would refuse; carries the status and error type to answer."""

    def __init__(self, message: str, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
