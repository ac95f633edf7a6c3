"""One task that needs reading 30 files, done by the `scribe` executable with and without
sub-agents, against the project's fake Messages API.

The workspace is a git repository of FILES Python modules of a few hundred lines each (150 to
450, generated from a seed: classes, functions, loops, error handling), some of whose functions
open a network socket (`socket.socket`, `socket.create_connection`, ...) and some of which only
look names up (`socket.gethostname`, `socket.getaddrinfo`), so a search for "socket" does not
answer it. The prompt asks which functions open a socket, and on which line.

The scripted model answers from what it was sent, as a model that reads would:
- the parent lists `src/` first; without the `task` tool (`SCRIBE_TASK_TOOL=false`) it reads the
  files itself, READS_PER_ANSWER `read_file` calls per answer, then answers from the files'
  contents in its prompt; with it, it makes one `task` call per CHILDREN share of the listing,
  all in one answer, and answers from the sub-agents' results;
- each sub-agent reads the files its prompt names, READS_PER_ANSWER per answer, and answers
  with what it found in them, one `path:line function` a line;
- side calls (the compression and notes a session leaves, done after the run by a finisher
  process, as shipped) are answered by the fake API's SideCallModel from their input.

Each agent call's answer is sent after `call_s` seconds (a stand-in for the model's own time,
0 for none; several sub-agents wait at once), and the fake API counts every token and keeps the
prompt cache as it does for every benchmark. For each way of running it:
- the parent's peak context: the largest prompt (input, cache read and cache write) of any of
  the parent's own calls, from its log's usage events, as the fake API counted them;
- the dollars at list price of every call, parent and sub-agents, side calls included:
  `scribe log stats --json` of the parent (`with_children` where it has sub-agents), read once
  every finisher the run left has ended; beside it, the fake API's own bill of every request
  it answered, priced the same way (log/pricing.py through bills.py);
- the wall time of the `scribe run` process, start to exit (what a script calling it waits);
- whether the answer names exactly the functions the generator put a socket in.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scribe.agent.session.instructions import SUBAGENT_GUIDANCE
from scribe.fakeapi import (
    FakeMessagesServer,
    Reply,
    ScriptItem,
    SideCallModel,
    side_call_kind,
    text_block,
    tool_use_block,
)
from scribe.log.events import AssistantEvent, UsageEvent
from scribe.log.jsonl import read_log

from .bills import bill_of
from .startup import holding

FILES = 30
CHILDREN = 3
READS_PER_ANSWER = 5
CALL_S = 1.0  # seconds each agent answer takes at the fake API, in the report's timed runs
RUNS = 3
SEED = 20261206
SCRIBE = str(Path(sys.executable).parent / "scribe")
TIMEOUT_S = 300
FINISHERS_S = 120.0  # the longest the benchmark waits for what a run left running
PACKAGE = "harbor"
# Set in each run's environment with a value of its own: what still holds it is that run's.
MARKER = "SCRIBE_BENCH_SUBAGENTS_RUN"
PROMPT = (f"Which functions under src/{PACKAGE}/ open a network socket (socket.socket, socket.create_connection "
          "and the like), and on which line? Read every file: several only look names up, which does not count. "
          "Answer with one line per function: `path:line function`.")
# What a reader of the code counts as opening a socket (the generator's openers use these; its
# decoys use gethostname, getaddrinfo, inet_aton and socket.timeout).
OPENS = re.compile(r"\bsocket\.(?:socket|create_connection|create_server|socketpair)\(")
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\(")
_NUMBERED = re.compile(r"^\s*(\d+)\t(.*)$")  # a line of read_file's output: `cat -n`'s number, a tab, the text
_FOUND = re.compile(r"^-?\s*(\S+\.py):(\d+) (\w+)\s*$", re.MULTILINE)
_LISTED = re.compile(r"^(\S+\.py)$", re.MULTILINE)
_ASKED = re.compile(r"^- (\S+\.py)$", re.MULTILINE)


# -- the workspace ---------------------------------------------------------------------------

MODULES = ("accounts", "audit", "backoff", "billing", "cache", "config", "dns_probe", "events", "exporter",
           "feature_flags", "gateway", "health", "inventory", "ledger", "locks", "mailer", "metrics",
           "migrations", "notifier", "orders", "pagination", "peer_sync", "quotas", "rate_limit", "relay",
           "reports", "scheduler", "search_index", "sessions", "statsd_client", "storage", "tracing", "uploads",
           "webhooks", "workers", "inbox")
VERBS = ("load", "parse", "build", "merge", "flush", "resolve", "render", "apply", "check", "collect", "prune",
         "rotate", "encode", "decode", "record", "refresh", "split", "drain", "score", "retry")
NOUNS = ("record", "entry", "batch", "config", "window", "token", "route", "frame", "chunk", "peer", "ticket",
         "bucket", "lease", "digest", "cursor", "segment", "receipt", "profile", "quota", "marker")
ARGS = ("items", "entries", "records", "rows", "limits", "names", "payload", "options", "keys", "values")


@dataclass(frozen=True)
class Opener:
    path: str  # relative to the workspace
    line: int  # where the socket is opened
    function: str

    def said(self) -> str:
        return f"{self.path}:{self.line} {self.function}"


@dataclass
class Module:
    path: str
    lines: list[str] = field(default_factory=list)
    openers: list[Opener] = field(default_factory=list)


def modules(count: int = FILES, seed: int = SEED) -> list[Module]:
    """`count` modules, each of 150 to 450 lines; about a quarter open a socket in one or two of
    their functions, and about a quarter of the rest only look names up."""
    if not 1 <= count <= len(MODULES):
        raise ValueError(f"between 1 and {len(MODULES)} files")
    rng = random.Random(seed)
    names = sorted(MODULES[:count])
    opening = set(rng.sample(range(count), max(1, count // 4)))
    looking = set(rng.sample(sorted(set(range(count)) - opening), min(count - len(opening), max(1, count // 4))))
    return [_module(rng, f"src/{PACKAGE}/{name}.py", name, opens=i in opening, looks_up=i in looking)
            for i, name in enumerate(names)]


def _module(rng: random.Random, path: str, name: str, *, opens: bool, looks_up: bool) -> Module:
    module = Module(path)
    out = module.lines
    out += [f'"""{name.replace("_", " ").capitalize()}: the {_plural(rng.choice(NOUNS))} of the service and what '
            f'they {rng.choice(("hold", "cost", "carry", "say"))}."""', "", "from __future__ import annotations", "",
            "import json", "import logging"]
    out += ["import socket"] if opens or looks_up else []
    out += ["import time", "from dataclasses import dataclass, field", "from typing import Any", "",
            "log = logging.getLogger(__name__)", "",
            f"DEFAULT_LIMIT = {rng.randrange(10, 500)}", f"RETRY_DELAY_S = {rng.choice((0.1, 0.25, 0.5, 1.0))}", ""]
    target = rng.randrange(150, 451)
    # where in the file each socket-opening or lookup function goes (as a share of its length)
    sockets = sorted(rng.uniform(0.05, 0.95) for _ in range(rng.choice((1, 1, 2)) if opens else 0))
    lookups = [rng.uniform(0.05, 0.95)] if looks_up else []
    used: set[str] = set()
    while len(out) < target or sockets or lookups:
        out += ["", ""]
        if sockets and len(out) >= sockets[0] * target:
            sockets.pop(0)
            _socket_function(rng, module, _name(rng, used, rng.choice(("open", "connect", "dial", "reach"))))
        elif lookups and len(out) >= lookups[0] * target:
            lookups.pop(0)
            _lookup_function(rng, out, _name(rng, used, rng.choice(("lookup", "address_of", "resolve"))))
        elif rng.random() < 0.3:
            _class(rng, out, used)
        else:
            out += _function(rng, _name(rng, used), "")
    return module


