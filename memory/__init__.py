"""Memory: what the Observer and Reflector are asked and how their answers are read
(observer, reflector, the observation lines' reader, the answer shapes models use), when
observing pays for itself (payback), and the project notes with their curator's reader. Pure:
the calls themselves are made by the agent.

May import: scribe.log, scribe.context."""
