"""`python -m scribe.fakeapi --port N`: serve the fake API by hand, echoing each prompt back."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from .script import Reply, ScriptItem
from .server import FakeMessagesServer


def echo(request: dict[str, Any]) -> ScriptItem:
    """Answer with the text of the last user message, so a manual try shows the round trip."""
    content = request["messages"][-1]["content"]
    if isinstance(content, list):
        content = " ".join(b.get("text", f"[{b.get('type')}]") for b in content if isinstance(b, dict))
    return Reply.text(f"echo: {content}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scribe.fakeapi", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--cache-min-tokens", type=int, default=1024)
    args = parser.parse_args(argv)
    server = FakeMessagesServer(echo, cache_min_tokens=args.cache_min_tokens, host=args.host, port=args.port)
    url = server.start()
    print(f"fake Anthropic API listening on {url}  (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
