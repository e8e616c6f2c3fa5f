"""Seconds from starting a player to its first move, with an empty compilation cache and a full one.

Runs the GTP engine as a GUI does,

    printf "boardsize 8\\nclear_board\\ngenmove b\\nquit\\n" | othello-jax engine --checkpoint=builtin:8x8

and `othello-jax play` with the agent moving first, each timed from the start of the process to
its first move (the genmove response, the "plays" line). "cold" gives each run a fresh empty
compilation cache (OTHELLO_JAX_XLA_CACHE); "warm" runs again on the cache the cold run filled.
--cli (repeatable) times other installs in the same run, e.g. an older checkout's for a
before/after; the medians are printed side by side. --counts adds what jax compiled in each run
(programs and seconds, from JAX_LOG_COMPILES), which a shared machine does not blur.

    python -m experiments.bench_first_move --runs=3
    python -m experiments.bench_first_move --cli=../old/.venv/bin/othello-jax --cli=.venv/bin/othello-jax --counts
    python -m experiments.bench_first_move --agent=random --size=6 --runs=1
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


class Run(NamedTuple):
    """One timed start: seconds to the first move (None: none came), and with --counts the programs
    jax compiled or loaded before the process ended and the seconds that took (else None)."""

    seconds: float | None
    programs: int | None = None
    compile_seconds: float | None = None
    cache_hits: int | None = None


def player_args(args: argparse.Namespace) -> list[str]:
    """The options naming the player, as given to both commands."""
    chosen = [f"--agent={args.agent}"] if args.agent else [f"--checkpoint={args.checkpoint}"]
    return chosen + ([f"--size={args.size}"] if args.size else []) + list(args.extra)


def command_line(cli: str, command: str, args: argparse.Namespace) -> tuple[list[str], str]:
    """(argv, standard input) of one timed start."""
    if command == "engine":
        return [cli, "engine", *player_args(args)], f"boardsize {args.size or 8}\nclear_board\ngenmove b\n"
    return [cli, "play", *player_args(args), "--color=white"], ""


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
        if not counts:
            return Run(seconds)
        errors.seek(0)
        return Run(seconds, *read_counts(errors.read()))


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
