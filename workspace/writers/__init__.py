"""workspace/writers/ (see workspace/__init__.py)."""
