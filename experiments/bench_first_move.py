"""Seconds from starting a player to its first move, with an empty compilation cache and a full one.

Runs the GTP engine as a GUI does,

    printf "boardsize 8\\nclear_board\\ngenmove b\\nquit\\n" | othello-jax engine --checkpoint=builtin:8x8

and `othello-jax play` with the agent moving first, each timed from the start of the process to
its first move (the genmove response, the "plays" line). "cold" gives each run a fresh empty
compilation cache (OTHELLO_JAX_XLA_CACHE); "warm" runs again on the cache the cold run filled.
--cli (repeatable) times other installs in the same run, e.g. an older checkout's for a
before/after; the medians are printed side by side. --counts adds what jax compiled in each run
(programs and seconds, from JAX_LOG_COMPILES), which a shared machine does not blur. --phases
says where the seconds to the first move went, side by side: Python's start, imports, reading the
network, the rest of the setup, then within the first move jax's tracing, lowering to MLIR, XLA
compiling, persistent-cache reads, and the rest (running the search; the solver), then what came
after (playing the move on the board, printing it); it runs each
command under a small profiler (:data:`PROFILER`: jax's monitoring events and two timed calls).

    python -m experiments.bench_first_move --runs=3
    python -m experiments.bench_first_move --cli=../old/.venv/bin/othello-jax --cli=.venv/bin/othello-jax --counts
    python -m experiments.bench_first_move --agent=random --size=6 --runs=1
    python -m experiments.bench_first_move --cli=../old/.venv/bin/othello-jax --cli=.venv/bin/othello-jax \
        --checkpoint=builtin:8x8-expert --command=play --runs=1 --phases
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

COMMANDS = ("engine", "play")
CACHES = ("cold", "warm")
# the first move on standard output: a GTP response with a vertex ("= c4"), play's "black (...) plays c4"
FIRST_MOVE = {"engine": re.compile(r"^=\d*\s+\S"), "play": re.compile(r"\) (plays \S+|passes)$")}
COMPILED = re.compile(r"Finished XLA compilation of .* in ([\d.]+) sec")
CACHE_HIT = "Persistent compilation cache hit"


# Runs the command (argv[1:]) in this interpreter, timing its phases; prints one JSON line
# (PHASES_MARK + seconds by phase) on stderr once its first move is made. Source text, so an older
# checkout's Python runs it too.
PHASES_MARK = "first-move-phases: "
PROFILER = r"""
import json, os, sys, time
begin = time.perf_counter()
started = time.time() - float(os.environ.get("BENCH_STARTED", time.time()))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import jax, jax.monitoring
import othello_jax.cli, othello_jax.agents.neural as neural, othello_jax.interface.session as session
import othello_jax.commands.play, othello_jax.commands.engine, othello_jax.evaluation.analysis
phases = {"python start": started, "imports": time.perf_counter() - begin}
sums = {}
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: sums.__setitem__(event, sums.get(event, 0.0) + seconds))
load = neural.load_network
def timed_load(*args, **kwargs):
    start = time.perf_counter()
    try:
        return load(*args, **kwargs)
    finally:
        phases["read network"] = phases.get("read network", 0.0) + time.perf_counter() - start
neural.load_network = timed_load
move = session.GameSession.agent_move
def first_move(self, *args, **kwargs):
    if "first move" in phases:
        return move(self, *args, **kwargs)
    start = time.perf_counter()
    phases["setup"] = start - begin - phases["imports"] - phases.get("read network", 0.0)
    before = dict(sums)
    result = move(self, *args, **kwargs)
    took = {k: v - before.get(k, 0.0) for k, v in sums.items()}
    phases["first move"] = time.perf_counter() - start
    phases["tracing"] = took.get("/jax/core/compile/jaxpr_trace_duration", 0.0)
    phases["lowering"] = took.get("/jax/core/compile/jaxpr_to_mlir_module_duration", 0.0)
    reads = took.get("/jax/compilation_cache/cache_retrieval_time_sec", 0.0)
    phases["cache reads"] = reads
    phases["compiling"] = max(0.0, took.get("/jax/core/compile/backend_compile_duration", 0.0) - reads)
    sys.stderr.write("@MARK@" + json.dumps(phases) + chr(10))
    sys.stderr.flush()
    return result
