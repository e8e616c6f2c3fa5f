"""What the players' first move runs on the host in numpy instead of jax operations compiled one by
one (empty squares, the analysis' prior, the batch of one, the session's rules), checked against the
jax originals; and the first reply of `play` and the GTP engine from a builtin network, which waits
for no board program and no orbax (issue 65)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.evaluation.analysis import summarize
from othello_jax.game import Othello, batch_of_one, one_position
from othello_jax.interface.session import GameSession, agent_action
from othello_jax.solver import count_empties, empties_on_host


def random_positions(game: Othello, count: int, seed: int):
    """Positions of ``count`` random games after a random number of plies (leading axis ``count``)."""
    rng = np.random.default_rng(seed)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
    step, legal_moves = jax.jit(game.step), jax.jit(game.legal_moves)
    stop = rng.integers(0, game.num_squares, count)
    for ply in range(game.num_squares):
        legal = np.asarray(legal_moves(states))
        chosen = [rng.choice(np.flatnonzero(row)) if row.any() else game.pass_action for row in legal]
        states = jax.tree.map(lambda new, old: jnp.where((ply < stop).reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
                              step(states, jnp.asarray(chosen, jnp.int32)), states)
    return states


def test_empties_on_host_match_the_jittable_count():
    for size in (4, 6, 8):
        game = Othello(size)
        states = random_positions(game, 64, seed=size)
        expected = np.asarray(count_empties(states, game))
        assert np.unique(expected).size > 5
        np.testing.assert_array_equal(empties_on_host(states, game), expected)
        one = jax.tree.map(lambda x: x[3], states)
        assert empties_on_host(one, game).shape == () and int(empties_on_host(one, game)) == expected[3]


def test_the_analysis_prior_is_the_networks_softmax_over_legal_moves():
    game = Othello(8)
    states = random_positions(game, 8, seed=1)
    legal = game.legal_moves(states)
    logits = jax.random.normal(jax.random.key(0), legal.shape) * 4
    result = types_result(legal, logits)
    for index in range(8):
        analysis = summarize(result, index, game)
        expected = np.asarray(jax.nn.softmax(jnp.where(legal[index], logits[index], -jnp.inf)))
        assert [move.action for move in sorted(analysis.moves, key=lambda m: m.action)] == \
            np.flatnonzero(np.asarray(legal[index])).tolist()
        for move in analysis.moves:
            assert abs(move.prior - expected[move.action]) < 1e-6
    finished = types_result(jnp.zeros_like(legal), logits)  # no legal move: no prior, no warning
    assert summarize(finished, 0, game).moves == ()


def types_result(legal, logits):
    """A search result holding only what ``summarize`` reads (one visit per legal move)."""
    from othello_jax.search import SearchResult

    count = legal.shape[0]
    zeros = jnp.zeros(count)
    return SearchResult(action=jnp.argmax(legal, axis=-1), policy_target=legal / legal.sum(-1, keepdims=True),
                        root_value=zeros, q=jnp.zeros(legal.shape), visit_counts=legal.astype(jnp.int32),
                        prior_logits=logits, network_value=zeros, legal=legal, tree=None)


def test_a_session_passes_its_agent_the_position_as_a_batch_of_one():
    session = GameSession(Othello(6))
    session.play(session.legal_actions()[0])
    seen = []

    def act(states, key):
        seen.append(states)
        return jnp.argmax(session.game.legal_moves(states), axis=-1)

    agent = type("Agent", (), {"name": "first-legal", "act": staticmethod(act)})()
    assert agent_action(agent, session.state, jax.random.key(0)) == session.legal_actions()[0]
    expected = batch_of_one(session.state)
    for got, want in zip(jax.tree.leaves(seen[0]), jax.tree.leaves(expected), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


REPO = Path(__file__).resolve().parent.parent

# Runs othello-jax (argv[1:]) and prints IMPORT_MARK + the module's name on stdout when orbax is first imported.
IMPORT_MARK = "first-import: "
WRAPPER = f"""
import importlib.abc, sys

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "orbax":
            print({IMPORT_MARK!r} + name, flush=True)
        return None

