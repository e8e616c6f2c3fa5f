"""Self-play: legal games replayed independently, targets, value targets, harvest, resignation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import search
from othello_jax.game import BLACK, NotationError, Othello, play_transcript
from othello_jax.training.compiled import selfplay
from tests.conftest import tiny_net

GAME = Othello(4)
BATCH = 32
NEVER, ALWAYS = -2.0, 2.0  # resign thresholds: below any value / above any value


def main_config():
    c = selfplay.default_selfplay_config()
    c.num_games = BATCH
    c.temperature_plies = 4
    c.harvest.per_tree = 2
    c.harvest.min_visits = 2
    c.resign.enabled = True
    c.resign.playout_fraction = 0.5
    return c


def search_config(variant="gumbel", sims=8):
    c = search.default_search_config()
    c.variant = variant
    c.num_simulations = sims
    return c


def play_one_lane(config, search_c, apply_fn, variables, key, resign, openings=None, game=GAME, final_board=False):
    """``play_games`` for one lane (L = 1) with the configs ``config``/``search_c``, the lane axis dropped."""
    settings = selfplay.SelfPlaySettings.from_config(config, final_board=final_board)
    lane = lambda x: jnp.asarray(x)[None]
    out = selfplay.play_games(settings, search.SearchSettings.from_config(search_c), game, apply_fn, variables,
                              lane(key), jax.tree.map(lane, resign), openings)
    return jax.tree.map(lambda x: x[0], out)


def openings() -> np.ndarray:
    rows = selfplay.openings_from_transcripts(["", "b1", "b1a1"], GAME)
    assert rows.shape == (3, 2) and (rows[0] == -1).all()
    return rows


@functools.cache
def played(threshold: float, seed: int = 0):
    """One compiled self-play function (main config), called with different resign thresholds."""
    apply_fn, variables = tiny_net(GAME.size)
    fn = _compiled_main()
    resign = selfplay.ResignState(jnp.float32(threshold), jnp.float32(0.0))
    out, stats, new_resign = fn(variables, jax.random.key(seed), resign, jnp.asarray(openings()))
    return jax.tree.map(np.asarray, (out, stats, new_resign))


@functools.cache
def _compiled_main():
    apply_fn, _ = tiny_net(GAME.size)
    return jax.jit(lambda v, k, r, o: play_one_lane(main_config(), search_config(), apply_fn, v, k, r, o))


def states_at(out, t, b):
    return jax.tree.map(lambda x: x[t, b], out.samples.state)


# ---------------------------------------------------------------------------------------------
def test_games_are_legal_and_outcomes_match_an_independent_replay():
    out, stats, _ = played(NEVER)
    mask, action = out.samples.mask, out.action
    legal = np.asarray(GAME.legal_moves(out.samples.state))  # [T, B, A]
    T, B = mask.shape
    # rows are real up to the end of the game, padding after it
    assert (mask[1:] <= mask[:-1]).all()
    assert mask[0].all()
    played_moves = mask & (action >= 0)
    assert legal[played_moves.nonzero() + (action[played_moves],)].all()
    # policy targets: distributions over legal moves
    policy = out.samples.policy
    np.testing.assert_allclose(policy[mask].sum(-1), 1.0, atol=1e-5)
    assert (policy[mask] * ~legal[mask]).sum() == 0
    # replay every game with the rules and compare the final result with z
    step = jax.jit(GAME.step)
    for b in range(B):
        length = int(mask[:, b].sum())
        state = states_at(out, 0, b)
        for t in range(length):
            assert int(action[t, b]) >= 0
            state = step(state, jnp.int32(action[t, b]))
        assert bool(state.terminal), "a game without resignation must be finished"
        sign, _ = GAME.outcome(state)
        black = int(sign) if int(state.color) == BLACK else -int(sign)
        colors = np.asarray(out.samples.state.color)[:length, b]
        want = np.where(colors == BLACK, black, -black)
        np.testing.assert_array_equal(out.outcome[:length, b], want)
    # value target "z" is the outcome; z flips with the side to move
    np.testing.assert_array_equal(out.samples.value[mask], out.outcome[mask])
    assert stats.resign_rate == 0 and stats.truncated_games == 0
    assert stats.positions == mask.sum()
    np.testing.assert_allclose(stats.black_win_rate + stats.white_win_rate + stats.draw_rate, 1.0)


def test_openings_start_the_games():
    out, _, _ = played(NEVER)
    first = out.samples.state
    starts = {int(p) for p in np.asarray(first.ply)[0]}
    assert starts <= {0, 1, 2} and len(starts) >= 2
    after_b1a1, _ = play_transcript("b1a1", GAME)
    rows = np.nonzero(np.asarray(first.ply)[0] == 2)[0]
    for leaf, want in zip(jax.tree.leaves(jax.tree.map(lambda x: x[0, rows], first)), jax.tree.leaves(after_b1a1),
                          strict=False):
        np.testing.assert_array_equal(np.asarray(leaf), np.broadcast_to(np.asarray(want), np.asarray(leaf).shape))
    with pytest.raises(NotationError):
        selfplay.openings_from_transcripts(["a1"], GAME)  # illegal first move


def test_harvested_positions_have_valid_targets():
    out, stats, _ = played(NEVER)
    h = out.harvested
    assert h.mask.shape == out.samples.mask.shape + (2,)
    real = h.mask
    assert real.sum() > out.samples.mask.sum() // 2, "about one extra position per searched position"
    assert stats.harvested == real.sum()
    legal = np.asarray(GAME.legal_moves(h.state))
    assert not np.asarray(h.state.terminal)[real].any()
    np.testing.assert_allclose(h.policy[real].sum(-1), 1.0, atol=1e-5)
    assert (h.policy[real] * ~legal[real]).sum() == 0
    assert (np.abs(h.value[real]) <= 1.0).all()
    # harvested positions lie one or more plies after their root
    root_ply = np.broadcast_to(np.asarray(out.samples.state.ply)[..., None], real.shape)
    assert (np.asarray(h.state.ply)[real] > root_ply[real]).all()
    flat = out.training_samples()
    assert flat.mask.shape == (out.samples.mask.size + h.mask.size,)
    assert flat.mask.sum() == out.samples.mask.sum() + real.sum()


def test_resignation_bookkeeping():
    out, stats, new_resign = played(ALWAYS)
    mask = out.samples.mask
    lengths = mask.sum(0)
    resigned = (out.action[0] == -1)  # threshold above every value: non-playout games resign at once
    assert resigned.any() and (~resigned).any()
    assert (lengths[resigned] == 1).all()
    np.testing.assert_array_equal(out.outcome[0, resigned], -1.0)  # the resigning side loses
    np.testing.assert_allclose(stats.resign_rate, resigned.mean())
    # false positives recomputed from the played-out games' values and results
    colors = np.asarray(out.samples.state.color)
    min_value = np.ones((BATCH, 2), np.float32)
    for c in (0, 1):
        own = mask & (colors == c)
        min_value[:, c] = np.where(own, out.search_value, 1.0).min(0)
    black = np.where(colors[0] == BLACK, out.outcome[0], -out.outcome[0])
    result = np.stack([black, -black], -1)
    playout = ~resigned
    below = (min_value < ALWAYS) & playout[:, None]
    fp = (below & (result >= 0)).sum() / max(below.sum(), 1)
    np.testing.assert_allclose(stats.resign_false_positive_rate, fp, atol=1e-6)
    np.testing.assert_allclose(new_resign.false_positive_rate, fp, atol=1e-6)
    # the threshold moved down (at most max_change) into the allowed range
    assert new_resign.threshold <= main_config().resign.max_threshold


def test_resign_threshold_update_rule():
    c = main_config()
    c.resign.min_triggered = 2
    r = selfplay.ResignSettings.from_config(c.resign)
    state = selfplay.ResignState(jnp.float32(-0.9), jnp.float32(0.0))
    # 10 played-out games; black's lowest value and result: those below -0.8 all lost
    min_value = jnp.asarray([[-0.95, 0.5]] * 5 + [[-0.85, 0.5]] * 5, jnp.float32)
    result = jnp.asarray([[-1.0, 1.0]] * 10, jnp.float32)
    playout = jnp.ones(10, bool)
    up = selfplay.update_resign_state(r, state, min_value, result, playout)
    np.testing.assert_allclose(up.threshold, -0.9 + c.resign.max_change, atol=1e-6)  # safe: more aggressive
    assert up.false_positive_rate == 0
    # now black won every game although its value went below -0.9: far too many false positives
    wrong = selfplay.update_resign_state(r, state, min_value, -result, playout)
    np.testing.assert_allclose(wrong.threshold, -0.9 - c.resign.max_change, atol=1e-6)
    np.testing.assert_allclose(wrong.false_positive_rate, 1.0)
    # no played-out side fell below the threshold: nothing to judge, no change
    low = selfplay.ResignState(jnp.float32(-0.99), jnp.float32(0.0))
    np.testing.assert_allclose(selfplay.update_resign_state(r, low, min_value, -result, playout).threshold, -0.99)
    # bounds hold
    high = selfplay.ResignState(jnp.float32(-0.52), jnp.float32(0.0))
    np.testing.assert_allclose(selfplay.update_resign_state(r, high, min_value, result, playout).threshold,
                               c.resign.max_threshold)
    lowest = jnp.full((10, 2), -0.999, jnp.float32)
    np.testing.assert_allclose(selfplay.update_resign_state(r, low, lowest, -result, playout).threshold,
                               c.resign.min_threshold)


def test_lambda_returns():
    # one game of 4 positions (movers alternate) then padding
    q = jnp.asarray([[0.1], [0.2], [-0.3], [0.4], [0.0]])
    z = jnp.asarray([[1.0], [-1.0], [1.0], [-1.0], [0.0]])
    mask = jnp.asarray([[True], [True], [True], [True], [False]])
    np.testing.assert_allclose(selfplay.lambda_returns(q, z, mask, 1.0), z * mask, atol=1e-6)
    zero = np.asarray(selfplay.lambda_returns(q, z, mask, 0.0))[:, 0]
    np.testing.assert_allclose(zero, [-0.2, 0.3, -0.4, -1.0, 0.0], atol=1e-6)
    half = np.asarray(selfplay.lambda_returns(q, z, mask, 0.5))[:, 0]
    g3 = -1.0
    g2 = -(0.5 * 0.4 + 0.5 * g3)
    g1 = -(0.5 * -0.3 + 0.5 * g2)
    g0 = -(0.5 * 0.2 + 0.5 * g1)
    np.testing.assert_allclose(half, [g0, g1, g2, g3, 0.0], atol=1e-6)
    for kind, want in [("z", z), ("q", q), ("zq", (z + q) / 2)]:
        np.testing.assert_allclose(selfplay.value_targets(kind, q, z, mask, 0.9), want, atol=1e-6)


def negamax(state, step, empties_left: int) -> int:
    """Exact result (+1/0/-1) for the mover by plain search (tiny endgames only)."""
    if bool(state.terminal):
        return int(GAME.outcome(state)[0])
    legal = np.nonzero(np.asarray(GAME.legal_moves(state)))[0]
    return max(-negamax(step(state, jnp.int32(a)), step, empties_left) for a in legal)


def test_puct_lambda_and_exact_endgame_values():
    c = selfplay.default_selfplay_config()
    c.num_games = 8
    c.value_target = "lambda"
    c.td_lambda = 0.9
    c.exact_endgame_empties = 3
    apply_fn, variables = tiny_net(GAME.size)
    fn = jax.jit(lambda v, k, r: play_one_lane(c, search_config("puct"), apply_fn, v, k, r))
    out, stats, resign = jax.tree.map(np.asarray, fn(variables, jax.random.key(3), selfplay.initial_resign_state(c)))
    mask = out.samples.mask
    empties = GAME.num_squares - np.asarray(GAME.observation(out.samples.state)).sum(axis=(-1, -2, -3))
    late = mask & (empties <= 3)
    assert late.sum() >= 8
    step = jax.jit(GAME.step)
    checked = 0
    for t, b in zip(*np.nonzero(late), strict=False):
        want = negamax(states_at(out, t, b), step, 3)
        assert out.samples.value[t, b] == want
        checked += 1
        if checked == 6:
            break
    early = mask & (empties > 3)
    lam = selfplay.lambda_returns(jnp.asarray(out.search_value), jnp.asarray(out.outcome), jnp.asarray(mask), 0.9)
    np.testing.assert_allclose(out.samples.value[early], np.asarray(lam)[early], atol=1e-6)
    # puct targets are visit frequencies over legal moves
    counts = out.samples.policy[mask] * 8
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-4)
    assert float(resign.threshold) == pytest.approx(c.resign.threshold)  # resignation off: unchanged
    assert stats.resign_rate == 0


def test_bad_config_values_fail_with_one_line():
    c = selfplay.default_selfplay_config()
    c.value_target = "td"
    with pytest.raises(ValueError, match="unknown selfplay.value_target 'td'; choose from z, q, zq, lambda"):
        selfplay.check_selfplay_config(c)
    c = selfplay.default_selfplay_config()
    c.resign.playout_fraction = 1.5
    with pytest.raises(ValueError, match="playout_fraction"):
        selfplay.check_selfplay_config(c)
