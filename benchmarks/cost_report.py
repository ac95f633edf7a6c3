"""The cost suite: every session shape, every strategy, as one markdown section and its data."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from scribe.settings.values import load_settings

from .chain import Executable, run_chain
from .sessions import long_session, shapes
from .strategies import (
    FLOOR,
    FULL_CACHED,
    NAIVE,
    SHIPPED,
    Row,
    ScribeRun,
    compare_chain,
    compare_in_process,
    full_no_cache,
    rebuild,
    scribe_row,
)

HERE = Path(__file__).resolve().parent.parent
TARGET_SHAPE = "tool-heavy"


def this_tree() -> Executable:
    return Executable("scribe as shipped", Path(sys.executable).with_name("scribe"))


def install_before(rev: str) -> Executable:
    """This repository at `rev`, checked out and installed in its own virtualenv under the
    temporary folder (reused while it is there), for a side-by-side run."""
    root = Path(tempfile.gettempdir()) / f"scribe-bench-{rev}"
    scribe = root / ".venv" / "bin" / "scribe"
    if not scribe.exists():
        if not root.exists():
            subprocess.run(["git", "worktree", "add", "--detach", str(root), rev], cwd=HERE, check=True,
                           capture_output=True)
        subprocess.run([sys.executable, "-m", "venv", str(root / ".venv")], check=True)
        subprocess.run([str(root / ".venv" / "bin" / "pip"), "install", "-q", "-e", str(root)], check=True,
                       capture_output=True)
    short = subprocess.run(["git", "rev-parse", "--short", rev], cwd=HERE, capture_output=True, text=True).stdout.strip()
    return Executable(f"scribe at {short or rev} (an earlier version)", scribe)


def _settings(env: dict[str, str]) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        return load_settings(Path(folder), {"permission_mode": "full-auto"}, environ=env)


def measure(before: Executable | None) -> dict[str, list[Row]]:
    os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-no-key")
    current = this_tree()
    results: dict[str, list[Row]] = {}
    for session in shapes():
        results[session.name] = compare_chain(session, current, _settings,
                                              before if session.name == TARGET_SHAPE else None)
    long = long_session()
    results[long.name] = compare_in_process(long, _settings)
    return results


def _turns(name: str) -> int:
    return next(len(s.turns) for s in [*shapes(), long_session()] if s.name == name)


def section(results: dict[str, list[Row]]) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    parts = []
    summary = ["| shape | turns | scribe as shipped | hit rate | of it, curation | full history, cached | scribe ÷ cached | "
               "floor | facts kept | s per turn |", "|---|---|---|---|---|---|---|---|---|---|"]
    over: list[str] = []
    lost: list[str] = []
    for shape, rows in results.items():
        by = {r.strategy: r for r in rows}
        cached, floor, shipped = by[FULL_CACHED].bill.usd, by[FLOOR].bill.usd, by[SHIPPED]
        data[shape] = [r.as_dict() for r in rows]
        summary.append(f"| {shape} | {_turns(shape)} | ${shipped.bill.usd:.4f} | {shipped.bill.hit_rate:.1%} | "
                       f"${shipped.bill.usd_by_purpose['curator']:.4f} | ${cached:.4f} | "
                       f"{shipped.bill.usd / cached:.1%} | ${floor:.4f} | {shipped.kept.cell()} | "
                       f"{shipped.seconds / _turns(shape):.1f} |")
        if shipped.bill.usd > cached:
            over.append(f"{shape} ({shipped.bill.usd / cached:.1%})")
        if shipped.kept.count < shipped.kept.total:
            lost.append(shape)
        table = ["| strategy | $ | vs cached full history | agent $ / side calls $ | hit rate | input tokens (units) | "
                 "calls: agent / observer / reflector / curator | largest prompt | facts kept | rejected | wall s |",
                 "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            b = r.bill
            side = b.usd - b.usd_by_purpose["agent"]
            table.append(
                f"| {r.strategy} | {b.usd:.4f} | {b.usd / cached:.1%} | {b.usd_by_purpose['agent']:.4f} / {side:.4f} | "
                f"{b.hit_rate:.1%} | {b.input_units:,.0f} | {b.count('agent')} / {b.count('observer')} / {b.count('reflector')} / "
                f"{b.count('curator')} | {b.largest_prompt:,} | {r.kept.cell()} | {b.rejected} | "
                f"{r.seconds:.0f} |" if r.seconds else
                f"| {r.strategy} | {b.usd:.4f} | {b.usd / cached:.1%} | {b.usd_by_purpose['agent']:.4f} / {side:.4f} | "
                f"{b.hit_rate:.1%} | {b.input_units:,.0f} | {b.count('agent')} / 0 / 0 / 0 | {b.largest_prompt:,} | {r.kept.cell()} | "
                f"{b.rejected} | rebuilt |")
        parts.append(f"#### {shape} ({_turns(shape)} turns)\n\n" + "\n".join(table))
    target = _target(results.get(TARGET_SHAPE, []))
    data["target"] = target
    verdict = (f"Scribe as shipped costs no more than the cached full history on {len(results) - len(over)} of "
               f"{len(results)} shapes" + (f"; more on {', '.join(over)}" if over else "") + "; every planted fact "
               + (f"kept except on {', '.join(lost)}." if lost else "kept on every shape.")
               + " \"s per turn\": the chain's wall time (every `scribe run` process: start, reopen, the turn, and the next session's start) over its turns; "
               "for the in-process shape, of one turn.")
    data["verdict"] = {"over_cached": over, "facts_lost": lost}
    head = ("### Memory cost by session shape (dollars at list prices)\n\n" + "\n".join(summary) + "\n\n"
            + verdict)
    return data, head + ("\n\n" + target["text"] if target else "") + "\n\n" + "\n\n".join(parts)


def _target(rows: list[Row]) -> dict[str, Any]:
    """On the tool-heavy shape: what scribe pays above the floor, now and in an earlier version (`--before REV`)."""
    by = {r.strategy: r for r in rows}
    before = next((r for r in rows if r.strategy.endswith("(an earlier version)")), None)
    if before is None or SHIPPED not in by:
        return {}
    floor = by[FLOOR].bill
    now_usd, then_usd = by[SHIPPED].bill.usd - floor.usd, before.bill.usd - floor.usd
    now_units, then_units = by[SHIPPED].bill.input_units - floor.input_units, before.bill.input_units - floor.input_units
    ratio = now_usd / then_usd if then_usd else float("nan")
    # The same with every curator call left out on both sides, since curation's schedule is its own rule.
    bare_now = by[SHIPPED].bill.without("curator").usd - floor.usd
    bare_then = before.bill.without("curator").usd - floor.usd
    text = (f"Tool-heavy, against the earlier version: above the floor, scribe as "
            f"shipped pays ${now_usd:.4f}, {before.strategy} ${then_usd:.4f}: {ratio:.0%} of it "
            f"; in input tokens {now_units:,.0f} against "
            f"{then_units:,.0f} ({now_units / then_units:.0%}). Leaving out every curator call on both sides: "
            f"${bare_now:.4f} against ${bare_then:.4f} ({bare_now / bare_then:.0%}).")
    return {"excess_usd_now": now_usd, "excess_usd_before": then_usd, "ratio": ratio,
            "excess_usd_now_without_curation": bare_now, "excess_usd_before_without_curation": bare_then,
            "excess_units_now": now_units, "excess_units_before": then_units, "text": text}


CHAIN_SHAPE = "medium"  # the scripted 15-turn coding session (and its probe)
CHAIN_TARGET = 0.12


def chain_vs_naive() -> tuple[dict[str, Any], str]:
    """The scripted chain through the `scribe` executable, one process per turn, every call it
    paid for billed (side calls included), against a naive agent on the same turns: the whole
    history in every request, no cache breakpoints, no memory (its requests rebuilt from
    scribe's own raw events, with the same output tokens per call; strategies.full_no_cache)."""
    os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-no-key")
    session = next(s for s in shapes() if s.name == CHAIN_SHAPE)
    chain = run_chain(session, this_tree(), {})
    run = ScribeRun(chain.requests, chain.events, chain.seconds)
    scribe, naive = scribe_row(SHIPPED, run, session), rebuild(NAIVE, full_no_cache, run, session)
    ratio = scribe.bill.usd / naive.bill.usd
    data = {"shape": CHAIN_SHAPE, "turns": len(session.turns), "scribe_usd": round(scribe.bill.usd, 6),
            "naive_usd": round(naive.bill.usd, 6), "ratio": round(ratio, 4),
            "scribe_usd_by_purpose": {k: round(v, 6) for k, v in scribe.bill.usd_by_purpose.items()},
            "facts_kept": scribe.kept.cell()}
    by = data["scribe_usd_by_purpose"]
    text = (f"### The scripted chain against a naive agent ({CHAIN_SHAPE}: {len(session.turns)} turns, "
            "`scribe run` then `scribe run -c` per turn, fake API with Anthropic's cache rules)\n\n"
            "| | dollars |\n|---|---|\n"
            f"| scribe (agent {by['agent']:.4f}, observer {by['observer']:.4f}, reflector {by['reflector']:.4f}, "
            f"curator {by['curator']:.4f}) | ${scribe.bill.usd:.4f} |\n"
            f"| naive agent: whole history every call, no caching, no memory | ${naive.bill.usd:.4f} |\n"
            f"| **scribe ÷ naive** | **{ratio:.3f}×** (target ≤ {CHAIN_TARGET}×) |\n\n"
            f"Facts kept by scribe: {scribe.kept.cell()}.")
    return data, text