def _name(rng: random.Random, used: set[str], verb: str | None = None) -> str:
    while True:
        name = f"{verb or rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        if verb is not None:
            name += rng.choice(("", "_link", "_channel", "_endpoint", "_peer"))
        if name not in used:
            used.add(name)
            return name


def _plural(noun: str) -> str:
    return noun[:-1] + "ies" if noun.endswith("y") else noun + "s"


def _statements(rng: random.Random, arg: str, indent: str, count: int) -> list[str]:
    """Ordinary statements about `arg`, `count` of them (each a line or a small block)."""
    out: list[str] = []
    for _ in range(count):
        pick = rng.randrange(7)
        noun = rng.choice(NOUNS)
        if pick == 0:
            out += [f"{indent}for item in {arg}:", f"{indent}    key = item.get({noun!r}) or DEFAULT_LIMIT",
                    f"{indent}    seen[key] = seen.get(key, 0) + 1"]
        elif pick == 1:
            out += [f"{indent}if not {arg}:", f'{indent}    log.debug("no {_plural(noun)} to handle")', f"{indent}    return seen"]
        elif pick == 2:
            out += [f"{indent}try:", f"{indent}    value = json.loads(seen.get({noun!r}, '{{}}'))",
                    f"{indent}except (KeyError, ValueError) as exc:",
                    f'{indent}    log.warning("bad {noun}: %s", exc)', f"{indent}    value = {{}}",
                    f"{indent}seen[{noun!r}] = value"]
        elif pick == 3:
            out += [f"{indent}started = time.monotonic()",
                    f"{indent}total = sum(len(str(x)) for x in {arg})",
                    f'{indent}log.info("%d bytes of {_plural(noun)} in %.3f s", total, time.monotonic() - started)']
        elif pick == 4:
            out += [f"{indent}# {_plural(rng.choice(NOUNS))} arrive out of order; keep the newest of each",
                    f"{indent}newest = {{x.get('id'): x for x in sorted({arg}, key=lambda x: x.get('at', 0))}}",
                    f"{indent}seen.update(newest)"]
        elif pick == 5:
            out += [f"{indent}while len(seen) > DEFAULT_LIMIT:", f"{indent}    seen.pop(next(iter(seen)))"]
        else:
            out += [f"{indent}{noun}_count = len([x for x in {arg} if x])",
                    f"{indent}if {noun}_count > DEFAULT_LIMIT:",
                    f"{indent}    raise ValueError(f'too many {_plural(noun)}: {{{noun}_count}}')"]
    return out


