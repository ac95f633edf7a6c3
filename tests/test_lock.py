"""The lock a fresh clone installs with: constraints.txt pins every package the README's test
install brings, and the README's install commands and .ci/run use it."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from benchmarks.deps import MODEL_PACKAGE, canonical, compare, read_pins

ROOT = Path(__file__).resolve().parent.parent


def brought_by(project: str, extras: set[str]) -> set[str]:
    """Every distribution installing `project` with `extras` brings here, itself left out."""
    found: set[str] = set()
    queue = [(project, extras)]
    while queue:
        name, wanted = queue.pop()
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not any(
                    requirement.marker.evaluate({"extra": extra}) for extra in wanted | {""}):
                continue
            key = canonical(requirement.name)
            if key in found:
                continue
            found.add(key)
            queue.append((requirement.name, set(requirement.extras)))
    return found


def test_the_lock_pins_every_package_the_test_install_brings() -> None:
    pins = read_pins((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    needed = brought_by("scribe-agent", {"test"}) | {canonical(Requirement(MODEL_PACKAGE).name)}
    assert sorted(needed - set(pins)) == []
    # and each pin satisfies the project's own range for it
    for line in metadata.requires("scribe-agent") or []:
        requirement = Requirement(line)
        pinned = pins.get(canonical(requirement.name))
        if pinned is not None:
            assert requirement.specifier.contains(pinned, prereleases=True), (requirement, pinned)


def test_every_install_the_readme_gives_for_the_tests_goes_through_the_lock() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- test-command -->", 1)[1].split("```bash\n", 1)[1].split("\n```", 1)[0]
    installs = [part for part in command.split("&&") if "pip install" in part]
    assert len(installs) == 2 and all("-c constraints.txt" in part for part in installs), command


def test_ci_installs_the_debian_packages_the_readme_names_with_the_readmes_own_line(tmp_path: Path) -> None:
    """.ci/run reads both blocks from the README: its function, run on the README, gives them."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    function = re.search(r"^readme_block\(\) \{\n.*?^\}\n", script, re.MULTILINE | re.DOTALL)
    assert function is not None
    ran = subprocess.run(["bash", "-c", function.group(0) + "readme_block debian-packages; echo ---; "
                          "readme_block test-command"], cwd=ROOT, capture_output=True, text=True, check=True)
    apt, test = ran.stdout.split("---\n")
    assert apt.strip().endswith("apt-get install -y chromium bubblewrap tmux")
    assert test.strip().startswith("pip install -c constraints.txt -e '.[test]'")


def test_a_version_that_moved_is_reported_with_both_sides() -> None:
    locked = read_pins("# a comment\nAnthropic==2.17.0\ndocstring_parser==0.18.0\n-e file:///x\nold==1\n")
    newest = read_pins("anthropic==2.18.0\ndocstring-parser==0.18.0\nnew==2\n")
    assert [(c.package, c.locked, c.newest) for c in compare(locked, newest)] == [
        ("anthropic", "2.17.0", "2.18.0"), ("new", None, "2"), ("old", "1", None)]


def test_a_failing_test_is_reported_by_name_with_the_first_line_of_why(tmp_path: Path) -> None:
    import sys

    from benchmarks.deps import Report, failures, section

    (tmp_path / "test_probe.py").write_text(
        "import pytest\n\ndef test_holds():\n    pass\n\n"
        "def test_breaks():\n    assert 1 == 2, 'the SDK raised something new\\nsecond line'\n\n"
        "@pytest.mark.skip(reason='not here')\ndef test_skipped():\n    pass\n")
    junit = tmp_path / "junit.xml"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                          str(tmp_path / "test_probe.py")], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ran.returncode == 1, ran.stdout
    passed, failed, skipped = failures(junit)
    assert (passed, skipped) == (1, 1)
    assert [(f.test, f.reason) for f in failed] == [("test_probe::test_breaks",
                                                     "AssertionError: the SDK raised something new")]
    report = Report(python="3.11", changes=compare({"anthropic": "2.17.0"}, {"anthropic": "2.18.0"}),
                    passed=passed, failed=failed, skipped=skipped, pytest_status=1)
    text = section(report)
    assert report.broken and "| anthropic | 2.17.0 | 2.18.0 |" in text
    assert "| `test_probe::test_breaks` | AssertionError: the SDK raised something new |" in text
