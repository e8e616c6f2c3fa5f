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


def reachable(game: Othello, plies: int) -> dict[int, set[bytes]]:
    """Every position reachable from the start in exactly ``d`` plies, by brute force (d <= plies)."""
    step = jax.jit(game.step)
    key = lambda s: b"".join(np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(s))
    level, found = [game.init()], {0: {key(game.init())}}
    for depth in range(1, plies + 1):
        level = [step(s, jnp.int32(a)) for s in level for a in np.flatnonzero(np.asarray(game.legal_moves(s)))]
        found[depth] = {key(s) for s in level}
    return found


def test_random_plies_start_each_game_after_its_own_number_of_random_moves():
    """``selfplay.random_plies=R``: every game's first recorded position is one the rules reach
    in exactly its ply count of moves, k in 0..R per game, both ends and the middle drawn; the
    games are recorded from there as usual (legal, outcomes replayed in the first test)."""
    most, games = 3, 256
    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (games,) + x.shape), GAME.init())
    after = jax.tree.map(np.asarray, jax.jit(lambda k: selfplay.random_prefix(GAME, start, most, k))(jax.random.key(5)))
    found = reachable(GAME, most)
    key = lambda b: b"".join(np.asarray(leaf[b]).tobytes() for leaf in jax.tree.leaves(after))
    plies = after.ply
    assert set(plies.tolist()) == set(range(most + 1))
    assert all(key(b) in found[int(plies[b])] for b in range(games))
    assert len({key(b) for b in range(games) if plies[b] == most}) > len(found[1])  # varied, not one line
    # in self-play: the first recorded position of every game is after its random moves
    config = main_config()
    config.update(random_plies=most, harvest=dict(per_tree=0), resign=dict(enabled=False))
    apply_fn, variables = tiny_net(GAME.size)
    out, stats, _ = jax.device_get(jax.jit(lambda k: play_one_lane(
        config, search_config(), apply_fn, variables, k, selfplay.initial_resign_state(
            selfplay.SelfPlaySettings.from_config(config))))(jax.random.key(1)))
    first = jax.tree.map(lambda x: x[0], out.samples.state)
    assert set(np.asarray(first.ply).tolist()) == set(range(most + 1))
    keys = [b"".join(np.asarray(leaf[b]).tobytes() for leaf in jax.tree.leaves(first)) for b in range(BATCH)]
    assert all(k in found[int(first.ply[b])] for b, k in enumerate(keys))
    assert out.samples.mask[0].all() and stats.positions == out.samples.mask.sum()


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


def _most_flips(state) -> set[int]:
    """The placements flipping the most discs, counted by playing each legal move with the rules."""
    legal = np.flatnonzero(np.asarray(GAME.legal_moves(state))[: GAME.num_squares])
    if not len(legal):
        return {GAME.pass_action}
    before = np.asarray(GAME.observation(state))[..., 1].sum()
    flips = {int(a): before - np.asarray(GAME.observation(GAME.step(state, jnp.int32(a))))[..., 0].sum()
             for a in legal}
    return {a for a, n in flips.items() if n == max(flips.values())}


def test_games_against_a_fixed_opponent():
    """``selfplay.opponent_share``: each lane's first games meet the opponent, as black and as white
    alike; on its turns every move is greedy's (most flips, counted with the rules); the other games
    are the ones self-play plays without it; those games never resign; the stats score the network."""
    apply_fn, variables = tiny_net(GAME.size)
    base = main_config()
    base.update(harvest=dict(per_tree=0), resign=dict(enabled=False))
    league = main_config()
    league.update(harvest=dict(per_tree=0), resign=dict(enabled=False), opponent_share=0.5, opponent="greedy")
    settings = selfplay.SelfPlaySettings.from_config(league)
    run = lambda c, threshold=NEVER: jax.device_get(jax.jit(lambda k: play_one_lane(
        c, search_config(), apply_fn, variables, k, selfplay.ResignState(jnp.float32(threshold), jnp.float32(0))))(
        jax.random.key(3)))
    (alone, _, _), (out, stats, _) = run(base), run(league)
    seats = np.asarray(selfplay.opponent_seats(settings, 1))
    games = settings.opponent_games()
    assert games == BATCH // 2 and (seats[:games] >= 0).all() and (seats[games:] == -1).all()
    assert (seats == BLACK).sum() == (seats == 1 - BLACK).sum() == games // 2
    # the opponent's turns: greedy's moves, in every league game
    colors, mask = np.asarray(out.samples.state.color), out.samples.mask
    theirs = mask & (colors == seats[None]) & (seats[None] >= 0)
    assert theirs.sum() > games * 2
    for t, b in zip(*theirs.nonzero(), strict=True):
        assert int(out.action[t, b]) in _most_flips(states_at(out, t, b)), (t, b)
    # the network's turns still follow its search: not all greedy
    ours = mask & (colors != seats[None]) & (seats[None] >= 0)
    assert any(int(out.action[t, b]) not in _most_flips(states_at(out, t, b))
               for t, b in zip(*ours.nonzero(), strict=True))
    # self-play games are untouched
    np.testing.assert_array_equal(out.action[:, games:], alone.action[:, games:])
    np.testing.assert_allclose(out.samples.value[:, games:], alone.samples.value[:, games:], atol=1e-5)
    # the network's score over the league games, from its outcomes
    first = out.outcome[0, :games]  # result of the first mover of each game
    first_color = colors[0, :games]
    net_result = np.where(first_color == seats[:games], -first, first)
    assert stats.opponent_games == games
    np.testing.assert_allclose(stats.opponent_score, ((net_result + 1) / 2).mean(), atol=1e-6)
    assert run(base)[1].opponent_games == 0
    # with resignation at a threshold above every value: only self-play games resign
    league.resign.enabled, league.resign.playout_fraction = True, 0.0
    out, stats, _ = run(league, ALWAYS)
    resigned = out.action[0] == -1
    assert not resigned[:games].any() and resigned[games:].all()


def test_bad_config_values_fail_with_one_line():
    c = selfplay.default_selfplay_config()
    c.value_target = "td"
    with pytest.raises(ValueError, match="unknown selfplay.value_target 'td'; choose from z, q, zq, lambda"):
        selfplay.check_selfplay_config(c)
    c = selfplay.default_selfplay_config()
    c.random_plies = -1
    with pytest.raises(ValueError, match="selfplay.random_plies must be >= 0"):
        selfplay.check_selfplay_config(c)
    for opponent in ("net:ckpt=runs/x", "greedy:solve=6", "alphabeta:depth=x"):
        c = selfplay.default_selfplay_config()
        c.update(opponent_share=0.25, opponent=opponent)
        with pytest.raises(ValueError, match="^selfplay.opponent") as error:
            selfplay.check_selfplay_config(c)
        assert "\n" not in str(error.value)
    c = selfplay.default_selfplay_config()
    c.opponent_share = 1.5
    with pytest.raises(ValueError, match="selfplay.opponent_share must be in"):
        selfplay.check_selfplay_config(c)
    c = selfplay.default_selfplay_config()
    c.resign.playout_fraction = 1.5
    with pytest.raises(ValueError, match="playout_fraction"):
        selfplay.check_selfplay_config(c)