def _function(rng: random.Random, name: str, indent: str, *, method: bool = False) -> list[str]:
    arg = rng.choice(ARGS)
    params = f"self, {arg}: list[Any]" if method else f"{arg}: list[Any], limit: int = DEFAULT_LIMIT"
    body = indent + "    "
    out = [f"{indent}def {name}({params}) -> dict[str, Any]:",
           f'{body}"""{name.replace("_", " ").capitalize()} from {arg}, keeping at most the limit."""',
           f"{body}seen: dict[str, Any] = {{}}"]
    out += _statements(rng, arg, body, rng.randrange(2, 7))
    out.append(f"{body}return seen")
    return out


def _class(rng: random.Random, out: list[str], used: set[str]) -> None:
    noun = rng.choice(NOUNS).capitalize()
    name = f"{noun}{rng.choice(('Store', 'Queue', 'Index', 'Ledger', 'Pool', 'Tracker'))}"
    if name in used:
        return
    used.add(name)
    out += ["@dataclass", f"class {name}:", f'    """What the service keeps of each {noun.lower()}."""', "",
            "    name: str", f"    limit: int = {rng.randrange(5, 200)}",
            "    items: list[Any] = field(default_factory=list)"]
    for _ in range(rng.randrange(1, 4)):
        out.append("")
        out += _function(rng, _name(rng, used), "    ", method=True)


