"""workspace/git/ (see workspace/__init__.py)."""