sys.meta_path.insert(0, Watch())
from othello_jax.cli import main
sys.exit(main(sys.argv[1:]))
"""
# the rules' programs GameSession compiled before (jax.jit of Othello.init, step, legal_moves)
BOARD_PROGRAM = re.compile(r"Compiling jit\((init|step|legal_moves)\)")


def _leaves(state) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree.leaves(state)]


@pytest.mark.parametrize("size", [4, 6, 8])
def test_host_rules_match_the_jitted_rules(size):
    """Random games: every state (dtypes and shapes too), legal action list and disc count agrees."""
    game, rng = Othello(size), np.random.default_rng(size)
    step, legal_moves = jax.jit(game.step), jax.jit(game.legal_moves)
    for _ in range(4):
        jitted, hosted = game.init(), one_position.init(game)
        while True:
            for a, b in zip(_leaves(jitted), _leaves(hosted), strict=True):
                assert (a.dtype, a.shape) == (b.dtype, b.shape) and np.array_equal(a, b)
            legal = [int(a) for a in np.flatnonzero(np.asarray(legal_moves(jitted)))]
            assert one_position.legal_actions(hosted, game) == legal
            black, white = game.black_white(jitted)
            counts = tuple(one_position.to_int(discs).bit_count() for discs in (black, white))
            assert one_position.disc_counts(hosted) == counts
            if not legal:
                break
            action = int(rng.choice(legal))
            jitted, hosted = step(jitted, np.int32(action)), one_position.step(game, hosted, action)
        assert one_position.step(game, hosted, game.pass_action) is hosted  # a finished game stays as it is


def test_session_plays_on_host_states():
    session = GameSession(Othello(8))
    session.play(session.parse_move("f5"))
    assert isinstance(session.state.mover.lo, np.ndarray) and session.transcript() == "f5"
    assert session.disc_counts() == (4, 1)


def _first_reply(argv: list[str], stdin: str, reply: re.Pattern) -> list[str]:
    """The lines of a player's output (stderr merged, jax's compile log on) up to its first reply;
    the process is stopped then (its search need not finish compiling)."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, JAX_LOG_COMPILES="1", PYTHONPATH=path, OTHELLO_JAX_XLA_CACHE="off")  # killed mid-compile
    process = subprocess.Popen([sys.executable, "-c", WRAPPER, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env)
    lines: list[str] = []
    try:
        process.stdin.write(stdin)
        process.stdin.flush()
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if reply.search(line):
                break
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert lines and reply.search(lines[-1]), "\n".join(lines[-40:])
    return lines


@pytest.mark.parametrize("command", ["play", "engine"])
def test_first_book_reply_needs_no_orbax_and_no_board_program(command):
    """`play` with the agent moving first and the GTP engine's first genmove, from the builtin
    8x8 network: the book's reply comes before orbax is imported (it never is: the network is a
    msgpack file), with no board program compiled (the session plays on the host) and no notice of
    a compile (the reply waits for none)."""
    if command == "play":
        argv, stdin, reply = ["play", "--checkpoint=builtin:8x8", "--color=white"], "", re.compile(r"\) plays \S+$")
    else:
        argv, stdin, reply = ["engine", "--checkpoint=builtin:8x8"], "boardsize 8\nclear_board\ngenmove b\n", \
            re.compile(r"^= [a-h][1-8]$")
    lines = _first_reply(argv, stdin, reply)
    assert not [line for line in lines if line.startswith(IMPORT_MARK)], "\n".join(lines[-40:])
    assert not [line for line in lines if BOARD_PROGRAM.search(line)], "\n".join(lines[-40:])
    assert not [line for line in lines if line.startswith("preparing")], "\n".join(lines[-40:])  # nobody waited
