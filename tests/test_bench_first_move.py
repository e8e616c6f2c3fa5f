"""The first-move benchmark drives both commands as a GUI and a player would, gives each cold run a
fresh compilation cache and its warm run the same one, and prints its table; timed here against a
stub CLI (no jax), so nothing heavy runs."""

from __future__ import annotations

import json
import stat
import sys
import textwrap

from experiments import bench_first_move

STUB = textwrap.dedent('''\
    #!{python}
    """A stand-in othello-jax: answers like the engine and play, logs what it was given."""
    import os, sys
    command = sys.argv[1]
    cache = os.environ["OTHELLO_JAX_XLA_CACHE"]
    files, overriding = len(os.listdir(cache)), os.environ.get("JAX_COMPILATION_CACHE_DIR")
    with open(os.environ["STUB_LOG"], "a") as log:
        log.write(f"{{' '.join(sys.argv[1:])}}|{{files}}|{{overriding}}\\n")
    with open(os.path.join(cache, "starts"), "a") as log:  # cold runs find the cache empty, warm ones not
        log.write(command + "\\n")
    print("WARNING:jax._src.dispatch:Finished XLA compilation of jit(search) in 2.5 sec", file=sys.stderr)
    print("WARNING:jax._src.compiler:Persistent compilation cache hit for 'jit_search'", file=sys.stderr)
    if command == "engine":
        for line in sys.stdin:
            word = line.split()[0]
            if word == "quit":
                print("=\\n", flush=True)
                break
            print("= d3\\n" if word == "genmove" else "=\\n", flush=True)
    else:
        print("You play white (O).", flush=True)
        print("black (network, 256 sims) plays c4", flush=True)
        sys.stdout.write("Your move (white): ")
        sys.stdout.flush()
        sys.stdin.readline()
        print("game stopped", flush=True)
''')


def stub_cli(tmp_path, monkeypatch, name: str = "othello-jax-stub"):
    path = tmp_path / name
    path.write_text(STUB.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "starts.log"
    monkeypatch.setenv("STUB_LOG", str(log))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "not-this-one"))  # would override the cache
    return str(path), log


def test_cold_then_warm_runs_of_both_commands_side_by_side(tmp_path, monkeypatch, capsys):
    old, log = stub_cli(tmp_path, monkeypatch, "old-othello-jax")
    new, _ = stub_cli(tmp_path, monkeypatch)
    assert bench_first_move.main(["--cli", old, "--cli", new, "--runs", "2", "--agent=random", "--size=6",
                                  "--counts", "--", "--sims=8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("seconds to the first move, median of 2 run(s)")
    assert out[1].split() == [old, new]  # a column per CLI
    rows = {" ".join(line.split()[:2]): line.split()[2:] for line in out[2:]}
    assert list(rows) == ["engine cold", "engine warm", "play cold", "play warm"]
    for cells in rows.values():
        assert len(cells) == 2 and all(float(cell) >= 0 for cell in cells)  # a stub starts in < 0.05 s: "0.0"
    starts = [line.split("|") for line in log.read_text().splitlines()]
    assert len(starts) == 2 * 2 * 2 * 2  # runs x CLIs x commands x (cold, warm)
    for (cold_argv, cold_files, cold_env), (warm_argv, warm_files, warm_env) in zip(starts[::2], starts[1::2],
                                                                                    strict=True):
        assert cold_argv == warm_argv and cold_files == "0" and warm_files == "1"  # a fresh cache, then the same
        assert cold_env == warm_env == "None"
        assert cold_argv.split()[1:3] == ["--agent=random", "--size=6"] and "--sims=8" in cold_argv
    assert {argv.split()[0] for argv, _, _ in starts} == {"engine", "play"}
    assert all("--color=white" in argv for argv, _, _ in starts if argv.startswith("play"))


def test_json_results_carry_the_counts(tmp_path, monkeypatch, capsys):
    cli, _ = stub_cli(tmp_path, monkeypatch)
    assert bench_first_move.main(["--cli", cli, "--runs", "1", "--counts", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    for command in ("engine", "play"):
        for cache in ("cold", "warm"):
            (run,) = results[cli][command][cache]
            assert run["seconds"] > 0
            assert (run["programs"], run["compile_seconds"], run["cache_hits"]) == (1, 2.5, 1)


def test_a_missing_cli_or_no_runs_is_one_line(tmp_path, capsys):
    assert bench_first_move.main(["--cli", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.strip() == f"bench_first_move: no othello-jax executable at {tmp_path / 'nothing'}"
    assert bench_first_move.main(["--cli", sys.executable, "--runs", "0"]) == 2
    assert "--runs must be at least 1" in capsys.readouterr().err


def test_the_phases_come_from_the_profilers_line_and_add_up():
    import ast

    ast.parse(bench_first_move.PROFILER)  # the source the profiled runs start with
    seen = {"python start": 0.1, "imports": 2.0, "read network": 0.3, "setup": 0.6, "first move": 5.0,
            "tracing": 1.0, "lowering": 0.5, "compiling": 2.5, "cache reads": 0.0}
    log = "noise\n" + bench_first_move.PHASES_MARK + json.dumps(seen) + "\nmore noise\n"
    phases = bench_first_move.read_phases(log, 10.0)
    assert abs(phases["rest of the move"] - 1.0) < 1e-9 and abs(phases["after the move"] - 2.0) < 1e-9
    assert bench_first_move.read_phases("no profile here", 10.0) is None
    assert bench_first_move.read_phases(log, None) is None