session.GameSession.agent_move = first_move
sys.argv = ["othello-jax"] + sys.argv[1:]
sys.exit(othello_jax.cli.main(sys.argv[1:]))
""".replace("@MARK@", PHASES_MARK)
PHASES = ("python start", "imports", "read network", "setup", "tracing", "lowering", "compiling", "cache reads",
          "rest of the move", "after the move")


class Run(NamedTuple):
    """One timed start: seconds to the first move (None: none came), and with --counts the programs
    jax compiled or loaded before the process ended and the seconds that took (else None)."""

    seconds: float | None
    programs: int | None = None
    compile_seconds: float | None = None
    cache_hits: int | None = None
    phases: dict | None = None


def player_args(args: argparse.Namespace) -> list[str]:
    """The options naming the player, as given to both commands."""
    chosen = [f"--agent={args.agent}"] if args.agent else [f"--checkpoint={args.checkpoint}"]
    return chosen + ([f"--size={args.size}"] if args.size else []) + list(args.extra)


def command_line(cli: str, command: str, args: argparse.Namespace) -> tuple[list[str], str]:
    """(argv, standard input) of one timed start (under :data:`PROFILER` with --phases)."""
    start = [python_of(cli), "-c", PROFILER] if getattr(args, "phases", False) else [cli]
    if command == "engine":
        return [*start, "engine", *player_args(args)], f"boardsize {args.size or 8}\nclear_board\ngenmove b\n"
    return [*start, "play", *player_args(args), "--color=white"], ""


def python_of(cli: str) -> str:
    """The Python beside an installed ``othello-jax`` (its venv's), else this one."""
    beside = Path(shutil.which(cli) or cli).parent / "python"
    return str(beside) if beside.exists() else sys.executable


def child_environment(cache: Path, counts: bool) -> dict[str, str]:
    """The environment of a timed start: its compilation cache, nothing that would override it."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "JAX_LOG_COMPILES")}
    env["OTHELLO_JAX_XLA_CACHE"] = str(cache)
    if counts:
        env["JAX_LOG_COMPILES"] = "1"
    return env


def read_counts(log: str) -> tuple[int, float, int]:
    """(programs compiled or loaded, their seconds, persistent-cache hits) from jax's compile log."""
    seconds = [float(s) for s in COMPILED.findall(log)]
    return len(seconds), sum(seconds), log.count(CACHE_HIT)


def time_first_move(argv: list[str], stdin_text: str, pattern: re.Pattern, env: dict[str, str],
                    timeout: float, counts: bool) -> Run:
    """Start ``argv``, feed it ``stdin_text``, and time the first standard-output line matching
    ``pattern``; then send quit and let it end (killed after ``timeout`` seconds in all)."""
    with tempfile.TemporaryFile("w+") as errors:
        begin = time.perf_counter()
        env = {**env, "BENCH_STARTED": repr(time.time())}
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True,
                                   env=env, bufsize=1)
        watchdog = threading.Timer(timeout, process.kill)
        watchdog.start()
        seconds = None
        try:
            process.stdin.write(stdin_text)
            process.stdin.flush()
            for line in process.stdout:
                if pattern.search(line.rstrip("\n")):
                    seconds = time.perf_counter() - begin
                    break
            try:
                process.stdin.write("quit\n")
                process.stdin.close()
            except OSError:  # it ended already
                pass
            process.stdout.read()
            process.wait()
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        errors.seek(0)
        log = errors.read()
        phases = read_phases(log, seconds)
        if not counts:
            return Run(seconds, phases=phases)
        return Run(seconds, *read_counts(log), phases=phases)


def read_phases(log: str, seconds: float | None) -> dict | None:
    """The profiler's phases (:data:`PROFILER`) from a run's standard error, with the rest of the
    first move and what came after it (the answer's way out) filled in; None without them."""
    line = next((line for line in log.splitlines() if line.startswith(PHASES_MARK)), None)
    if line is None or seconds is None:
        return None
    phases = json.loads(line[len(PHASES_MARK):])
    inside = sum(phases.get(name, 0.0) for name in ("tracing", "lowering", "compiling", "cache reads"))
    phases["rest of the move"] = phases.get("first move", 0.0) - inside
    before = sum(phases.get(name, 0.0) for name in ("python start", "imports", "read network", "setup", "first move"))
    phases["after the move"] = seconds - before  # playing it on the board, its line reaching the reader
    return phases


def bench(clis: list[str], args: argparse.Namespace) -> dict[str, dict[str, dict[str, list[Run]]]]:
    """results[cli][command][cache]: ``args.runs`` runs each, a cold run then a warm one on its cache."""
    commands = args.command or COMMANDS
    results = {cli: {command: {cache: [] for cache in CACHES} for command in commands} for cli in clis}
    for _ in range(args.runs):
        for cli in clis:
            for command in commands:
                cache = Path(tempfile.mkdtemp(prefix="bench-first-move-xla-"))
                try:
                    argv, stdin_text = command_line(cli, command, args)
                    for kind in CACHES:  # cold fills the cache the warm run reads
                        run = time_first_move(argv, stdin_text, FIRST_MOVE[command],
                                              child_environment(cache, args.counts), args.timeout, args.counts)
                        results[cli][command][kind].append(run)
                        print(f"  {command} {kind} {cli}: {format_run(run)}", file=sys.stderr, flush=True)
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
    return results