def _socket_function(rng: random.Random, module: Module, name: str) -> None:
    """A function that opens a socket, its opening line recorded."""
    out = module.lines
    out += [f"def {name}(host: str, port: int, timeout: float = RETRY_DELAY_S * 10) -> Any:",
            f'    """Connect to the {rng.choice(NOUNS)} service at host:port."""',
            '    log.debug("connecting to %s:%d", host, port)']
    out += _statements(rng, "[host, port]", "    ", rng.randrange(0, 3)) if rng.random() < 0.5 else []
    form = rng.randrange(4)
    if form == 0:
        opening = ["    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)", "    sock.settimeout(timeout)",
                   "    sock.connect((host, port))", "    return sock"]
    elif form == 1:
        opening = ["    conn = socket.create_connection((host, port), timeout=timeout)",
                   "    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)", "    return conn"]
    elif form == 2:
        opening = ["    family = socket.AF_INET6 if ':' in host else socket.AF_INET",
                   "    with socket.socket(family, socket.SOCK_DGRAM) as sock:",
                   "        sock.sendto(b'ping', (host, port))", "        return sock.recv(512)"]
    else:
        opening = ["    for attempt in range(3):", "        try:",
                   "            return socket.create_connection((host, port), timeout=timeout)",
                   "        except OSError:", "            time.sleep(RETRY_DELAY_S * (attempt + 1))",
                   "    raise ConnectionError(f'{host}:{port} did not answer')"]
    at = next(i for i, line in enumerate(opening) if OPENS.search(line))
    module.openers.append(Opener(module.path, len(out) + at + 1, name))
    out += opening


def _lookup_function(rng: random.Random, out: list[str], name: str) -> None:
    """A function that names socket's lookups and opens nothing."""
    lookup = rng.choice(("socket.gethostname()", "socket.getaddrinfo(host, None)[0][4][0]",
                         "socket.inet_ntoa(socket.inet_aton(host))"))
    out += [f"def {name}(host: str) -> str:", '    """The address a peer is known by (no connection is made)."""',
            "    try:", f"        return str({lookup})", "    except (socket.gaierror, socket.timeout, OSError):",
            "        return host"]


