"""Moves that end the game, valued exactly in the search's network evaluation (search/network.py
``exact_endings``): the rules' one-ply look (``Othello.ending_moves``) against stepping every
move, hand-built positions, and the shipped 8x8 network's wipeout blind spot."""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import search
from othello_jax.agents.neural import load_network, network_apply_fn, playing_search_config
from othello_jax.game import Othello, State, parse_board, parse_square, play_transcript
from othello_jax.search import evaluate
from othello_jax.search.run import avoid_proven_losses
from tests.test_search import random_positions, step_every_action

MIN = np.finfo(np.float32).min


@pytest.mark.parametrize("size, games, seed", [(4, 256, 1), (6, 64, 0)])  # test_search.py's games
def test_ending_moves_equal_stepping_every_move(size, games, seed):
    """Which moves end the game and the mover's result equal game.step then game.outcome, on
    every position of random games (passes and finished games included)."""
    game = Othello(size)
    states = random_positions(size, games=games, seed=seed)
    ends, difference, legal = jax.jit(lambda s: (*game.ending_moves(s), game.legal_moves(s)))(states)
    over, moved_result = step_every_action(game, states)
    legal = np.asarray(legal)
    want_ends = legal & np.asarray(over)
    want_result = np.where(want_ends, np.asarray(moved_result), 0)
    np.testing.assert_array_equal(np.asarray(ends), want_ends)
    np.testing.assert_array_equal(np.sign(np.asarray(difference)), want_result)
    np.testing.assert_array_equal(np.asarray(difference), np.where(want_ends, stepped_differences(game, states), 0))
    assert not np.asarray(ends)[:, game.pass_action].any()
    # the sample has every kind: wins, losses and draws on the spot, and positions with none
    assert {-1, 0, 1} <= set(want_result[want_ends].tolist()) and (~want_ends.any(-1) & legal.any(-1)).any()


def stepped_differences(game: Othello, states: State) -> np.ndarray:
    """[P, A]: the final disc difference for the mover after each action, by stepping it (empties
    to the winner once the game is over, as ``Othello.outcome`` counts them)."""
    expand = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], game.num_actions) + x.shape[1:])
    actions = jnp.broadcast_to(jnp.arange(game.num_actions, dtype=jnp.int32), states.ply.shape + (game.num_actions,))
    children = game.step(jax.tree.map(expand, states), actions)
    return -np.asarray(game.outcome(children)[1])