def format_run(run: Run) -> str:
    """``18.5 s`` (``no move`` when none came), with --counts ``[3 programs, 12.1 s compiling, 2 cached]``."""
    text = "no move" if run.seconds is None else f"{run.seconds:.1f} s"
    if run.programs is not None:
        text += f" [{run.programs} programs, {run.compile_seconds:.1f} s compiling, {run.cache_hits} cached]"
    return text


def median_seconds(runs: list[Run]) -> str:
    """The runs' median seconds (``-`` when a run gave no move)."""
    seconds = [run.seconds for run in runs]
    return "-" if not seconds or None in seconds else f"{statistics.median(seconds):.1f}"


def format_phases(results: dict[str, dict[str, dict[str, list[Run]]]]) -> str:
    """Seconds by phase of each command and cache, a column per CLI (the first run of each)."""
    clis = list(results)
    width = max(12, *(len(cli) for cli in clis))
    lines = ["where the seconds to the first move went (first run of each; python start: from the process's "
             "start to the profiler's first line)"]
    for command in results[clis[0]]:
        for cache in CACHES:
            lines.append(f"{command + ' ' + cache:<18}" + "".join(f"{cli:>{width + 2}}" for cli in clis))
            runs = [results[cli][command][cache][0] for cli in clis]
            for phase in (*PHASES, "total"):
                cells = "".join(
                    f"{'-' if run.phases is None else f'{_phase(run, phase):.1f}':>{width + 2}}" for run in runs)
                lines.append(f"  {phase:<16}{cells}")
    return "\n".join(lines)


def _phase(run: Run, phase: str) -> float:
    return run.seconds if phase == "total" else run.phases.get(phase, 0.0)


def format_table(results: dict[str, dict[str, dict[str, list[Run]]]], runs: int) -> str:
    """Medians side by side: a row per command and cache, a column per CLI."""
    clis = list(results)
    width = max(12, *(len(cli) for cli in clis))
    lines = [f"seconds to the first move, median of {runs} run(s); cold: empty compilation cache, warm: the same "
             "cache again",
             f"{'':<14}" + "".join(f"{cli:>{width + 2}}" for cli in clis)]
    for command in results[clis[0]]:
        for cache in CACHES:
            cells = "".join(f"{median_seconds(results[cli][command][cache]):>{width + 2}}" for cli in clis)
            lines.append(f"{command + ' ' + cache:<14}{cells}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_first_move", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", action="append", default=None,
                        help="an othello-jax executable to time (repeatable; default: the othello-jax on PATH)")
    parser.add_argument("--runs", type=int, default=3, help="cold and warm starts per command and CLI (default 3)")
    parser.add_argument("--command", action="append", choices=COMMANDS, default=None,
                        help="time only this command (repeatable; default: engine and play)")
    parser.add_argument("--checkpoint", default="builtin:8x8", help="the player's network (default builtin:8x8)")
    parser.add_argument("--agent", help="an agent spec instead of --checkpoint (e.g. random)")
    parser.add_argument("--size", type=int, default=0, help="board size (default: the player's)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a start may take in all (default 600)")
    parser.add_argument("--counts", action="store_true",
                        help="also count the programs jax compiled and their seconds (JAX_LOG_COMPILES)")
    parser.add_argument("--phases", action="store_true",
                        help="also say where the seconds went (imports, reading the network, tracing, lowering, "
                             "compiling, cache reads, ...), each command run under a small profiler")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    parser.add_argument("extra", nargs="*", help="more options for both commands, after --, e.g. -- --sims=64")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    clis = list(dict.fromkeys(args.cli or [shutil.which("othello-jax") or ""]))  # each once
    missing = [cli for cli in clis if not cli or not shutil.which(cli)]
    if missing or args.runs < 1:
        problem = (f"no othello-jax executable at {missing[0] or 'PATH'}" if missing
                   else f"--runs must be at least 1, got {args.runs}")
        print(f"bench_first_move: {problem}", file=sys.stderr)
        return 2
    results = bench(clis, args)
    if args.json:
        print(json.dumps({cli: {command: {cache: [run._asdict() for run in runs] for cache, runs in caches.items()}
                                for command, caches in commands.items()} for cli, commands in results.items()}))
    else:
        print(format_table(results, args.runs))
        if args.phases:
            print(format_phases(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
