"""The model client: one streamed Messages API call through the official SDK, its attempts and
retries, what a broken answer is, the live events of a call, the context window a model or
server has, and the requests and answers of side calls (observer, reflector, curator).

May import: scribe.log, scribe.context, scribe.memory, scribe.settings."""
