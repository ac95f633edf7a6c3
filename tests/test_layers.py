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
    # the Python API: a front end on the agent core, as cli is
    "api": {"log", "context", "memory", "workspace", "tools", "settings", "model", "agent"},
    "cli": {"log", "context", "memory", "workspace", "tools", "settings", "model", "agent", "telemetry", "fakeapi"},
    # the scripted stand-in for the API, used by tests, benchmarks and `scribe demo`
    "fakeapi": set(),
}
# Inside a package, its folders by idea and the folders each may import (besides itself); the
# modules beside the folders import none of them.
INSIDE: dict[str, dict[str, set[str]]] = {
    "workspace": {
        "writers": set(),
        "sandbox": set(),
        # git runs in the sandbox and restores files through the writers
        "git": {"sandbox", "writers"},
        # the watcher asks git what it ignores through a query it is handed, not by importing git
        "watcher": {"writers"},
    },
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


def _folders_imported(path: Path, package: str) -> set[str]:
    """The folders of `package` (`workspace`: writers, sandbox, ...) a module imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            base = node.module or ""
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["scribe", package] and len(parts) > 2 and (ROOT / package / parts[2]).is_dir():
                found.add(parts[2])
    return found


@pytest.mark.parametrize("package", list(INSIDE))
def test_the_folders_inside_a_package_import_one_way(package: str) -> None:
    order = INSIDE[package]
    folders = {init.parent.name for init in (ROOT / package).glob("*/__init__.py")}
    assert folders == set(order), f"{package}/ has folders the order does not place: {folders ^ set(order)}"
    wrong = {}
    for path in _modules(package):
        inside = path.relative_to(ROOT / package).parts
        folder = inside[0] if len(inside) > 1 else None
        allowed = order[folder] | {folder} if folder else set()
        bad = _folders_imported(path, package) - allowed
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert not wrong, wrong


@pytest.mark.parametrize("package", list(INSIDE))
def test_each_folder_inside_a_package_says_what_it_owns_and_may_import(package: str) -> None:
    for folder, allowed in INSIDE[package].items():
        doc = ast.get_docstring(ast.parse((ROOT / package / folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"{package}/{folder}/__init__.py needs a docstring saying what it owns"
        if allowed:
            assert "May import: " + ", ".join(f"scribe.{package}.{f}" for f in sorted(allowed)) in doc, folder
        else:
            assert f"Imports nothing of the {package}" in doc, folder


def test_the_inside_order_check_finds_a_wrong_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from scribe.workspace.git.run import run_git\nimport scribe.workspace.sandbox.bwrap\n")
    assert _folders_imported(module, "workspace") == {"git", "sandbox"}


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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["scribe", *parts])


def _module_graph() -> dict[str, set[str]]:
    """Every module of the package and the modules it imports, at any depth and under
    TYPE_CHECKING too (an import there is still a dependency of the code that reads it)."""
    paths = {_module_name(p): p for package in MAY_IMPORT for p in _modules(package)}
    paths.update({_module_name(ROOT / name): ROOT / name for name in ("__init__.py", "__main__.py")})
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                # A package's own __init__ is imported before any of its modules: not a dependency
                # a module chose, and never a cycle by itself.
                if target in graph and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    """At module level, through any chain of imports: a cycle is a seam not yet named."""
    assert _cycles(_module_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists the packages one by one: a folder missing there is missing from every
    installation that is not editable."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {_module_name(init) for init in ROOT.rglob("__init__.py")
               if not init.relative_to(ROOT).parts[0].startswith((".", "tests", "benchmarks", "build"))}
    assert folders == listed
