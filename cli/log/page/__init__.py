"""The session page behind `scribe log html` and `scribe log serve`: a pure function from a
session's events to one self-contained HTML document (see document.py)."""

from __future__ import annotations

from .document import SessionPage, session_page

__all__ = ["SessionPage", "session_page"]
