"""Shared fixtures: a real git workspace, so tools and agent code meet the same repository
shapes they will meet in use."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def git(workspace: Path, *args: str) -> str:
    """Run git in `workspace` ignoring the user's global and system config (signing, hooks,
    default branch), so the fixture behaves the same on every machine."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    result = subprocess.run(
        ["git", *args], cwd=workspace, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A temporary git repository with local identity and one commit holding README.md."""
    root = tmp_path / "workspace"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "config", "user.name", "Scribe Test")
    git(root, "config", "user.email", "scribe-test@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    (root / "README.md").write_text("# test workspace\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial commit")
    return root
