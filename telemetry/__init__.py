"""Telemetry for teams: what scribe's sessions did, exported over OpenTelemetry (OTLP over HTTP)
to a collector the team already runs. Off unless the person turns it on (`enable_telemetry`,
SCRIBE_ENABLE_TELEMETRY=1); the collector is named by the standard OTEL_EXPORTER_OTLP_*
variables. It exports what the log holds, the same usage values `scribe log stats` sums, and
never the text of a prompt unless the person opts in.

readings.py maps log events to counter readings and log records (pure); export.py owns the
OpenTelemetry SDK, imported only when telemetry is on, and the flush at exit.

May import: scribe.log, scribe.workspace, scribe.tools, scribe.settings."""
