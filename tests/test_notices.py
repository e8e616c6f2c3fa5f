"""Commands say what they are doing before a long wait: the notice helper, the players' first move
(on standard error, the engine's standard output keeping only protocol lines), eval's progress as
games finish (the same result as --batch), the training loop's and the arena's compile lines, the
C solver's first build."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import notices
from othello_jax.agents import parse_agent
from othello_jax.commands import eval as eval_command
from othello_jax.commands import play as play_command
from othello_jax.evaluation import arena
from othello_jax.game import Othello
from othello_jax.interface import session as session_module
from othello_jax.interface.gtp_server import GtpEngine, serve
from othello_jax.solver import c_solver
from othello_jax.training.runner import arena_hooks, loop

REPO = Path(__file__).resolve().parents[1]
CACHED = " (cached for next time)"  # the tests' own compilation cache is on (conftest)
READY = re.compile(r"first move ready in \S+ s")  # after a first move that took 3 s or more


def notice(what: str) -> str:
    """The pattern of the compile notice for WHAT with the tests' cache on: cold (with the typical
    time where one is known for this machine) or warm (another test compiled it first)."""
    what = re.escape(what)
    cold = rf"compiling {what} \((about [^;]+ the first time; )?cached for next time\)"
    return rf"({cold}|loading {what} from the compilation cache)"


def first_move(what: str) -> str:
    """The pattern of the players' first-move line for WHAT."""
    return rf"preparing the first move: {notice(what)}\.\.\."


# ---- the helper -----------------------------------------------------------------------------
def test_say_while_says_before_and_how_long_after_a_long_wait_only():
    lines = []
    with notices.say_while("solving 12 positions", lines.append, done="solved", long_s=0.0):
        pass
    assert lines[0] == "solving 12 positions..."
    assert re.fullmatch(r"solved in \d+\.\d s", lines[1])
    lines.clear()
    with notices.say_while("loading", lines.append, long_s=60.0):  # a short wait: nothing after
        pass
    assert lines == ["loading..."]
    with notices.say_while("compiling", lines.append, done=None, long_s=0.0):  # the caller reports
        pass
    assert lines == ["loading...", "compiling..."]
    assert [notices.format_seconds(s) for s in (4.24, 47.4, 185)] == ["4.2 s", "47 s", "3m05s"]


def test_compiling_says_cached_only_with_the_persistent_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(notices, "_configured_cache_dir", lambda: str(tmp_path))  # an empty index
    monkeypatch.setattr(notices, "_machine", lambda jax: ("gpu:test", "this GPU"))  # no reference figure
    assert notices.compiling("the match") == "compiling the match" + CACHED
    assert notices.compiling_then("playing", "the agent") == f"compiling the agent{CACHED}, then playing"
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    monkeypatch.setattr(notices, "_configured_cache_dir", lambda: None)  # jax's setting, as if never made
    assert not notices.compilation_cached()
    assert notices.compiling("the match") == "compiling the match"


def test_a_cold_notice_quotes_the_reference_time_on_the_reference_machine_only(monkeypatch, tmp_path):
    monkeypatch.setattr(notices, "_configured_cache_dir", lambda: str(tmp_path))
    monkeypatch.setattr(notices, "_machine", lambda jax: ("cpu-2c", "a 2-core CPU"))
    seconds = notices.format_seconds(notices.REFERENCE_SECONDS["the search for 8x8"])
    assert notices.compiling("the search for 8x8") == (
        f"compiling the search for 8x8 (about {seconds} on a 2-core CPU the first time; cached for next time)")
    monkeypatch.setattr(notices, "_machine", lambda jax: ("cpu-8c", "an 8-core CPU"))  # not measured there yet
    assert notices.compiling("the search for 8x8") == "compiling the search for 8x8" + CACHED


# a tiny program compiled under a compile notice; argv: the notice's key, which also changes the program
_TINY = """
import sys
import jax
import jax.numpy as jnp
from othello_jax import notices

lines = []
program = jax.jit(lambda x: jnp.sin(x) * len(sys.argv[1]) + jnp.cos(x))
notice = notices.compiling("the tiny program", key=sys.argv[1])
with notices.say_while(notice.reworded(str(notice)), lines.append, done="compiled", long_s=0.0):  # as the players
    program(jnp.ones(3)).block_until_ready()
assert not notices._PENDING  # the compile was recorded when its block ended
print("\\n".join(lines))
"""