def test_result_value_orders_results_then_margins():
    """``Othello.result_value``: margin 0 is the result; any margin keeps every win above every
    draw above every loss and grows with the disc difference; margin 1 is the difference alone."""
    game = Othello(6)
    differences = np.arange(-36, 37)
    np.testing.assert_array_equal(np.asarray(game.result_value(differences)), np.sign(differences))
    for margin in (0.25, 0.5, 1.0):
        value = np.asarray(game.result_value(differences, margin))
        assert (np.diff(value) > 0).all() and (np.sign(value) == np.sign(differences)).all()
        assert value[0] == pytest.approx(-1.0) and value[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(np.asarray(game.result_value(differences, 0.5)),
                               0.5 * np.sign(differences) + 0.5 * differences / 36, rtol=1e-6)


def board(*rows: str, side: str = "X", blob: str = "") -> State:
    """An 8x8 position from its top rows (the rest empty), with white discs ``blob`` on row 8."""
    lines = [row.ljust(8, "-") for row in rows] + ["-" * 8] * (8 - len(rows))
    if blob:
        lines[7] = blob.rjust(8, "-")
    state, _ = parse_board("".join(lines) + " " + side)
    return state


FAR = "OOOOOOOO"  # eight white discs on row 8 that the top rows can never reach
WIPEOUT = ("-X", "XOO")  # black's d2 flips both white discs; b3 and d3 flip one
POSITIONS = {  # name: (position, the network value, the value expected, the moves keeping their logits)
    "d2 wipes out": (board(*WIPEOUT), -0.5, 1.0, "d2"),
    "d2 loses on the spot, b3 d3 play on": (board(*WIPEOUT, blob=FAR), 0.25, 0.25, "b3 d2 d3"),
    "d2 loses, network more pessimistic": (board(*WIPEOUT, blob=FAR), -0.9, -0.9, "b3 d2 d3"),
    "d2 draws on the spot (5-5)": (board(*WIPEOUT, blob="OOOOO"), -0.5, 0.0, "b3 d2 d3"),
    "d2 draws, network more optimistic": (board(*WIPEOUT, blob="OOOOO"), 0.5, 0.5, "b3 d2 d3"),
    "c3 is the only move, lost": (board("X", "-O", blob=FAR), 0.5, -1.0, "c3"),
    "c3 is the only move, drawn (3-3)": (board("X", "-O", blob="OOO"), 0.5, 0.0, "c3"),
    "last empty a1 wins 63-1": (board("-OXXXXXX", *["XXXXXXXX"] * 6, "XXXXXXXO"), -0.5, 1.0, "a1"),
    "black must pass": (board("O", "X"), 0.3, 0.3, "--"),
    "game over": (board(*["XXXXXXXX"] * 8), 0.3, 0.3, ""),
}


@functools.partial(jax.jit, static_argnums=(0, 3))
def _evaluate(apply_fn, values, states, endings):
    return evaluate(apply_fn, values, states, Othello(8), None, endings)


def _constant_network(values, obs):
    """Flat priors and the value given per position (the variables)."""
    return jnp.zeros((obs.shape[0], 65)), values


def test_read_value_inverts_result_value():
    """``Othello.read_value`` gives back the result and the disc difference of every final
    difference put on the value head's scale, for any margin; a result-only value gives the
    nearest result and no difference."""
    for size in (4, 6, 8):
        game = Othello(size)
        differences = np.arange(-game.num_squares, game.num_squares + 1)
        for margin in (0.1, 0.5, 1.0):
            result, difference = game.read_value(np.asarray(game.result_value(differences, margin)), margin)
            np.testing.assert_array_equal(result, np.sign(differences))
            np.testing.assert_allclose(difference, differences, atol=1e-3)
        result, difference = game.read_value(np.array([0.9, 0.3, -0.3, -0.7]))
        np.testing.assert_array_equal(result, [1, 0, 0, -1])
        assert np.isnan(difference).all()
    # values no game gives (a barely winning value under a big margin, beyond 1) read on the
    # result's side and within the board
    np.testing.assert_array_equal(Othello(6).read_value(np.array([0.3, -0.3, 0.1, 1.5]), 0.5),
                                  ([1, -1, 0, 1], [1, -1, 0, 36]))


def test_hand_built_endings_value_and_mask():
    """Value = max(network, best ending) or the best ending when every move ends the game; a
    win on the spot leaves only its logit unmasked; passes and finished games unchanged."""
    game = Othello(8)
    names = list(POSITIONS)
    states = jax.tree.map(lambda *x: jnp.stack(x), *[POSITIONS[n][0] for n in names])
    values = jnp.asarray([POSITIONS[n][1] for n in names], jnp.float32)
    logits, value = map(np.asarray, _evaluate(_constant_network, values, states, True))
    plain_logits, plain_value = map(np.asarray, _evaluate(_constant_network, values, states, False))
    np.testing.assert_array_equal(plain_value, values)
    legal = np.asarray(game.legal_moves(states))
    for row, name in enumerate(names):
        _, network_value, want, kept = POSITIONS[name]
        assert value[row] == pytest.approx(want), name
        want_kept = sorted(parse_square(m) for m in kept.split())
        assert np.flatnonzero(logits[row] > MIN).tolist() == want_kept, name
        np.testing.assert_array_equal(plain_logits[row] > MIN, legal[row], err_msg=name)


def test_a_margin_networks_search_values_finished_games_on_its_scale(monkeypatch):
    """``value_margin`` 0.5: the evaluated value where every move ends the game, and the search's
    q of that move (its reward), are ``result_value`` of the final difference stepped to; a
    network's players pass its own margin to the search."""
    game = Othello(8)
    names = ["c3 is the only move, lost", "last empty a1 wins 63-1", "c3 is the only move, drawn (3-3)"]
    states = jax.tree.map(lambda *x: jnp.stack(x), *[POSITIONS[n][0] for n in names])
    moves = np.array([parse_square(POSITIONS[n][3]) for n in names])
    final = stepped_differences(game, states)[np.arange(len(names)), moves]
    want = np.asarray(game.result_value(final, 0.5))
    assert want[0] < -0.5 and 0.5 < want[1] < 1.0 and want[2] == 0.0 and abs(want[0]) != 1.0
    values = jnp.full(len(names), 0.3, jnp.float32)
    _, value = jax.jit(lambda v, s: evaluate(_constant_network, v, s, game, None, True, 0.5))(values, states)
    np.testing.assert_allclose(np.asarray(value), want, rtol=1e-6)
    run = jax.jit(lambda v, s, k: search.run_search(playing_search_config("gumbel", 4), _constant_network, v, s, k,
                                                     game, 0.5))
    result = run(values, states, jax.random.key(0))
    np.testing.assert_allclose(np.asarray(result.q)[np.arange(len(names)), moves], want, rtol=1e-6)

    from othello_jax.agents import neural
    from othello_jax.model import NetworkConfig

    seen, real = [], neural.policy_fn
    monkeypatch.setattr(neural, "policy_fn", lambda *args: seen.append(args) or real(*args))
    neural.network_agent(game, NetworkConfig(blocks=1, channels=8, value_hidden=8, value_margin=0.25), None, sims=2)
    bound = inspect.signature(real).bind(*seen[0]).arguments
    assert bound["value_margin"] == 0.25 and bound["traps"] is True


ISSUE_LINE = "d3c3c4c5f6f3e3g7g3h3"  # black 1 disc to 13; e2, g2, c6, e6 each allow a reply taking every black disc
WIPEOUTS = {"e2": "e1", "g2": "h1", "c6": "b7", "e6": "e7"}  # black's move: white's reply that takes every disc


@functools.cache
def shipped_8x8():
    """``(game, apply_fn, variables)`` of ``builtin:8x8``."""
    game, network_config, variables = load_network("builtin:8x8")
    return game, network_apply_fn(game, network_config), variables


def test_the_issues_wipeout_replies_are_valued_exactly():
    """After each of black's unsafe moves, white's evaluated value is +1 (the network says less
    than +0.5) and only the wipeout reply keeps its logit; after c2 and b4, and at black's
    root, the network's own values and priors."""
    game, apply_fn, variables = shipped_8x8()
    before, _ = play_transcript(ISSUE_LINE, game)
    moves = ["c2", "b4", *WIPEOUTS]
    states = jax.tree.map(lambda *x: jnp.stack(x), before, *[play_transcript(m, game, start=before)[0] for m in moves])
    logits, value = map(np.asarray, _evaluate(apply_fn, variables, states, True))
    plain_logits, plain_value = map(np.asarray, _evaluate(apply_fn, variables, states, False))
    np.testing.assert_array_equal(value[:3], plain_value[:3])  # black's root, and after c2 and b4
    np.testing.assert_array_equal(logits[:3], plain_logits[:3])
    assert (value[3:] == 1.0).all() and (plain_value[3:] < 0.5).all()
    for row, reply in enumerate(WIPEOUTS.values(), start=3):
        assert np.flatnonzero(logits[row] > MIN).tolist() == [parse_square(reply)]


GREEDY_LINE = "e6f4f3f2g3d6c5h2f5f6c4b4"  # builtin:8x8 (black, 1 disc to 15) against greedy: only g2 survives


def wipeout_replies(game, state) -> dict[int, bool]:
    """Each legal move of ``state``: whether the opponent can answer it by taking every disc of
    the mover's, found by stepping every move and then every reply with the rules (a final
    difference of every square, ``stepped_differences``)."""
    moves = np.flatnonzero(np.asarray(game.legal_moves(state))[: game.num_squares])
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(moves),) + x.shape), state)
    after = game.step(batch, jnp.asarray(moves, jnp.int32))
    wipeout = (stepped_differences(game, after) == game.num_squares) & np.asarray(game.legal_moves(after))
    return {int(move): bool(wipeout[row].any()) for row, move in enumerate(moves)}


