"""workspace/watcher/ (see workspace/__init__.py)."""
