"""scribe's benchmarks: cost of memory strategies and overhead of the harness, measured against
the project's fake Messages API. Run with `python -m benchmarks` from the repository root."""