def test_the_search_never_plays_a_proven_loss_when_a_safe_move_exists():
    """From a game ``builtin:8x8`` lost to greedy: its prior puts 92% on d3, and five of black's
    six other moves also allow white to take every disc (checked with the rules); the search
    values all six at -1 and plays the one safe move, whatever its prior. The rule alone
    (``avoid_proven_losses``): a proven-lost choice moves to the best open move by the policy,
    and stays where every move is lost."""
    game, apply_fn, variables = shipped_8x8()
    state, _ = play_transcript(GREEDY_LINE, game)
    unsafe = wipeout_replies(game, state)
    assert sorted(m for m, bad in unsafe.items() if not bad) == [parse_square("g2")] and len(unsafe) == 7
    searched = jax.jit(functools.partial(search.run_search, playing_search_config("gumbel", 32), apply_fn, game=game))
    result = searched(variables, jax.tree.map(lambda x: x[None], state), jax.random.key(0))
    q, visits = np.asarray(result.q[0]), np.asarray(result.visit_counts[0])
    assert all(q[m] == -1.0 and visits[m] > 0 for m, bad in unsafe.items() if bad)
    assert int(result.action[0]) == parse_square("g2")
    assert float(jax.nn.softmax(result.prior_logits[0])[parse_square("d3")]) > 0.5

    q = jnp.array([[-1.0, 0.2, -0.5, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    visits = jnp.array([[5, 1, 2, 0], [3, 3, 3, 3]])
    policy = jnp.array([[0.7, 0.1, 0.2, 0.0], [0.4, 0.3, 0.2, 0.1]])
    legal = jnp.array([[True, True, True, False], [True] * 4])
    chosen = avoid_proven_losses(jnp.array([0, 1]), q, visits, policy, legal)
    assert chosen.tolist() == [2, 1]  # the open move the policy likes most; all lost: unchanged


@pytest.mark.slow  # compiles a search around the 8x8 network: about 20 s on 2 busy cores
def test_the_shipped_8x8_network_no_longer_walks_into_a_wipeout():
    """The issue's position: the search plays c2 or b4, its q of every unsafe move is -1, and
    after e6 it plays e7 with every simulation (value +1)."""
    game, apply_fn, variables = shipped_8x8()
    before, _ = play_transcript(ISSUE_LINE, game)
    after, _ = play_transcript("e6", game, start=before)
    states = jax.tree.map(lambda *x: jnp.stack(x), before, after)
    searched = jax.jit(functools.partial(search.run_search, playing_search_config("gumbel", 32), apply_fn, game=game))
    result = searched(variables, states, jax.random.key(0))
    action, q, visits = (np.asarray(x) for x in (result.action, result.q, result.visit_counts))
    assert action[0] in (parse_square("c2"), parse_square("b4"))
    unsafe = [parse_square(m) for m in WIPEOUTS]
    assert (visits[0, unsafe] > 0).all() and (q[0, unsafe] == -1.0).all()
    assert action[1] == parse_square("e7") and float(result.network_value[1]) == 1.0
    assert visits[1].sum() == visits[1, parse_square("e7")] == 32  # no effort elsewhere
    assert float(result.root_value[1]) == 1.0
