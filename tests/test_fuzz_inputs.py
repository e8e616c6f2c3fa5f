"""Hostile input, fuzzed: every text a user or a controller can hand the project either parses or
fails with a one-line error of the project's own (``ValueError``) exception types, raised by the
project's code, never a traceback from inside JAX or another library, and never a hang.

Covered: squares, transcripts (parsed and replayed), board strings, GTP command lines (the text
layer, the engine's ``handle`` and ``serve`` fed random conversations), agent specs (parsed and
built), ``othello-jax train`` overrides (``--config.x=...``), config references (``--config=NAME``
or a path, with ``:ARG``) and stage strings (with ``check_config``). Nothing here compiles per
example: the agents the specs build are never run, networks are initialised once per seed
(cached), and the GTP engine's agent is jitted once per board size. Engine commands
(``gtp:cmd=...``) never start a process: ``Popen`` is stubbed.
"""

from __future__ import annotations

import functools
import io
import math
import os
import re
import signal
import string
import traceback
from datetime import timedelta
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

import othello_jax
from othello_jax.agents import AgentSpecError, neural, parse_agent, parse_spec
from othello_jax.agents import gtp as gtp_module
from othello_jax.agents.gtp_protocol import GtpError, parse_color, parse_command, parse_vertex
from othello_jax.commands import train as train_command
from othello_jax.commands.configs import resolve_config
from othello_jax.errors import InputError
from othello_jax.game import (
    NotationError,
    Othello,
    board_string,
    notation,
    parse_board,
    parse_square,
    parse_transcript,
    play_transcript,
    square_name,
)
from othello_jax.interface.gtp_server import GtpEngine, serve
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.run_settings import check_config
from othello_jax.training.settings.stages import changeable_in_stages, parse_stages

PACKAGE = Path(othello_jax.__file__).resolve().parent
REPO = PACKAGE.parent
TINY_CONFIG = str(REPO / "experiments" / "configs" / "tiny_test.py")
LONG_DIGITS = "9" * 5000  # past Python's int() digit limit (4300): a ValueError from int() itself

