"""Secrets stay out of commands and out of the log: which variables count as secret, redaction
by value in every tool's output, and the real executable with a real key in its environment."""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path

import pytest

from helpers import run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.tools.base import ToolContext, ToolOutput
from scribe.tools.registry import builtin_tools, run_tool
from scribe.tools.secrets import Redactor, is_secret, is_secret_name, value_forms
from scribe.workspace.git.folders import command_protection

KEY = "sk-test-secret-key"  # what helpers.scribe_env gives the executable
SANDBOXED = command_protection(Path("/")).sandboxed


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GITHUB_TOKEN", "db_password",
                                  "MYSQL_PWD", "PGPASS", "SMTP_PASS", "GH_PAT", "NPM_AUTH", "SENTRY_DSN",
                                  "AWS_SECRET_ACCESS_KEY", "APIKEY", "HTTP_AUTHORIZATION", "SESSION_COOKIE",
                                  # the families a name rule of words and markers once missed
                                  "STRIPE_SK", "SLACK_WEBHOOK", "DISCORD_WEBHOOK_URL",
                                  "AZURE_STORAGE_CONNECTION_STRING", "OP_SESSION_my_team", "SAS",
                                  "GITLAB_JWT", "SSH_PRIVATE", "SENDGRID_SIGNATURE"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "PWD", "OLDPWD", "HOME", "SSH_AUTH_SOCK", "GIT_AUTHOR_NAME",
                                  "PASSENGER_COUNT", "LANG", "EDITOR", "PATCH_LEVEL", "TASK_ID", "DESK",
                                  "SESSION_ID", "TMUX_SESSION", "DBUS_SESSION_BUS_ADDRESS"])
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_credentials_in_a_url_make_a_value_secret() -> None:
    assert is_secret("DATABASE_URL", "postgres://app:pw-123@db/prod")
    assert is_secret("HTTPS_PROXY", "http://user:pass@proxy:3128")
    assert is_secret("REPO", "https://ghp_abcdefghijklmnopqrstuv@github.com/o/r.git")  # a token as the user
    assert not is_secret("HTTPS_PROXY", "http://proxy:3128")
    assert not is_secret("REMOTE", "ssh://git@github.com/o/r.git")  # a user name alone is no secret


def test_redaction_by_value_and_in_urls() -> None:
    redact = Redactor.from_environ({
        "ANTHROPIC_API_KEY": "sk-ant-api03-abcdef", "DATABASE_URL": "postgres://app:db-passw0rd@db/prod",
        "SHORT_TOKEN": "abc", "HOME": "/home/me",
    })
    text = redact("key=sk-ant-api03-abcdef pw=db-passw0rd url=mysql://root:other-pass@h/x short=abc home=/home/me")
    assert text == ("key=[redacted ANTHROPIC_API_KEY] pw=[redacted DATABASE_URL password] "
                    "url=mysql://root:[redacted]@h/x short=abc home=/home/me")


SK = "sk_live_51HxQpLmN0pQrStUvWx"


def _encoded_leaks(value: str) -> dict[str, str]:
    """How a program prints a secret it wants past a filter of plain values."""
    env = f"PATH=/usr/bin\nSTRIPE_SK={value}\nHOME=/root\n"
    whole = base64.b64encode(env.encode()).decode()
    return {
        "base64": base64.b64encode(value.encode()).decode(),
        "base64 of NAME=value": base64.b64encode(f"STRIPE_SK={value}".encode()).decode(),
        "base64 of a whole env, wrapped": "\n".join(whole[i:i + 76] for i in range(0, len(whole), 76)),
        "urlsafe base64": base64.urlsafe_b64encode(("x" + value).encode()).decode(),
        "hex": value.encode().hex(),
        "HEX": value.encode().hex().upper(),
        "reversed": value[::-1],
        "split by spaces": " ".join(value[i:i + 4] for i in range(0, len(value), 4)),
        "split across lines": value[:9] + "\n" + value[9:],
        "zero-width spaces": "\u200b".join(value),
        "hex split": " ".join(textwrap.wrap(value.encode().hex(), 4)),
    }