def test_a_cold_start_says_compiling_and_a_warm_one_loading(tmp_path):
    """The notice is decided before compiling, from the index the project keeps in jax's cache
    directory, and the line after says what happened (jax's cache events)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "xla"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}

    def run(key: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", _TINY, key], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.splitlines()

    cold = run("a")
    assert cold[0] == "compiling the tiny program (cached for next time)..." and cold[1].startswith("compiled in ")
    warm = run("a")
    assert warm[0] == "loading the tiny program from the compilation cache..." and warm[1].startswith("loaded in ")
    other = run("bb")  # another program under the same name: cold, with the time the first one took here
    assert re.fullmatch(r"compiling the tiny program \(about \S+ s on an? \d+-core CPU the first time; "
                        r"cached for next time\)\.\.\.", other[0]), other
    assert other[1].startswith("compiled in ")
    index = json.loads((tmp_path / "xla" / notices.INDEX_FILE).read_text())
    assert len(index["programs"]) == 2 and all(record["cached"] for record in index["programs"].values())


# ---- the players' first move ----------------------------------------------------------------
def first_legal_agent(game: Othello, name: str = "network, 64 sims"):
    return types.SimpleNamespace(
        name=name, act=lambda state, key: jnp.argmax(game.legal_moves(state), axis=-1).astype(jnp.int32))


@pytest.fixture
def fresh_agents(monkeypatch):
    """No agent has moved yet in this process (agents built by specs are shared between tests)."""
    monkeypatch.setattr(session_module, "_PREPARED", {})


def test_the_engine_announces_its_first_move_on_stderr_once_per_agent(fresh_agents, capsys):
    agents = {}
    engine = GtpEngine(lambda game: agents.setdefault(game.size, first_legal_agent(game)))
    out = io.StringIO()
    commands = ["boardsize 6", "clear_board", "genmove b", "genmove w", "boardsize 8", "genmove b", "quit"]
    assert serve(engine, io.StringIO("\n".join(commands) + "\n"), out) == 0
    responses = out.getvalue().split("\n\n")[:-1]
    assert len(responses) == len(commands) and all(re.fullmatch(r"=( [a-h][1-8])?", r) for r in responses)
    err = [line for line in capsys.readouterr().err.splitlines() if not READY.fullmatch(line)]
    assert len(err) == 2, err
    assert re.fullmatch(first_move("the search for 6x6"), err[0]) and re.fullmatch(first_move("the search for 8x8"),
                                                                                     err[1]), err


@pytest.mark.parametrize("name, said", [
    ("alphabeta:3,solve=16,solver=c", "the search for 4x4"),
    ("random", "the agent for 4x4"),
    ('gtp:cmd="edax -gtp"', None),  # an external engine: nothing of ours compiles
    ("perfect", None),
])
def test_the_notice_names_what_the_agent_compiles(fresh_agents, name, said):
    lines = []
    agent = first_legal_agent(Othello(4), name)
    with session_module.announce_preparation(agent, Othello(4), lines.append):
        pass
    assert len(lines) == (0 if said is None else 1), lines
    assert said is None or re.fullmatch(first_move(said), lines[0]), lines
    with session_module.announce_preparation(agent, Othello(4), lines.append):  # a later move
        pass
    assert len(lines) == (0 if said is None else 1)


def test_play_announces_the_agents_first_move_on_stderr(fresh_agents, capsys):
    out = io.StringIO()
    play_command.main(["--agent=greedy", "--size=4", "--no-solve", "--color=white"], stdin=io.StringIO("quit\n"),
                      stdout=out)  # the human quits at once
    assert re.search(r"^black \(greedy\) plays [a-d][1-4]$", out.getvalue(), re.M)
    assert "preparing" not in out.getvalue()
    err = [line for line in capsys.readouterr().err.splitlines() if not READY.fullmatch(line)]
    assert len(err) == 1 and re.fullmatch(first_move("the agent for 4x4"), err[0]), err


def test_the_engine_command_keeps_its_stdout_to_protocol_lines():
    result = subprocess.run([sys.executable, "-m", "othello_jax.cli", "engine", "--agent=greedy", "--size=4",
                             "--no-solve"], input="genmove b\ngenmove w\nquit\n", capture_output=True, text=True,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.fullmatch(r"= [a-d][1-4]\n\n= [a-d][1-4]\n\n=\n\n", result.stdout), result.stdout
    err = result.stderr.splitlines()
    assert err[0] == "othello-jax engine: greedy on 4x4, speaking GTP"
    assert re.fullmatch(first_move("the agent for 4x4"), err[1]), err
    assert len(err) in (2, 3) and (len(err) == 2 or READY.fullmatch(err[2]))


# ---- eval: progress as games finish -----------------------------------------------------------
EVAL = ["--black=greedy", "--white=random", "--size=4", "--games=40", "--seed=3"]
PROGRESS = re.compile(r"^  (\d+)/40 games over \(ply (\d+)\)(, score (\d\.\d{3}) so far)?, \d+m\d\ds$")


def test_eval_reports_progress_and_the_result_of_the_whole_batch(monkeypatch, capsys):
    monkeypatch.setattr(eval_command, "PROGRESS_SECONDS", 0.0)  # a line at every report (a tiny match is fast)
    assert eval_command.main(EVAL) == 0
    out = capsys.readouterr().out.splitlines()
    progress = [PROGRESS.match(line) for line in out if PROGRESS.match(line)]
    plies = [int(m.group(2)) for m in progress]
    assert len(progress) >= 3 and plies == sorted(plies) and all(ply % arena.progress_plies(Othello(4)) == 0
                                                                  for ply in plies[:-1])
    games = [int(m.group(1)) for m in progress]
    assert games == sorted(games) and games[-1] == 40
    assert eval_command.main(EVAL + ["--batch=20"]) == 0  # all 20 openings at once, as without progress lines
    batched = capsys.readouterr().out.splitlines()
    timed = lambda line: line.startswith(("  time", "compil", "load")) or PROGRESS.match(line)  # times differ
    assert [line for line in out if not timed(line)] == [line for line in batched if not timed(line)]
    score = next(line for line in out if line.startswith("  score")).split()[1]
    assert progress[-1].group(4) == score  # the last line's score is the match's


def test_eval_json_keeps_stdout_to_the_result_and_progress_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(eval_command, "PROGRESS_SECONDS", 0.0)
    assert eval_command.main(EVAL + ["--json"]) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)  # one JSON line
    assert record["games"] == 40 and record["wins"] + record["draws"] + record["losses"] == 40
    assert [int(m.group(1)) for m in map(PROGRESS.match, err.splitlines()) if m][-1] == 40
    assert err.splitlines()[0] == "40 games on 4x4: greedy vs random (2-ply near-even openings)"


def test_progress_lines_come_at_most_every_few_seconds():
    lines = []
    show = eval_command.progress_lines(lines.append, every=5.0)
    for seconds in (1.0, 4.9, 5.0, 7.0, 10.5, 11.0):
        show(arena.MatchProgress(int(seconds), 40, 6, None if seconds < 5 else 0.5, seconds))
    assert lines == ["  5/40 games over (ply 6), score 0.500 so far, 0m05s",
                     "  10/40 games over (ply 6), score 0.500 so far, 0m10s"]


@pytest.mark.parametrize("host", [False, True])
def test_a_match_reporting_progress_plays_the_same_games(host):
    """The compiled loop run a few plies at a time (and the host loop reporting) plays what the
    match plays in one go; the reports count the games over as they end."""
    game = Othello(6)
    lines = arena.match_openings(game, 12, jax.random.PRNGKey(5))
    first, second = parse_agent("greedy", game), parse_agent("random", game)
    if host:
        first, second = (dataclasses.replace(agent, jittable=False) for agent in (first, second))
    whole = arena.play_match(game, first, second, lines, jax.random.PRNGKey(6))
    reports = []
    again = arena.play_match(game, first, second, lines, jax.random.PRNGKey(6), progress=reports.append)
    np.testing.assert_array_equal(again.moves, whole.moves)
    np.testing.assert_array_equal(again.black_disc_diff, whole.black_disc_diff)
    stretch = arena.progress_plies(game)
    assert [done.ply for done in reports[:-1]] == [stretch * (i + 1) for i in range(len(reports) - 1)]
    assert reports[-1].games == 12 and reports[-1].score == pytest.approx(whole.summary().score)
    ends = np.count_nonzero(whole.moves >= 0, axis=-1)  # plies each game lasted after its opening
    for done in reports:
        assert done.games == np.count_nonzero(ends <= done.ply)


# ---- compiling in the arena and in training -------------------------------------------------------
def test_a_match_says_when_it_compiles_and_not_when_it_reuses_the_program(monkeypatch):
    monkeypatch.setattr(arena, "_EXECUTABLES", {})
    game = Othello(4)
    lines, said = arena.match_openings(game, 4, jax.random.PRNGKey(0)), []
    first, second = parse_agent("greedy", game), parse_agent("random", game)
    arena.play_match(game, first, second, lines, jax.random.PRNGKey(1), say=said.append)
    assert re.fullmatch(notice("the match greedy vs random") + r"\.\.\.", said[0]), said
    said.clear()
    arena.play_match(game, first, second, lines, jax.random.PRNGKey(2), say=said.append)
    assert said == []


def test_in_run_evaluations_speak_on_the_first_process_only(monkeypatch, capsys):
    arena_hooks._say()("compiling the match x vs y...")
    assert capsys.readouterr().out == "evaluation: compiling the match x vs y...\n"
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    assert arena_hooks._say() is None


def test_the_training_loop_says_before_compiling_a_stage():
    program = types.SimpleNamespace(compile=lambda index, state, key: "executable", stage_label=lambda i: "iteration 0",
                                    stage_configs=[types.SimpleNamespace(search=types.SimpleNamespace(num_simulations=8))])
    clock = types.SimpleNamespace(now=lambda: 0.0, record_compile=lambda seconds: seconds)
    lines = []
    step, seconds = loop._compile(program, 0, None, None, clock, lines.append)
    assert len(lines) == 2 and re.fullmatch(notice("stage 0's training iteration") + r"\.\.\.", lines[0]), lines
    assert lines[1] == "compiled stage 0 (from iteration 0, 8 simulations) in 0.0s"


def test_the_c_solvers_first_build_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OTHELLO_JAX_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "false")  # a compiler that fails at once: the build is tried, nothing is built
    with pytest.raises(c_solver.CSolverUnavailable):
        c_solver._build()
    err = capsys.readouterr().err.splitlines()
    assert err and all(line == f"compiling the C endgame solver (once; kept in {tmp_path})..." for line in err)
