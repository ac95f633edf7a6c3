"""The code checks clean, as CI checks it: the type checker over the package (its settings in
pyproject.toml's [tool.mypy]) and the linter over the tree. Each runs as its own process, once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_package_type_checks(tmp_path: Path) -> None:
    # The repository's root is the package (package-dir maps `scribe` to it): the checker reads it
    # as `scribe` from a folder that holds it under that name.
    (tmp_path / "scribe").symlink_to(ROOT)
    checked = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                              "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "scribe"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-2000:]


def test_the_tree_lints_clean() -> None:
    linted = subprocess.run([sys.executable, "-m", "ruff", "check", str(ROOT)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert linted.returncode == 0, linted.stdout[-6000:] + linted.stderr[-2000:]
