"""Warm start: `scribe run` without paying for Python's imports on every call.

Importing the Anthropic SDK takes over a second, longer than most of a headless turn. A warm
server (server.py) imports scribe and the SDK once and waits on a Unix socket of this user's;
the `scribe` executable (launch.py) hands it a `run` (its arguments, environment, working folder,
umask and its standard input, output and error themselves), the server forks a child that runs it
as the executable would, and the executable waits for that child, passing on the signals it gets
and leaving with the child's exit status. The first run with no server runs in its own process,
as always, and starts one in the background for the next; `SCRIBE_WARM_START=0` turns it off.
wire.py holds what both sides share: where the socket is and what they say over it."""