FAST = settings(max_examples=150, deadline=timedelta(seconds=2), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=60, deadline=timedelta(seconds=10), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def no_hang():
    """A test running past a minute is a hang: fail it (SIGALRM) instead of stalling CI."""
    def expire(signum, frame):
        raise TimeoutError("fuzz test ran past 60 s: some input hangs the parser")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def note_outcome(outcome: str) -> None:
    """For ``--hypothesis-show-statistics``: how often inputs parsed and were refused."""
    if currently_in_test_context():
        event(outcome)


def expect_clean(call, *types: type[ValueError]):
    """Run ``call()``; a failure must be one of ``types`` (default: any ``ValueError``), carry a
    non-empty one-line message, and be raised by the project's code (its last frame is in
    ``othello_jax``), not escape from a library. Returns the result, or None after an error."""
    types = types or (ValueError,)
    try:
        result = call()
        note_outcome("parsed")
        return result
    except Exception as error:
        note_outcome(f"refused: {type(error).__name__}")
        frames = traceback.extract_tb(error.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        detail = f"{type(error).__name__} at {where}: {error!r}"
        assert isinstance(error, types), f"expected {[t.__name__ for t in types]}, got {detail}"
        message = str(error)
        assert message.strip() and "\n" not in message and "Traceback" not in message, detail
        assert Path(frames[-1].filename).resolve().is_relative_to(PACKAGE), f"raised outside othello_jax: {detail}"
        # by a `raise` of the project's, not by a builtin (int('²') -> "invalid literal for int()")
        assert (frames[-1].line or "").lstrip().startswith("raise"), f"not raised by the project: {detail}"
        return None


def words(alphabet: str, max_size: int = 8):
    return st.text(alphabet, max_size=max_size)


ODD_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)  # any Unicode, control characters included
SIZES = st.sampled_from([4, 6, 8])


# ---- squares --------------------------------------------------------------------------------
SQUARE_LIKE = st.one_of(
    st.builds(lambda c, n: c + n, st.sampled_from(list("abcdefghzABH") + ["", "İ", "ß"]),
              st.sampled_from(["1", "4", "8", "0", "9", "10", "-1", "²", "٣", "01", LONG_DIGITS, ""])),
    st.sampled_from(["pass", "PASS", "--", "pa", "ps", " d3 ", "d 3", ""]),
    ODD_TEXT,
)


@FAST
@given(SQUARE_LIKE, SIZES)
@example("a" + LONG_DIGITS, 8)
def test_squares_parse_or_fail_cleanly(text, size):
    action = expect_clean(lambda: parse_square(text, size), NotationError)
    if action is not None:
        assert 0 <= action <= size * size
        if action < size * size:  # the letter and the number named that square ('a01' is a1)
            token = text.strip().lower()
            assert square_name(action, size) == token[0] + str(int(token[1:]))


# ---- transcripts ----------------------------------------------------------------------------
TOKENS = st.one_of(
    st.builds(lambda c, n: c + n, st.sampled_from("abcdefgh"), st.sampled_from("12345678")),  # mostly squares
    st.sampled_from(["--", "pass", "pa", "ps", " ", "\n", "z9", "a0", "a", "9", "I", "-", "ſ", "\u2028", "K"]),
)
TRANSCRIPTS = st.one_of(st.lists(TOKENS, max_size=70).map("".join), ODD_TEXT)


@FAST
@given(TRANSCRIPTS, SIZES)
def test_transcripts_parse_or_fail_cleanly(text, size):
    actions = expect_clean(lambda: parse_transcript(text, size), NotationError)
    if actions is not None:
        assert all(0 <= a <= size * size for a in actions)


@functools.cache
def random_game(size: int, seed: int) -> list[int]:
    """A legal game's actions (passes included), played on the host."""
    game, rng = Othello(size), np.random.default_rng(seed)
    step, legal_moves = notation._compiled(game)  # the functions play_transcript uses: compiled once
    state, actions = game.init(), []
    while not bool(state.terminal):
        action = int(rng.choice(np.flatnonzero(np.asarray(legal_moves(state)))))
        state = step(state, action)
        actions.append(action)
    return actions


@settings(SLOW, max_examples=30, deadline=None)  # each size's first example compiles the rules (16 s on a busy CPU)
@given(SIZES, st.integers(0, 5), st.lists(st.tuples(st.integers(0, 80), st.text("a1h8--PS \t", max_size=3)),
                                          max_size=4), st.booleans())
def test_replayed_transcripts_play_or_fail_cleanly(size, seed, edits, auto_pass):
    """Legal games with random edits (insertions, truncation) replay or name the bad move."""
    text = "".join(square_name(a, size) for a in random_game(size, seed))
    for position, insert in edits:
        text = text[:position] + insert + text[position:]
    game = Othello(size)
    result = expect_clean(lambda: play_transcript(text, game, auto_pass=auto_pass), NotationError)
    if result is not None:
        state, played = result
        assert all(0 <= a <= game.pass_action for a in played)
        assert len(played) >= len(parse_transcript(text, size))


# ---- board strings --------------------------------------------------------------------------
BOARDS = st.one_of(
    st.builds(lambda n, cells, sep, side: cells[:n] + sep + side,  # mostly well-formed
              st.sampled_from([16, 36, 64]), st.text("XO-xo", min_size=64, max_size=64),
              st.sampled_from([" ", "\t", "\n", "  "]), st.sampled_from(["X", "O", "x", "b", "W", "O;", "X extra"])),
    st.builds(lambda n, cells, sep, side: cells[:n] + sep + side,
              st.sampled_from([0, 15, 16, 17, 35, 36, 63, 64, 65, 100]),
              st.text("XO-xo.-ßİ", min_size=100, max_size=100),
              st.sampled_from([" ", "\t", "\n", "", "  ", "\u3000"]),
              st.sampled_from(["X", "O", "x", "b", "W", "O;", "", "Z", "X extra", "ö", "XX"])),
    ODD_TEXT,
)


@SLOW
@given(BOARDS, st.sampled_from([None, 4, 6, 8]))
@example("X" * 64 + " X", None)  # no legal move for either side: a finished position parses
def test_board_strings_parse_or_fail_cleanly(text, size):
    result = expect_clean(lambda: parse_board(text, None if size is None else Othello(size)), NotationError)
    if result is not None:
        state, game = result
        squares, side = text.split()[:2]
        side = side.upper().rstrip(";")
        assert board_string(state, game) == squares.upper() + " " + ("X" if side in "XB" else "O")


# ---- GTP: the text layer ---------------------------------------------------------------------
GTP_WORDS = st.sampled_from(["b", "W", "black", "White", "d3", "H8", "a1", "pass", "PASS", "i9", "d0", "d33", "bb"])


@FAST
@given(st.one_of(GTP_WORDS, ODD_TEXT))
@example("² name")
@example(LONG_DIGITS + " name")
def test_gtp_command_lines_parse(line):
    command = parse_command(line)  # never raises: every line is a command, or ignored
    if command is not None:
        assert command.id == "" or re.fullmatch("[0-9]+", command.id), command
        assert "#" not in command.name and not any(c.isspace() for c in command.name)
    expect_clean(lambda: parse_color(line), GtpError)
    expect_clean(lambda: parse_vertex(line, 8), GtpError)


# ---- GTP: the engine fed random conversations -----------------------------------------------
@functools.cache
def _first_legal(size: int):
    return jax.jit(lambda states: jnp.argmax(Othello(size).legal_moves(states), axis=-1).astype(jnp.int32))


class FirstLegal:
    """The lowest legal action, jitted once per board size (shared by every engine built here)."""

    def __init__(self, game: Othello):
        self.name, self.jittable, self._fn = "first-legal", True, _first_legal(game.size)

    def act(self, states, key):
        return self._fn(states)


GTP_NAMES = ["protocol_version", "name", "version", "known_command", "list_commands", "boardsize",
             "clear_board", "komi", "time_settings", "time_left", "play", "genmove", "undo", "showboard",
             "final_score", "PLAY", "frobnicate", "", "quit"]
GTP_ARGS = st.sampled_from(["b", "w", "black", "WHITE", "x", "d3", "D3", "c4", "f5", "e6", "pass", "a1", "h8",
                            "z9", "a0", "4", "6", "8", "7", "0", "-1", "²", "٤", LONG_DIGITS, "6.5", "#", "\x00"])
GTP_LINES = st.one_of(
    st.builds(lambda id_, name, args, tail: " ".join([id_, name, *args]) + tail,
              st.sampled_from(["", "", "1", "42", "007", "²", "-3", LONG_DIGITS]), st.sampled_from(GTP_NAMES),
              st.lists(GTP_ARGS, max_size=3), st.sampled_from(["", " # comment", "\r", "\t", "\x85"])),
    ODD_TEXT,
)


def check_response(response: str, line: str) -> None:
    assert response.endswith("\n\n") and response[:1] in "=?", repr(response)
    assert "\n\n" not in response[:-2], f"blank line inside the response to {line!r}: {response!r}"
    assert "internal error" not in response, f"{line!r} crashed the engine: {response!r}"
    command = parse_command(line)
    assert response[1:].startswith(command.id), (line, response)


@SLOW
@given(st.lists(GTP_LINES, min_size=1, max_size=12))
@example(["boardsize ²", "boardsize " + LONG_DIGITS, "boardsize 4", "genmove b", "undo", "undo"])
def test_gtp_engine_answers_every_command_line(lines):
    engine = GtpEngine(FirstLegal, size=4)
    for line in lines:
        response = engine.handle(line)
        if response is None:
            assert parse_command(line) is None
            continue
        check_response(response, line)
        if engine.finished:
            break
    # the engine's game is always a legal one: its record replays
    play_transcript(engine.session.transcript(), engine.session.game, start=engine.session.states[0])


@SLOW
@given(st.lists(GTP_LINES, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_gtp_serve_answers_until_quit_or_end_of_input(lines, newline):
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]  # one command per line
    out = io.StringIO()
    assert serve(GtpEngine(FirstLegal, size=4), io.StringIO(newline.join(lines)), out) == 0
    expected = 0
    for line in lines:
        command = parse_command(line)
        if command is not None:
            expected += 1
            if command.name == "quit":
                break
    responses = out.getvalue().split("\n\n")
    assert responses[-1] == "" and len(responses) - 1 == expected, (lines, out.getvalue())
    assert not any("internal error" in r for r in responses)


# ---- agent specs ------------------------------------------------------------------------------
@FAST
@given(ODD_TEXT)
@example('gtp:cmd="unbalanced')
@example("alphabeta:" + LONG_DIGITS)
def test_agent_specs_parse_or_fail_cleanly(spec):
    expect_clean(lambda: parse_spec(spec), AgentSpecError)


KINDS = ["random", "greedy", "alphabeta", "mcts", "net", "gtp", "perfect", "Random", "nope", ""]
OPTION_KEYS = ["depth", "sims", "rollouts", "search", "ckpt", "preset", "seed", "temp", "cmd", "timeout", "cache",
               "solve", "solver", "name", "DEPTH", "bogus", ""]
OPTION_VALUES = st.one_of(
    st.sampled_from(["0", "1", "2", "3", "-1", "64", "1e3", "2.5", "nan", "inf", "-inf", "1e999", "²", LONG_DIGITS,
                     str(2**64), "puct", "gumbel", "muzero", "jax", "c", "auto", "tiny", "small", "huge", "",
                     '"quoted, with comma"', "'single'", '"unbalanced', "'", '"', "a=b", "echo hi", "/nonexistent",
                     "0x10", " 3 "]),
    words(string.printable, 6),
)
KIND_OPTIONS = {"random": [], "greedy": [], "alphabeta": ["depth"], "mcts": ["sims", "rollouts", "search"],
                "net": ["ckpt", "preset", "seed", "sims", "search", "temp"], "gtp": ["cmd", "timeout"],
                "perfect": ["cache"]}  # building one reads or writes no cache (that happens in play)
GOOD_VALUES = {"depth": ["1", "2", "3"], "sims": ["0", "1", "2", "4"], "rollouts": ["1", "2"],
               "search": ["puct", "gumbel"], "ckpt": ["/nonexistent/run", "README.md"], "preset": ["tiny"],
               "seed": ["0", "1"], "temp": ["0", "0.5", "1"], "cmd": ['"engine -gtp -l 6"', "engine"],
               "timeout": ["1", "30"], "cache": ["", "/nonexistent/cache"],
               "solve": ["0", "4", "8"], "solver": ["jax", "auto"], "name": ["x", "'a, b'"]}


def _plausible_spec(kind: str):
    keys = KIND_OPTIONS[kind] + ["solve", "solver", "name"]
    option = lambda key: st.tuples(st.just(key), st.one_of(st.sampled_from(GOOD_VALUES[key]), OPTION_VALUES))
    return st.lists(st.sampled_from(keys), unique=True, max_size=3).flatmap(
        lambda chosen: st.tuples(*map(option, chosen))).map(
        lambda options: kind + (":" + ",".join(f"{k}={v}" for k, v in options) if options else ""))


SPECS = st.one_of(
    st.sampled_from(list(KIND_OPTIONS)).flatmap(_plausible_spec),  # the right options, values good or bad
    st.builds(lambda kind, bare, options: kind + ":" + ",".join(([bare] if bare else [])
                                                                + [f"{k}={v}" for k, v in options]),
              st.sampled_from(KINDS), st.one_of(st.just(""), OPTION_VALUES),
              st.lists(st.tuples(st.sampled_from(OPTION_KEYS), OPTION_VALUES), max_size=4)),
)


@pytest.fixture(scope="module")
def offline_builders():
    """No engine process is ever started (``Popen`` fails as for a missing program) and a network
    is initialised once per (architecture, seed, size): building an agent stays cheap."""
    init = neural.init_variables
    cache: dict = {}

    def cached_init(model, key, size):
        tag = (repr(model), tuple(np.asarray(jax.random.key_data(key)).ravel().tolist())
               if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else tuple(np.asarray(key).ravel().tolist()), size)
        if tag not in cache:
            cache[tag] = init(model, key, size)
        return cache[tag]

    def no_process(argv, **kwargs):
        raise FileNotFoundError(2, "No such file or directory (fuzz tests start no process)")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(neural, "init_variables", cached_init)
        patch.setattr(gtp_module.subprocess, "Popen", no_process)
        yield


@SLOW
@given(SPECS, st.sampled_from([4, 6]))
@example("net:preset=tiny,seed=" + str(2**70), 4)
@example("gtp:cmd='half quoted", 4)
@example("gtp:cmd=engine,timeout=nan", 4)
@example("mcts:sims=2,search=muzero", 4)
@example("alphabeta:depth=3,solve=4,solver=jax,name=x", 4)
def test_agent_specs_build_or_fail_cleanly(offline_builders, spec, size):
    agent = expect_clean(lambda: parse_agent(spec, Othello(size)), AgentSpecError)
    if agent is not None:
        assert agent.name and callable(agent.act)


# ---- `othello-jax train` overrides and stage strings ----------------------------------------
def _flat(node, prefix=""):
    for key, value in node.items():
        if hasattr(value, "items"):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def config_keys() -> list[str]:
    return sorted(key for key, _ in _flat(default_config()))


KEYS = st.one_of(st.sampled_from(config_keys()),
                 st.sampled_from(["search", "network", "nope", "search.nope", "iterations.x", "", ".", "a..b",
                                  "search.num_simulations.x", "SEARCH.num_simulations"]))
VALUES = st.one_of(
    st.sampled_from(["0", "1", "2", "4", "-1", "1e-3", "nan", "inf", "1e999", "true", "False", "yes", "", "²",
                     LONG_DIGITS, "puct", "gumbel", "adamw", "cosine", "tiny", "random greedy", "alphabeta:0",
                     "net:preset=nope", "gtp:cmd=x", "mcts:sims=-1", "[1, 2]", "{'a': 1}", "None", "'quoted'",
                     "1: search.num_simulations=8", "x: y=z"]),
    words(string.printable.replace("\n", "").replace("\r", ""), 8),
)


@settings(SLOW, max_examples=150)
@given(st.lists(st.tuples(KEYS, VALUES), max_size=4))
@example([("stages", "1: network.preset=large")])
@example([("iterations", LONG_DIGITS)])
@example([("network", "5")])
@example([("eval.every", "1"), ("eval.opponents", "gtp:cmd='unbalanced")])
@example([("optimizer.boundaries", "nan")])  # once an int() error from the settings reader
def test_train_overrides_parse_or_fail_cleanly(offline_builders, overrides):
    argv = [f"--config={TINY_CONFIG}", "--workdir=/nonexistent/fuzz"] + [f"--config.{k}={v}" for k, v in overrides]
    parsed = expect_clean(lambda: train_command.parse(argv))
    if parsed is not None:
        config, workdir = parsed
        assert workdir == "/nonexistent/fuzz"
        expect_clean(lambda: check_config(config))


CONFIG_REFERENCES = st.one_of(
    st.builds(lambda base, suffix, arg: base + suffix + arg,
              st.sampled_from(["othello6_cpu", "tiny_test", "supervised", "nosuch", "", ".", "..", "/", "~",
                               "experiments/configs/tiny_test", "elsewhere/configs/tiny_test", "__init__", "_x",
                               "othello6_cpu/", "/nonexistent/x", TINY_CONFIG, str(REPO / "experiments")]),
              st.sampled_from(["", ".py", ".PY", ".txt", ".py.py"]),
              st.sampled_from(["", ":", ":cpu", "::", ":" + LONG_DIGITS])),
    ODD_TEXT,
)


@FAST
@given(CONFIG_REFERENCES)
@example("supervised.py:cpu")
@example("\0")
def test_config_references_resolve_or_fail_cleanly(reference):
    """``--config=REFERENCE``: a file path (kept), a shipped config's name (its file, with the
    ``:ARG`` kept), or one line naming the shipped configs."""
    resolved = expect_clean(lambda: resolve_config(reference), InputError)
    if resolved is None:
        with pytest.raises(InputError, match="tiny_test"):
            resolve_config(reference)
        return
    base, _, argument = resolved.partition(":")
    assert Path(base).is_file() and argument == reference.partition(":")[2]
    if not Path(os.path.expanduser(reference.partition(":")[0])).is_file():  # by name: a shipped config
        assert Path(base).parent == REPO / "experiments" / "configs" and Path(base).suffix == ".py"


STAGE_KEYS = st.one_of(st.sampled_from(config_keys()), st.sampled_from(["nope", "search.nope", "search", ""]))
def _typed_value(key: str):
    """Values of the setting's own type (most of them acceptable), else anything."""
    default = dict(_flat(default_config())).get(key)
    if isinstance(default, bool):
        typed = st.sampled_from(["true", "false", "1", "0"])
    elif isinstance(default, int):
        typed = st.integers(0, 64).map(str)
    elif isinstance(default, float):
        typed = st.sampled_from(["0", "0.5", "1.0", "1e-3", "0.25"])
    else:
        typed = st.sampled_from([str(default), "puct", "gumbel", "adamw", "random greedy"])
    return st.one_of(typed, typed, VALUES.map(lambda v: v.replace(",", " ").replace(";", " ")))


CHANGEABLE_KEYS = [key for key in config_keys() if changeable_in_stages(key)]
STAGE_ITEMS = st.one_of(
    st.sampled_from(CHANGEABLE_KEYS).flatmap(lambda key: _typed_value(key).map(lambda v: f"{key}={v}")),
    st.sampled_from(["search.num_simulations=8", "optimizer.learning_rate=1e-4", "selfplay.temperature_plies=2"]),
    st.builds(lambda k, eq, v: k + eq + v, STAGE_KEYS, st.sampled_from(["=", "=", " = ", "", "=="]),
              VALUES.map(lambda v: v.replace(",", " ").replace(";", " "))),
)
STAGES = st.one_of(
    st.lists(st.builds(lambda head, sep, items: head + sep + ", ".join(items),
                       st.one_of(st.integers(1, 50).map(str),
                                 st.sampled_from([" 2 ", "0", "²", "-1", "x", "", LONG_DIGITS, "1.5"])),
                       st.sampled_from([":", ": ", ":", "", "="]), st.lists(STAGE_ITEMS, max_size=2)),
             max_size=3).map("; ".join),
    ODD_TEXT,
)


@settings(SLOW, max_examples=150)
@given(STAGES)
@example("² : search.num_simulations=8")
@example(LONG_DIGITS + ": search.num_simulations=8")
@example("2: search.num_simulations=" + LONG_DIGITS)
@example("2: search.num_simulations=8; 2: search.num_simulations=16")
def test_stage_strings_parse_or_fail_cleanly(offline_builders, text):
    config = default_config()
    config.eval.every = 0  # the opponents' specs are fuzzed above
    stages = expect_clean(lambda: parse_stages(text, config))
    if stages is not None:
        starts = [start for start, _ in stages]
        assert starts[0] == 0 and starts == sorted(set(starts))
        config.stages = text
        expect_clean(lambda: check_config(config))


def test_the_checker_itself_rejects_library_errors():
    """The property can fail: an error escaping from a library, or a multi-line one, is caught."""
    with pytest.raises(AssertionError, match="raised outside othello_jax"):
        expect_clean(lambda: math.sqrt(-1) and None)
    with pytest.raises(AssertionError, match="expected"):
        expect_clean(lambda: parse_square("z9"), AgentSpecError)
    with pytest.raises(AssertionError):
        expect_clean(lambda: (_ for _ in ()).throw(NotationError("two\nlines")), NotationError)
