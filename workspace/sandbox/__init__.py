"""workspace/sandbox/ (see workspace/__init__.py)."""