def write_workspace(root: Path, files: Sequence[Module]) -> None:
    """A git repository holding `files`, committed."""
    for args in (["init", "-q"], ["config", "user.email", "bench@scribe.invalid"], ["config", "user.name", "bench"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    for module in files:
        target = root / module.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(module.lines) + "\n", encoding="utf-8")
    (root / "README.md").write_text(f"# {PACKAGE}\n\nThe service's modules are under src/{PACKAGE}/.\n")
    for args in (["add", "-A"], ["commit", "-q", "-m", "the service"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


# -- the scripted model ----------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


@dataclass(frozen=True)
class Sent:
    """What one request showed the model of the turn: its first message and each tool call it
    made with what came back for it, in order."""

    asked: str
    calls: list[tuple[dict[str, Any], str | None]]  # (tool_use block, its result's text or None)

    @classmethod
    def of(cls, request: dict[str, Any]) -> Sent:
        messages = request["messages"]
        results = {b["tool_use_id"]: _text(b.get("content")) for m in messages if m["role"] == "user"
                   and isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
        uses = [b for m in messages if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
        return cls(_text(messages[0]["content"]), [(u, results.get(u["id"])) for u in uses])

    def results_of(self, tool: str) -> list[tuple[dict[str, Any], str]]:
        return [(use, out) for use, out in self.calls if use["name"] == tool and out is not None]


def found_in(path: str, shown: str) -> list[Opener]:
    """The functions of `path` that open a socket, read from read_file's numbered lines."""
    found: list[Opener] = []
    functions: list[tuple[int, str]] = []  # (indent, name) of the defs around the line read
    for raw in shown.splitlines():
        numbered = _NUMBERED.match(raw)
        if numbered is None:
            continue
        number, line = int(numbered.group(1)), numbered.group(2)
        if line.strip():
            indent = len(line) - len(line.lstrip())
            functions = [(i, n) for i, n in functions if i < indent]
        defined = _DEF.match(line)
        if defined:
            functions.append((len(defined.group(1)), defined.group(2)))
        elif OPENS.search(line) and functions:
            found.append(Opener(path, number, functions[-1][1]))
    return found


def answer(found: Iterable[Opener], read: int) -> str:
    listed = sorted(set(found), key=lambda o: (o.path, o.line))
    if not listed:
        return f"None of the {read} files opens a socket."
    return (f"Functions that open a socket ({len(listed)}, of {read} files read):\n"
            + "\n".join(f"- {o.said()}" for o in listed))


def said(text: str) -> set[Opener]:
    """The `path:line function` lines of an answer."""
    return {Opener(m.group(1), int(m.group(2)), m.group(3)) for m in _FOUND.finditer(text)}


class ReadingModel:
    """The responder: the parent's and the sub-agents' calls as a model that reads would make
    them (see the module's docstring), each answered after `call_s`; side calls by SideCallModel."""

    def __init__(self, call_s: float = CALL_S, reads: int = READS_PER_ANSWER, children: int = CHILDREN) -> None:
        self.call_s, self.reads, self.children = call_s, reads, children
        self.side = SideCallModel()
        self.lock = threading.Lock()
        self.calls = {"parent": 0, "child": 0}

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        if side_call_kind(request) != "agent":
            return self.side(request)
        system = _text(request.get("system"))
        who = "child" if system.startswith(SUBAGENT_GUIDANCE) else "parent"
        with self.lock:
            self.calls[who] += 1
        time.sleep(self.call_s)  # outside the lock: sub-agents' calls wait side by side
        sent = Sent.of(request)
        return self._child(sent) if who == "child" else self._parent(sent, request)

    def _reading(self, sent: Sent, files: Sequence[str]) -> Reply | None:
        """The next read_file calls of `files`, or None once every one has been read."""
        read = {str(use["input"].get("path")) for use, _ in sent.calls if use["name"] == "read_file"}
        unread = [path for path in files if path not in read]
        if not unread:
            return None
        return Reply([tool_use_block("read_file", {"path": path}) for path in unread[:self.reads]])

    def _found(self, sent: Sent) -> list[Opener]:
        return [o for use, out in sent.results_of("read_file") for o in found_in(str(use["input"]["path"]), out)]

    def _child(self, sent: Sent) -> Reply:
        files = _ASKED.findall(sent.asked)
        reading = self._reading(sent, files)
        if reading is not None:
            return reading
        found = self._found(sent)
        return Reply.text("\n".join(o.said() for o in sorted(found, key=lambda o: (o.path, o.line))) or "none")

    def _parent(self, sent: Sent, request: dict[str, Any]) -> Reply:
        listed = sent.results_of("list_files")
        if not listed:
            return Reply([tool_use_block("list_files", {"path": f"src/{PACKAGE}"})])
        files = _LISTED.findall(listed[0][1])
        if not any(tool.get("name") == "task" for tool in request.get("tools") or []):
            reading = self._reading(sent, files)
            if reading is not None:
                return reading
            return Reply.text(answer(self._found(sent), len(sent.results_of("read_file"))))
        tasks = sent.results_of("task")
        if not tasks:
            size = -(-len(files) // self.children)
            shares = [files[i:i + size] for i in range(0, len(files), size)]
            return Reply([text_block(f"{len(files)} files: {len(shares)} sub-agents read them, "
                                     f"{size} each, at once.")]
                         + [tool_use_block("task", {"description": f"sockets in files {i * size + 1}-"
                                                                   f"{i * size + len(share)}",
                                                    "prompt": _task_prompt(share)})
                            for i, share in enumerate(shares)])
        return Reply.text(answer((o for _, out in tasks for o in said(out)), len(files)))


def _task_prompt(files: Sequence[str]) -> str:
    return ("Read each of these files whole with read_file:\n" + "\n".join(f"- {path}" for path in files)
            + "\n\nReport every function that opens a network socket (socket.socket, socket.create_connection "
              "and the like; calls that only look names up do not count), one line each: `path:line function`, "
              "where line is the line the socket is opened on. If none does, answer `none`.")


# -- one run -----------------------------------------------------------------------------------


Way = Literal["without", "with"]  # sub-agents


@dataclass(frozen=True)
class Run:
    way: Way
    call_s: float
    wall_s: float
    parent_peak: int  # tokens
    child_peak: int  # tokens, 0 without sub-agents
    usd: float  # `scribe log stats --json`, with the sub-agents
    billed_usd: float  # the fake API's bill of every request it answered
    side_usd: float  # of that bill, the side calls' (compression, notes)
    calls: dict[str, int]  # parent agent calls, sub-agent agent calls, side calls
    children: int
    prompt_tokens: int
    cache_write: int  # of the prompt tokens, those written to the cache
    hit_rate: float
    right: bool
    rejected: int
    left_running: int  # processes of the run still there after FINISHERS_S

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class RunFailed(RuntimeError):
    """A `scribe` command of the benchmark did not succeed."""


def one_run(files: Sequence[Module], *, subagents: bool, call_s: float) -> Run:
    model = ReadingModel(call_s)
    with tempfile.TemporaryDirectory(prefix="scribe-bench-subagents-") as tmp, FakeMessagesServer(model) as server:
        root = Path(tmp).resolve()
        workspace, home = root / "workspace", root / "home"
        workspace.mkdir()
        home.mkdir()
        write_workspace(workspace, files)
        marker = secrets.token_hex(8)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SCRIBE_", "ANTHROPIC_")) and k not in ("COLUMNS", "LINES")}
        env |= {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "benchmark-no-key", "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".local" / "state"),
                MARKER: marker, **({} if subagents else {"SCRIBE_TASK_TOOL": "false"})}
        started = time.monotonic()
        ran = _scribe(["run", "-o", "json", PROMPT], workspace, env)
        wall_s = time.monotonic() - started
        left = _wait_for_run(marker)
        result = json.loads(ran.strip().splitlines()[-1])
        stats = json.loads(_scribe(["log", "stats", "--json", result["session_id"]], workspace, env))
        requests = list(server.requests)
        parent_events = read_log(Path(stats["log"])).events
        children = stats.get("children", [])
        kids = [e for child in children for e in read_log(Path(child["log"])).events if isinstance(e, UsageEvent)]
    total = stats.get("with_children") or stats["total"]
    parent = [e for e in parent_events if isinstance(e, UsageEvent)]
    final = next(e for e in reversed(parent_events) if isinstance(e, AssistantEvent))
    bill = bill_of(requests)
    truth = {o for module in files for o in module.openers}
    way: Way = "with" if subagents else "without"
    return Run(way=way, call_s=call_s, wall_s=round(wall_s, 2),
               parent_peak=_peak(parent), child_peak=_peak(kids),
               usd=float(total["cost_usd"]), billed_usd=round(bill.usd, 6),
               side_usd=round(bill.usd - bill.usd_by_purpose["agent"], 6),
               calls={"parent": sum(1 for u in parent if u.purpose == "agent"),
                      "sub-agents": sum(1 for u in kids if u.purpose == "agent"),
                      "side": sum(1 for u in [*parent, *kids] if u.purpose != "agent")},
               children=len(children), prompt_tokens=int(total["prompt_tokens"]),
               cache_write=int(total["cache_write"]), hit_rate=float(total["hit_rate"]),
               right=said(_text(final.content)) == truth, rejected=bill.rejected, left_running=left)


def _peak(calls: Iterable[UsageEvent]) -> int:
    """The largest prompt of these agent calls, in tokens: uncached, read and written alike."""
    return max((u.input + u.cache_read + u.cache_write for u in calls if u.purpose == "agent"), default=0)


def _scribe(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([SCRIBE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise RunFailed(f"scribe {args[0]}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout


def _wait_for_run(marker: str) -> int:
    """Wait until no process holds the run's `marker` (a finisher doing what the session left
    works on after `scribe run` exits, and bills its calls to the session); how many still do
    after FINISHERS_S."""
    deadline = time.monotonic() + FINISHERS_S
    while (left := holding(MARKER, marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(left)


# -- the report ---------------------------------------------------------------------------------


def measure(count: int = FILES, runs: int = RUNS, call_s: float = CALL_S) -> dict[str, Any]:
    """Each way `runs` times with the model's answers after `call_s`, and once with them at once;
    in turns, so the machine's other work falls on both alike."""
    files = modules(count)
    sizes = [len(m.lines) for m in files]
    out: dict[str, Any] = {"files": count, "lines": sum(sizes), "smallest": min(sizes), "largest": max(sizes),
                           "openers": sum(len(m.openers) for m in files), "children": CHILDREN,
                           "reads_per_answer": READS_PER_ANSWER, "call_s": call_s, "runs": runs,
                           "load": [round(os.getloadavg()[0], 2)]}
    samples: dict[Way, list[Run]] = {"without": [], "with": []}
    at_once: dict[Way, Run] = {}
    ways: tuple[Way, Way] = ("without", "with")
    for n in range(runs):
        for way in (ways if n % 2 == 0 else ways[::-1]):
            samples[way].append(one_run(files, subagents=way == "with", call_s=call_s))
    for way in ways:
        at_once[way] = one_run(files, subagents=way == "with", call_s=0.0)
    out["load"].append(round(os.getloadavg()[0], 2))
    for way, taken in samples.items():
        out[way] = _median(taken) | {"wall_s_at_once": at_once[way].wall_s, "samples": [r.as_dict() for r in taken],
                                     "at_once": at_once[way].as_dict()}
    return out


def _median(runs: Sequence[Run]) -> dict[str, Any]:
    """The median wall time; every other figure as each run gave it when all runs agree, else its
    median (the report says which moved)."""
    first = runs[0].as_dict()
    figures: dict[str, Any] = {}
    moved = []
    for key, value in first.items():
        values = [r.as_dict()[key] for r in runs]
        if key == "wall_s":
            figures[key] = round(statistics.median(values), 2)
        elif all(v == value for v in values):
            figures[key] = value
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            figures[key] = statistics.median(values)
            moved.append(key)
        else:
            figures[key] = values
            moved.append(key)
    figures["moved"] = moved
    return figures


def section(data: dict[str, Any]) -> str:
    without, with_ = data["without"], data["with"]
    rows = ["| | without sub-agents | with sub-agents |", "|---|---|---|"]

    def row(label: str, cell: Any) -> None:
        rows.append(f"| {label} | {cell(without)} | {cell(with_)} |")

    row("the parent's peak context (tokens)", lambda d: f"{d['parent_peak']:,}")
    row("a sub-agent's peak context (tokens)", lambda d: f"{d['child_peak']:,}" if d["children"] else "-")
    row("dollars, every call (`scribe log stats`)", lambda d: f"${d['usd']:.4f}")
    row("dollars, the fake API's own bill (of it, side calls)", lambda d: f"${d['billed_usd']:.4f} (${d['side_usd']:.4f})")
    row("prompt tokens, every call: all / written to the cache / share read from it",
        lambda d: f"{d['prompt_tokens']:,} / {d['cache_write']:,} / {d['hit_rate']:.1%}")
    row("agent calls: parent / sub-agents (side calls)",
        lambda d: f"{d['calls']['parent']} / {d['calls']['sub-agents']} ({d['calls']['side']})")
    row(f"wall time, each answer after {data['call_s']:g} s (median of {data['runs']})", lambda d: f"{d['wall_s']:.1f} s")
    row("wall time, each answer at once", lambda d: f"{d['wall_s_at_once']:.1f} s")
    row("answer names every function, and only those", lambda d: "yes" if d["right"] is True else "NO")
    notes = []
    rejected = without["rejected"] or with_["rejected"]
    left = without["left_running"] or with_["left_running"]
    moved = sorted(set(without["moved"]) | set(with_["moved"]))
    if moved:
        notes.append(f"Figures that differed between runs (their median shown): {', '.join(moved)}.")
    notes.append(f"Requests the fake API rejected: {rejected}. Processes left running "
                 f"{FINISHERS_S:g} s after a run: {left}.")
    return (f"### One task, {data['files']} files read, with and without sub-agents\n\n"
            f"{data['files']} Python modules ({data['smallest']} to {data['largest']} lines, {data['lines']:,} in "
            f"all; {data['openers']} functions open a socket); the parent lists them, then reads them "
            f"{data['reads_per_answer']} per answer, or hands them to {data['children']} sub-agents in one answer, "
            "which read theirs the same way. Load average "
            f"{data['load'][0]} → {data['load'][1]}.\n\n" + "\n".join(rows) + "\n\n" + " ".join(notes))


if __name__ == "__main__":
    result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else FILES, int(sys.argv[2]) if len(sys.argv) > 2 else RUNS)
    print(section(result))
    print(json.dumps(result, indent=2))
