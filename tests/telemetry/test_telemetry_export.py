"""Telemetry for teams, through the real executable: an OTLP/HTTP receiver on 127.0.0.1 decodes
what scribe exports with the official opentelemetry-proto messages, and the token and cost sums
it got for a session are what `scribe log stats --json` says of the same session. A collector
that is down costs the run one line, never its exit code."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from helpers import NO_API, run_scribe, scribe_env
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block


@dataclass
class Received:
    metrics: list[ExportMetricsServiceRequest] = field(default_factory=list)
    logs: list[ExportLogsServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)  # every export as it came, undecoded

    def sums(self, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
        """Counter `name` summed by its attributes. Sums are cumulative: each process's last export
        holds its totals (a series per process, told apart by its start time), added up here as a
        backend adds them up."""
        latest: dict[tuple[tuple[tuple[str, Any], ...], int], float] = {}
        for request in self.metrics:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name != name:
                            continue
                        assert metric.sum.is_monotonic
                        for point in metric.sum.data_points:
                            key = tuple(sorted((a.key, _value(a.value)) for a in point.attributes))
                            value = point.as_double if point.HasField("as_double") else point.as_int
                            latest[(key, point.start_time_unix_nano)] = value
        summed: dict[tuple[tuple[str, Any], ...], float] = defaultdict(float)
        for (key, _), value in latest.items():
            summed[key] += value
        return dict(summed)

    def records(self) -> list[dict[str, Any]]:
        found = []
        for request in self.logs:
            for resource in request.resource_logs:
                for scope in resource.scope_logs:
                    for record in scope.log_records:
                        attributes = {a.key: _value(a.value) for a in record.attributes}
                        found.append({"name": record.event_name or attributes.get("event.name"),
                                      "body": _value(record.body) if record.HasField("body") else None,
                                      **attributes})
        return found


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture
def collector() -> Iterator[tuple[str, Received]]:
    received = Received()

    class Receiver(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.paths.append(self.path)
            received.bodies.append(body)
            assert self.headers["Content-Type"] == "application/x-protobuf"
            if self.path == "/v1/metrics":
                received.metrics.append(ExportMetricsServiceRequest.FromString(body))
                answer = ExportMetricsServiceResponse().SerializeToString()
            elif self.path == "/v1/logs":
                received.logs.append(ExportLogsServiceRequest.FromString(body))
                answer = ExportLogsServiceResponse().SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", received
    finally:
        server.shutdown()
        server.server_close()


def test_the_collector_gets_token_and_cost_sums_equal_to_log_stats(
        workspace: Path, home: Path, collector: tuple[str, Received]) -> None:
    endpoint, received = collector
    (workspace / "notes.txt").write_text("ship on friday\n")
    script = [Reply([text_block("Looking."), tool_use_block("read_file", {"path": "notes.txt"}),
                     tool_use_block("run_command", {"command": "date"})]),
              Reply.text("It ships on Friday."), Reply.text("Still Friday.")]
    server = FakeMessagesServer(script, cache_min_tokens=64)
    env = scribe_env(server.start(), home, SCRIBE_ENABLE_TELEMETRY="1", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
                     OTEL_RESOURCE_ATTRIBUTES="team=tools")
    try:
        first = run_scribe(["run", "when does it ship? my password is hunter2hunter2", "-o", "json"], workspace, env)
        second = run_scribe(["run", "-c", "and again?", "-o", "json"], workspace, env)
    finally:
        server.stop()
    assert first.code == 0 and second.code == 0, (first.err, second.err)
    assert first.err == "" and second.err == ""  # an export that works says nothing
    session = first.json()["session_id"]
    stats = run_scribe(["log", "stats", "--json", session], workspace, env).json()["total"]
    assert stats["calls"] == 3 and stats["cost_usd"] > 0
    tokens: dict[str, float] = defaultdict(float)
    for key, value in received.sums("scribe.token.usage").items():
        attributes = dict(key)
        assert attributes["session.id"] == session and attributes["purpose"] == "agent"
        assert attributes["model"] == "claude-sonnet-5-5"
        tokens[str(attributes["type"])] += value
    assert {kind: tokens[kind] for kind in ("input", "output", "cache_read", "cache_write")} == {
        kind: stats[kind] for kind in ("input", "output", "cache_read", "cache_write")}
    assert stats["cache_read"] > 0  # the second run read the first one's prefix
    cost = sum(received.sums("scribe.cost.usage").values())
    assert cost == pytest.approx(stats["cost_usd"], abs=1e-6)
    # one session started; one tool call allowed by the mode, one refused by it
    assert list(received.sums("scribe.session.count").values()) == [1]
    decisions = {dict(k)["tool"]: (dict(k)["decision"], v) for k, v in received.sums("scribe.tool.decision").items()}
    assert decisions == {"read_file": ("allowed", 1), "run_command": ("denied", 1)}
    # events: one per model call and tool result, attributed, and no prompt text
    records = received.records()
    calls = [r for r in records if r["name"] == "scribe.api_request"]
    assert len(calls) == 3 and all(r["session.id"] == session and r["purpose"] == "agent" for r in calls)
    assert sum(r["input_tokens"] for r in calls) == stats["input"]
    results = [r for r in records if r["name"] == "scribe.tool_result"]
    assert sorted((r["tool"], r["success"]) for r in results) == [("read_file", True), ("run_command", False)]
    prompts = [r for r in records if r["name"] == "scribe.user_prompt"]
    assert [r["prompt_length"] for r in prompts] == [len("when does it ship? my password is hunter2hunter2"),
                                                     len("and again?")]
    assert all(r["body"] is None for r in prompts)
    assert not any("hunter2" in str(r) for r in records)
    resource = {a.key: _value(a.value) for a in received.metrics[-1].resource_metrics[0].resource.attributes}
    assert resource["service.name"] == "scribe" and resource["team"] == "tools"


def test_prompt_text_is_exported_only_when_asked_for_and_redacted(
        workspace: Path, home: Path, collector: tuple[str, Received]) -> None:
    endpoint, received = collector
    server = FakeMessagesServer([Reply.text("ok")])
    env = scribe_env(server.start(), home, SCRIBE_ENABLE_TELEMETRY="1", SCRIBE_TELEMETRY_LOG_PROMPTS="1",
                     OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, DEPLOY_TOKEN="tok-0123456789abcdef")
    try:
        ran = run_scribe(["run", "deploy with tok-0123456789abcdef please"], workspace, env)
    finally:
        server.stop()
    assert ran.code == 0, ran.err
    [prompt] = [r for r in received.records() if r["name"] == "scribe.user_prompt"]
    assert prompt["body"] == "deploy with [redacted DEPLOY_TOKEN] please"


def test_no_file_content_or_command_output_is_exported_even_with_prompts_on(
        workspace: Path, home: Path, collector: tuple[str, Received], monkeypatch: pytest.MonkeyPatch) -> None:
    """The REPL, as a person uses it: `@.env` attaches the file, `!cat .env` runs a command, the
    model reads the file and cats it too. The prompts are exported as typed; the file's content
    reaches the collector by none of those four ways."""
    from helpers import as_a_person
    from repl_driver import run_repl

    endpoint, received = collector
    marker = "sk_live_51Hx9marker"
    (workspace / ".env").write_text(f"STRIPE_KEY={marker}\n")
    as_a_person(monkeypatch, workspace, home)
    monkeypatch.setenv("SCRIBE_ENABLE_TELEMETRY", "1")
    monkeypatch.setenv("SCRIBE_TELEMETRY_LOG_PROMPTS", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    script = [Reply([tool_use_block("read_file", {"path": ".env"}),
                     tool_use_block("run_command", {"command": "cat .env"})]),
              Reply.text("It holds a Stripe key."), Reply.text("You are welcome.")]
    ran = run_repl(workspace, script, "@.env what is in here?\r!cat .env\rthanks\r", mode="full-auto")
    assert marker in ran.texts[0]  # the model was sent the file, as the person asked
    prompts = [r for r in received.records() if r["name"] == "scribe.user_prompt"]
    assert [(p["body"], p["prompt_length"]) for p in prompts] == [
        ("@.env what is in here?", 22), ("!cat .env", 9), ("thanks", 6)]
    assert len([r for r in received.records() if r["name"] == "scribe.tool_result"]) == 2
    assert received.bodies and not any(marker.encode() in body for body in received.bodies)


def test_a_collector_that_is_down_costs_one_line_and_never_the_run(workspace: Path, home: Path) -> None:
    server = FakeMessagesServer([Reply.text("Done.")])
    env = scribe_env(server.start(), home, SCRIBE_ENABLE_TELEMETRY="1", OTEL_EXPORTER_OTLP_ENDPOINT=NO_API)
    try:
        ran = run_scribe(["run", "hello"], workspace, env, process=True)
    finally:
        server.stop()
    assert ran.code == 0 and ran.out == "Done.\n"
    assert ran.err.count("\n") == 1 and ran.err.startswith("scribe: telemetry: "), ran.err
    assert "Traceback" not in ran.err


def test_an_unsupported_protocol_or_missing_telemetry_is_one_line(workspace: Path, home: Path) -> None:
    server = FakeMessagesServer([Reply.text("Done.")])
    env = scribe_env(server.start(), home, SCRIBE_ENABLE_TELEMETRY="1", OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    try:
        ran = run_scribe(["run", "hello"], workspace, env)
    finally:
        server.stop()
    assert ran.code == 0
    assert ran.err == ("scribe: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (scribe exports "
                       "http/protobuf); nothing was exported\n")