@pytest.mark.parametrize("how", list(_encoded_leaks(SK)))
def test_a_secret_printed_encoded_or_split_is_redacted(how: str) -> None:
    redact = Redactor.from_environ({"STRIPE_SK": SK})
    leaked = _encoded_leaks(SK)[how]
    text = redact(f"before {leaked} after")
    assert "[redacted STRIPE_SK" in text
    assert text.startswith("before ") and text.endswith(" after")
    # No eight characters of any encoding of the value itself are left (a partial base64 group
    # at either end, at most two bytes of it, may be).
    flat = "".join(text.split()).replace("\u200b", "")
    for form in value_forms(SK, "STRIPE_SK"):
        for at in range(0, len(form.text) - 8, 4):
            assert form.text[at:at + 8] not in flat, (how, form)


def test_text_without_secrets_is_left_as_it_was() -> None:
    redact = Redactor.from_environ({"STRIPE_SK": SK})
    text = "a line\n\twith  spaces\u200b and a zero-width space, hex 736b5f6c and base64 c2tf\n"
    assert redact(text) == text


def test_every_tools_output_is_redacted_a_dotenv_read_too(workspace: Path) -> None:
    (workspace / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\nDATABASE_URL=postgres://app:s3cret-pw@db/x\n")
    ctx = ToolContext(workspace=workspace, redact=Redactor.from_environ({"ANTHROPIC_API_KEY": KEY}))
    tools = builtin_tools()
    read = run_tool(tools, "read_file", {"path": ".env"}, ctx).text
    found = run_tool(tools, "search_files", {"pattern": "API_KEY"}, ctx).text
    ran = run_tool(tools, "run_command", {"command": "cat .env"}, ctx).text
    for text in (read, found, ran):
        assert KEY not in text and "s3cret-pw" not in text
    assert "ANTHROPIC_API_KEY=[redacted ANTHROPIC_API_KEY]" in read
    assert "postgres://app:[redacted]@db/x" in read


class _ServerEcho:
    """A tool whose result carries non-text content as an MCP server may send it: kept in the
    log as sent, so a secret in it must be redacted there too."""

    name, kind, description = "echo_attachment", "mcp", "returns what a server might"
    input_schema = {"type": "object", "properties": {}}

    def summary(self, args: dict) -> str:
        return ""

    def run(self, args: dict, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("[audio/wav]", attachments=[
            {"type": "audio", "meta": {"note": f"token {KEY}"}, "uris": [f"https://bot:{KEY}@h/x"]}])


def test_secrets_in_non_text_content_are_redacted_too(workspace: Path) -> None:
    ctx = ToolContext(workspace=workspace, redact=Redactor.from_environ({"ANTHROPIC_API_KEY": KEY}))
    out = run_tool([_ServerEcho()], "echo_attachment", {}, ctx)
    assert KEY not in json.dumps(out.attachments)
    assert out.attachments == [{"type": "audio", "meta": {"note": "token [redacted ANTHROPIC_API_KEY]"},
                                "uris": ["https://bot:[redacted ANTHROPIC_API_KEY]@h/x"]}]


def scripted_command(command: str) -> list[Reply]:
    return [Reply([tool_use_block("run_command", {"command": command})]), Reply([text_block("done")])]


def logged_outputs(workspace: Path) -> list[str]:
    [log] = session_logs(workspace)
    return [json.loads(line)["output"] for line in log.read_text().splitlines() if '"tool_result"' in line]


# The pattern is spelt so that the command itself (sent back to the model) does not hold the key.
FIND_KEY = KEY[:-1] + f"[{KEY[-1]}]"
PROBE = (f"cat /proc/$PPID/environ /proc/1/environ 2>&1 | tr '\\0' '\\n' | grep -c '{FIND_KEY}'; "
         f"grep -l '{FIND_KEY}' /proc/[0-9]*/environ 2>/dev/null | wc -l; "
         "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -cE '^(MYSQL_PWD|GH_PAT|DATABASE_URL)='")


@pytest.mark.skipif(not SANDBOXED, reason="bubblewrap cannot create namespaces here")
def test_a_sandboxed_command_cannot_read_the_key_from_scribes_process(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(scripted_command(PROBE)) as server:
        env = scribe_env(server.base_url, home, MYSQL_PWD="mysql-pw-1", GH_PAT="gh-pat-12345",
                         DATABASE_URL="postgres://app:db-pw-123@db.invalid/x")
        ran = run_scribe(["run", "-p", "full-auto", "go"], workspace, env)
        sent = b"".join(r.body for r in server.requests).decode()
    assert ran.code == 0, ran.err
    # no environment holds the key, no process shows it, no secret variable was passed on
    assert logged_outputs(workspace) == ["0\n0\n0\n[exit code 1]"]
    assert KEY not in sent


def test_without_a_sandbox_the_key_is_still_redacted_from_the_log(workspace: Path, home: Path) -> None:
    command = "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep ANTHROPIC_API_KEY; echo end"
    with FakeMessagesServer(scripted_command(command)) as server:
        ran = run_scribe(["run", "-p", "full-auto", "go"], workspace,
                         scribe_env(server.base_url, home, SCRIBE_SANDBOX="false"))
        sent = b"".join(r.body for r in server.requests).decode()
    assert ran.code == 0, ran.err
    [output] = logged_outputs(workspace)
    assert KEY not in output and KEY not in sent
    # As root nothing keeps a command out of scribe's process; as another user it is not
    # dumpable and the read fails. Either way the key never reaches the log.
    assert output in ("ANTHROPIC_API_KEY=[redacted ANTHROPIC_API_KEY]\nend\n", "end\n"), output


def test_encoded_secrets_and_new_name_families_never_reach_the_log_or_the_api(workspace: Path, home: Path) -> None:
    """Through the executable: a workspace .env holds values of variables scribe's own
    environment holds under names the old rule missed; a command prints them encoded every way
    `_encoded_leaks` knows, and checks which of those variables it was given."""
    values = {"STRIPE_SK": SK, "SLACK_WEBHOOK": "https://hooks.slack.example/T000/B000/XXXXXXXXXXXX",
              "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountKey=k3yk3yk3y==",
              "OP_SESSION_team": "op-session-0123456789"}
    (workspace / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    command = ("base64 .env; base64 -w 0 .env; echo; xxd -p .env; rev .env; "
               "python3 -c \"import sys; print(open('.env').read().replace('', ' '))\"; "
               "env | grep -cE '^(STRIPE_SK|SLACK_WEBHOOK|AZURE_STORAGE_CONNECTION_STRING|OP_SESSION_team)='")
    with FakeMessagesServer(scripted_command(command)) as server:
        ran = run_scribe(["run", "-p", "full-auto", "go"], workspace, scribe_env(server.base_url, home, **values))
        sent = b"".join(r.body for r in server.requests).decode()
    assert ran.code == 0, ran.err
    [output] = logged_outputs(workspace)
    assert output.rstrip().endswith("0\n[exit code 1]"), output[-200:]  # no such variable passed on
    raw = (workspace / ".env").read_bytes()
    leaks = [base64.b64encode(raw).decode()[:40], raw.hex()[:40], raw.decode()[::-1][:30]]
    for value in values.values():
        leaks += [value, value[::-1], value.encode().hex()]
    for text in (output, sent):
        flat = "".join(text.split()).replace("\\n", "")
        for leak in leaks:
            assert "".join(leak.split()) not in flat, leak
    assert "[redacted STRIPE_SK, base64]" in output and "[redacted STRIPE_SK, hex]" in output
