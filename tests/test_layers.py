"""The layout is the architecture: each package may import only the packages below it, and
nothing below `cli` prints. Read from the source, so a new import that points the wrong way
fails here, not in review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each package, and the packages it may import (besides itself). Lower layers first.
MAY_IMPORT: dict[str, set[str]] = {
    "log": set(),
    "context": {"log"},
    "memory": {"log", "context"},
    "workspace": {"log"},
    "tools": {"log", "workspace"},
    "settings": {"log", "workspace", "tools"},
    "model": {"log", "context", "memory", "settings"},
    "agent": {"log", "context", "memory", "workspace", "tools", "settings", "model", "telemetry"},
    # exporting what sessions did over OpenTelemetry: it follows the sessions the agent opens
    "telemetry": {"log", "workspace", "tools", "settings"},
    "cli": {"log", "context", "memory", "workspace", "tools", "settings", "model", "agent", "telemetry", "fakeapi"},
    # the scripted stand-in for the API, used by tests, benchmarks and `scribe demo`
    "fakeapi": set(),
}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """The scribe packages a module imports, at any depth (a function's late import included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    own = path.relative_to(ROOT).parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside its own package unless it climbs out
                base = own[: len(own) - node.level]
                names = [".".join(["scribe", *base, *([node.module] if node.module else [])])]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "scribe" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", list(MAY_IMPORT))
def test_each_package_imports_only_the_packages_below_it(package: str) -> None:
    wrong = {}
    for path in _modules(package):
        bad = _imports(path) - MAY_IMPORT[package] - {package}
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert not wrong, wrong


def test_every_package_says_what_it_owns_and_may_import() -> None:
    for package in MAY_IMPORT:
        doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"{package}/__init__.py needs a docstring saying what it owns"
        if MAY_IMPORT[package]:
            assert "May import" in doc, package


@pytest.mark.parametrize("package", [p for p in MAY_IMPORT if p != "cli"])
def test_nothing_below_cli_prints(package: str) -> None:
    printing = []
    for path in _modules(package):
        if path.name == "__main__.py":  # `python -m scribe.PACKAGE`: an entry point, as cli is
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                printing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not printing, printing
