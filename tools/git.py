"""Git facts about the workspace, read with gitpython. Absent git is a normal case, not an error."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git


@dataclass(frozen=True)
class GitState:
    head: str | None
    branch: str | None


def git_state(workspace: Path) -> GitState:
    try:
        repo = git.Repo(workspace, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return GitState(None, None)
    with repo:
        try:
            head = repo.head.commit.hexsha
        except ValueError:  # a repository with no commits yet
            head = None
        branch = None if repo.head.is_detached else repo.active_branch.name
    return GitState(head, branch)
