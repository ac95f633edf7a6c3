"""`scribe log serve` answers only its person: another user of the machine reaches the loopback
port, not the transcript. The real executable serves; the other user is a real one (`nobody`, or
one made with useradd), fetching over loopback from a process that runs as that user. And the
page `scribe log html` writes is private, as the log is."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import NO_API, SCRIBE, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply

SECRET_WORDS = "the launch codes are in drawer seven"
# Runs as the other user: the status and body of a GET of each path given, as JSON lines.
FETCH = """
import json, sys, urllib.request, urllib.error
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            print(json.dumps([answer.status, answer.read().decode("utf-8", "replace")]))
    except urllib.error.HTTPError as error:
        print(json.dumps([error.code, error.read().decode("utf-8", "replace")]))
"""


@pytest.fixture
def other_user() -> Iterator[int]:
    """The uid of another local user: `nobody`, else one made for the test (and removed after)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a process as another user")
    try:
        yield pwd.getpwnam("nobody").pw_uid
        return
    except KeyError:
        pass
    name = f"scribe-t{os.getpid()}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name).pw_uid
    finally:
        subprocess.run(["userdel", name], check=False)


def fetch_as(uid: int, *urls: str) -> list[tuple[int, str]]:
    python = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
    done = subprocess.run([python, "-c", FETCH, *urls], user=uid, group=pwd.getpwuid(uid).pw_gid, extra_groups=[],
                          capture_output=True, text=True, timeout=60, cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return [tuple(json.loads(line)) for line in done.stdout.splitlines()]  # type: ignore[misc]


def test_another_local_user_gets_403_not_the_transcript(workspace: Path, home: Path, other_user: int) -> None:
    with FakeMessagesServer([Reply.text(f"noted: {SECRET_WORDS}")]) as server:
        assert run_scribe(["run", "remember this"], workspace, scribe_env(server.base_url, home)).code == 0
    proc = subprocess.Popen([SCRIBE, "log", "serve"], cwd=workspace, env=scribe_env(NO_API, home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split()[0]
        parts = urllib.parse.urlsplit(url)
        base = f"http://127.0.0.1:{parts.port}"
        # the other user knows the port (any local user can list listening sockets), not the address
        for status, body in fetch_as(other_user, base + "/update?events=0&calls=0&blocks=0", base + "/",
                                     base + "/x/../update"):
            assert status == 403 and SECRET_WORDS not in body, (status, body[:200])
        token = parts.path.strip("/")
        assert parts.hostname == "127.0.0.1" and len(token) >= 32, url
        for status, body in fetch_as(other_user, *(base + guess for guess in (
                f"/{token[:-1]}{'y' if token.endswith('x') else 'x'}/update", f"/{token}", f"/{token.upper()}/update"))):
            assert status == 403 and SECRET_WORDS not in body, (status, body[:200])
        # the person, with the address it printed: the page and its JSON
        (page_status, page), (update_status, update) = fetch_as(os.geteuid(), url, url + "update?events=0")
        assert page_status == 200 and SECRET_WORDS in page
        assert update_status == 200 and isinstance(json.loads(update), dict)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_the_page_is_written_private_whatever_the_umask_and_the_old_file(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text(f"noted: {SECRET_WORDS}")]) as server:
        assert run_scribe(["run", "remember this"], workspace, scribe_env(server.base_url, home)).code == 0
    session = session_logs(workspace)[-1].stem
    page = workspace / "page.html"
    page.write_text("an older page anyone could read")
    page.chmod(0o644)
    old = os.umask(0o000)
    try:
        ran = run_scribe(["log", "html", "-o", str(page)], workspace, scribe_env(NO_API, home), process=True)
    finally:
        os.umask(old)
    assert ran.code == 0, ran.err
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and SECRET_WORDS in page.read_text()
    assert stat.S_IMODE(session_logs(workspace)[-1].stat().st_mode) == 0o600
    assert ran.out.startswith(f"wrote {page} (") and "KB, readable by you only)" in ran.out
    assert session in page.read_text()
