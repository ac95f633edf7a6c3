"""Exporting a process's sessions over OpenTelemetry: counters (OTLP metrics) and events (OTLP
logs) over HTTP/protobuf, to the collector the standard OTEL_EXPORTER_OTLP_* variables name.

`open_telemetry` gives a no-op when telemetry is off, without importing the SDK: a run that does
not export pays nothing for it. When on, the assembly (agent/opening.py) has it follow every
session it opens or starts, and each event its log appends is turned into readings (readings.py)
as it is appended. `close()` flushes what is left at the end of a run or REPL,
waiting at most FLUSH_WAIT_S: a slow or absent collector never holds the person up, and never
fails the run. What went wrong is kept and said once, in one line, by the caller.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from scribe import __version__
from scribe.log.events import Event, SessionEvent
from scribe.log.figures import Pricer
from scribe.settings.values import Settings
from scribe.tools.secrets import Redactor

from .readings import COUNTERS, Reading, Record, SessionReadings, record_attributes

# The longest a run waits at its end for the last export.
FLUSH_WAIT_S = 2.0
# Seconds one export may take, unless OTEL_EXPORTER_OTLP_TIMEOUT says otherwise (the SDK's own
# default, ten, with its retries, would keep a run waiting on a collector that is down).
EXPORT_TIMEOUT_S = 3.0
PROTOCOL = "http/protobuf"
INSTALL = "pip install 'scribe-agent[telemetry]'"


class Followed(Protocol):
    """A session as telemetry follows it: its first event, and who hears of each one appended."""

    @property
    def header(self) -> SessionEvent: ...

    @property
    def listeners(self) -> list[Callable[[Event], None]]: ...


class Telemetry:
    """Nothing exported: telemetry is off (or could not start, `problem` says why)."""

    def __init__(self, problem: str | None = None) -> None:
        self.problem = problem

    @property
    def on(self) -> bool:
        return False

    def follow(self, session: Followed, new: bool) -> None:
        """Export what `session` appends from now on (a `new` one counts as a session started)."""

    def close(self) -> list[str]:
        """Flush and stop; the lines worth saying (at most one)."""
        return [self.problem] if self.problem else []


def open_telemetry(settings: Settings, price: Pricer, environ: dict[str, str] | None = None) -> Telemetry:
    """The telemetry of this process: exporting when `enable_telemetry` is on, else nothing."""
    environ = dict(os.environ) if environ is None else environ
    if not settings.enable_telemetry:
        return Telemetry()
    protocol = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", PROTOCOL).strip() or PROTOCOL
    if protocol != PROTOCOL:
        return Telemetry(f"telemetry: OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported (scribe exports "
                         f"{PROTOCOL}); nothing was exported")
    try:
        return Exporting(settings, price, environ)
    except ImportError as exc:
        return Telemetry(f"telemetry is on, but the OpenTelemetry packages are missing ({exc.name}): {INSTALL}")


class Exporting(Telemetry):
    def __init__(self, settings: Settings, price: Pricer, environ: dict[str, str]) -> None:
        super().__init__()
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource

        self.price = price
        self.log_prompts = settings.telemetry_log_prompts
        self.redact = Redactor.from_environ()
        self.failures = _Failures()
        resource = Resource.create({"service.name": "scribe", "service.version": __version__})
        timeout = None if any(k in environ for k in _TIMEOUT_VARIABLES) else EXPORT_TIMEOUT_S
        self.meters: Any = None
        self.loggers: Any = None
        self._counters: dict[str, Any] = {}
        self._logger: Any = None
        if environ.get("OTEL_METRICS_EXPORTER", "otlp").strip() != "none":
            metrics = _watched(OTLPMetricExporter, self.failures)(timeout=timeout)
            interval = _millis(environ.get("OTEL_METRIC_EXPORT_INTERVAL"), 60_000)
            reader = PeriodicExportingMetricReader(metrics, export_interval_millis=interval)
            # shut down by close(), never again at exit (the SDK would say so on stderr)
            self.meters = MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)
            meter = self.meters.get_meter("scribe", __version__)
            self._counters = {name: meter.create_counter(name, unit=unit, description=about)
                              for name, (unit, about) in COUNTERS.items()}
        if environ.get("OTEL_LOGS_EXPORTER", "otlp").strip() != "none":
            logs = _watched(OTLPLogExporter, self.failures)(timeout=timeout)
            self.loggers = LoggerProvider(resource=resource, shutdown_on_exit=False)
            self.loggers.add_log_record_processor(BatchLogRecordProcessor(logs))
            self._logger = self.loggers.get_logger("scribe", __version__)
        self._quiet = _quiet_sdk(self.failures)
        self._quiet.__enter__()

    @property
    def on(self) -> bool:
        return True

    def follow(self, session: Followed, new: bool) -> None:
        header = session.header
        readings = SessionReadings(header.id, header.model, self.price, self.log_prompts)
        if new:
            self._export(*readings.started(header))
        session.listeners.append(lambda event: self._event(readings, event))

    def _event(self, readings: SessionReadings, event: Event) -> None:
        if isinstance(event, SessionEvent):
            return
        self._export(*readings.of(event))

    def _export(self, readings: list[Reading], records: list[Record]) -> None:
        for reading in readings:
            counter = self._counters.get(reading.name)
            if counter is not None:
                counter.add(reading.value, reading.attributes)
        if self._logger is None:
            return
        for record in records:
            body = self.redact(record.body) if record.body else None
            self._logger.emit(event_name=record.name, attributes=record_attributes(record), body=body)

    def close(self) -> list[str]:
        """Flush in a thread waited on at most FLUSH_WAIT_S; a collector that is down or slow is
        said once, never waited out."""
        done = threading.Event()

        def flush() -> None:
            try:
                for provider in (self.meters, self.loggers):
                    if provider is not None:
                        provider.shutdown()
            finally:
                done.set()

        threading.Thread(target=flush, name="scribe-telemetry-flush", daemon=True).start()
        finished = done.wait(FLUSH_WAIT_S)
        if finished:  # else the flush goes on unheard, and whatever it still says stays unprinted
            self._quiet.__exit__(None, None, None)
        problem = self.failures.line()
        if not finished and problem is None:
            problem = (f"telemetry: the collector did not take the last export within {FLUSH_WAIT_S:g} s; "
                       "it was left unsent")
        return [problem] if problem else []


_TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
                      "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT")


class _Failures:
    """The first export that failed, and why, from the exporters' results and the SDK's words."""

    def __init__(self) -> None:
        self.first: str | None = None
        self.endpoint: str | None = None
        self.lock = threading.Lock()

    def note(self, why: str, endpoint: str | None = None) -> None:
        with self.lock:
            if self.first is None:
                self.first = _gist(why)
            if self.endpoint is None and endpoint:
                self.endpoint = endpoint

    def line(self) -> str | None:
        if self.first is None:
            return None
        where = f" to {self.endpoint}" if self.endpoint else ""
        return f"telemetry: could not export{where} ({self.first}); the session went on without it"


def _watched(exporter: type, failures: _Failures) -> Callable[..., Any]:
    """The exporter class, made to note each failed export in `failures`."""

    class Watched(exporter):
        def export(self, *args: Any, **kwargs: Any) -> Any:
            result = super().export(*args, **kwargs)
            if getattr(result, "name", "") == "FAILURE":
                failures.note("the export failed", getattr(self, "_endpoint", None))
            return result

    return Watched


class _QuietHandler(logging.Handler):
    def __init__(self, failures: _Failures) -> None:
        super().__init__(logging.WARNING)
        self.failures = failures

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        self.failures.note(message)


@contextmanager
def _quiet_sdk(failures: _Failures) -> Iterator[None]:
    """While exporting, the SDK's own warnings (one per retry) are noted, not printed: the
    person hears of a failure once, from `close()`."""
    logger = logging.getLogger("opentelemetry")
    handler = _QuietHandler(failures)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


_GISTS = (("refused", "connection refused"), ("Failed to establish a new connection", "cannot connect"),
           ("Name or service not known", "unknown host"), ("timed out", "timed out"),
           ("Temporary failure in name resolution", "unknown host"))


def _gist(message: str) -> str:
    """The SDK's words about a failed export, in a few: the HTTP status, or what the connection met."""
    for marker, gist in _GISTS:
        if marker in message:
            return gist
    status = re.search(r"code: (\d{3})", message)
    if status:
        return f"HTTP {status.group(1)}"
    flat = " ".join(message.split())
    return flat if len(flat) <= 100 else flat[:97] + "..."


def _millis(value: str | None, default: int) -> int:
    try:
        number = int(value) if value else default
    except ValueError:
        return default
    return number if number > 0 else default
