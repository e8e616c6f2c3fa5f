"""What the players' first move runs on the host in numpy instead of jax operations compiled one by
one (empty squares, the analysis' prior, the batch of one), checked against the jax originals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.evaluation.analysis import summarize
from othello_jax.game import Othello, batch_of_one
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
