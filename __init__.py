"""scribe: a coding agent whose memory is what it has seen and done."""

__version__ = "0.1.0"
