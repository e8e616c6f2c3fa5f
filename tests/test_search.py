"""Search over real Othello states: masks at every depth, value signs, terminals, targets.

(That the lockstep engine builds the trees of mctx's public policies: test_search_engine.py.)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import search
from othello_jax.game import Othello, State
from othello_jax.game.fusion import step_materialized
from tests.conftest import tiny_net

VARIANTS = sorted(search.VARIANTS)


def take(states: State, index) -> State:
    return jax.tree.map(lambda x: x[np.asarray(index)], states)


@functools.cache
def random_positions(size: int, games: int = 64, seed: int = 0) -> State:
    """Every position of ``games`` uniformly random games, flattened ([games * plies])."""
    game = Othello(size)

    @jax.jit
    def play(key):
        def ply(state, key):
            logits = jnp.where(game.legal_moves(state), 0.0, -1e9)
            action = jax.random.categorical(key, logits).astype(jnp.int32)
            return game.step(state, action), state

        start = jax.tree.map(lambda x: jnp.broadcast_to(x, (games,) + x.shape), game.init())
        _, states = jax.lax.scan(ply, start, jax.random.split(key, game.num_squares + 8))
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), states)

    return play(jax.random.key(seed))


def pick_positions(game: Othello, states: State, count: int, want_pass: bool) -> State:
    """A spread of non-terminal positions; with ``want_pass`` about half must pass."""
    legal = np.asarray(game.legal_moves(states))
    alive = ~np.asarray(states.terminal)
    passing = np.nonzero(alive & legal[:, game.pass_action])[0]
    others = np.nonzero(alive & ~legal[:, game.pass_action])[0]
    chosen = list(passing[: count // 2]) if want_pass else []
    if want_pass:
        assert len(chosen) >= 2, "random games should contain forced passes"
    rest = np.linspace(0, len(others) - 1, count - len(chosen)).astype(int)
    return take(states, np.concatenate([np.asarray(chosen, int), others[rest]]))


BATCH = 32  # every search in this file runs on 32 roots, so compiled searches are shared
SIMS = 16


def config(variant: str, sims: int = SIMS, **overrides):
    c = search.default_search_config()
    c.variant = variant
    c.num_simulations = sims
    c.update(overrides)
    return c


def deterministic(variant: str):
    """No root noise: results depend only on the network."""
    return config(variant, gumbel_scale=0.0, dirichlet_fraction=0.0)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _search(config_items, game, apply_fn, variables, states, key):
    c = search.default_search_config()
    c.update(dict(config_items))
    return search.run_search(c, apply_fn, variables, states, key, game)


def run(c, game, states, key=0, variables=None):
    """Search ``states`` (at most BATCH, padded by repetition) with the tiny random network."""
    apply_fn, random_variables = tiny_net(game.size)
    count = len(np.asarray(states.ply))
    assert count <= BATCH
    padded = take(states, np.arange(BATCH) % count)
    result = _search(tuple(sorted(c.items())), game, apply_fn, variables or random_variables, padded,
                     jax.random.key(key))
    return jax.tree.map(lambda x: x[:count], result)


def uninformed(size: int) -> dict:
    """The tiny network with its output layers zeroed: uniform priors and value 0 everywhere."""
    _, variables = tiny_net(size)
    heads = ("Dense_0", "Dense_2")  # policy logits, value output
    return jax.tree_util.tree_map_with_path(
        lambda path, x: jnp.zeros_like(x) if any(h in jax.tree_util.keystr(path) for h in heads) else x, variables)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_masks_respected_at_every_depth(variant):
    """Every edge of every tree is legal in its parent's position, passes included."""
    game = Othello(6)
    states = pick_positions(game, random_positions(6), BATCH, want_pass=True)
    result = run(config(variant), game, states)
    tree = result.tree
    parents = np.asarray(tree.parents)
    actions = np.asarray(tree.action_from_parent)
    visits = np.asarray(tree.node_visits)
    node_states = tree.embeddings
    node_legal = np.asarray(game.legal_moves(node_states))  # [B, N, A]
    node_terminal = np.asarray(node_states.terminal)
    b, n = np.nonzero((parents >= 0) & (visits > 0))
    assert len(b) > 10 * len(parents)  # deep trees, not just root children
    p = parents[b, n]
    from_terminal = node_terminal[b, p]
    edge_legal = node_legal[b, p, actions[b, n]]
    assert edge_legal[~from_terminal].all()
    # child visit counts only on legal actions of non-terminal nodes
    counts = np.asarray(tree.children_visits)
    live = ~node_terminal & (visits > 0)
    assert (counts[live] * ~node_legal[live]).sum() == 0
    # the pass action was expanded somewhere (positions with forced passes)
    assert (actions[b, n] == game.pass_action).any()
    # root outputs
    legal = np.asarray(result.legal)
    action = np.asarray(result.action)
    assert legal[np.arange(len(action)), action].all()
    target = np.asarray(result.policy_target)
    np.testing.assert_allclose(target.sum(-1), 1.0, atol=1e-5)
    assert (target[~legal] == 0).all()


@functools.partial(jax.jit, static_argnums=0)
def step_every_action(game: Othello, states: State) -> tuple[jax.Array, jax.Array]:
    """Each position ([P]) stepped with every action, legal or not ([P, A]): whether the game is
    over after it, and the result for the player who moved (+1 won / -1 lost / 0 drawn or not over)."""
    expand = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], game.num_actions) + x.shape[1:])
    actions = jnp.broadcast_to(jnp.arange(game.num_actions, dtype=jnp.int32), states.ply.shape + (game.num_actions,))
    children = game.step(jax.tree.map(expand, states), actions)
    sign, _ = game.outcome(children)  # the opponent's view
    return children.terminal, jnp.where(children.terminal, -sign, 0)


def immediate_endings(game: Othello, states: State, kind: int):
    """Positions where exactly one legal move ends the game as ``kind`` (+1 win, -1 loss) for
    the mover and some other move does not; returns (indices, that move)."""
    legal = np.asarray(game.legal_moves(states))
    ending = np.asarray(step_every_action(game, states)[1]) * legal
    hits = (ending == kind).sum(-1)
    index = np.nonzero((hits == 1) & (legal.sum(-1) >= 2))[0]
    return index, (ending[index] == kind).argmax(-1)


@pytest.mark.parametrize("variant,network", [("gumbel", "random"), ("gumbel", "uninformed"), ("puct", "uninformed")])
def test_won_in_one_is_found_with_random_network(variant, network):
    """Two-player signs: a move that wins at once has q = +1 and is chosen.

    (PUCT rates unvisited moves at the worst sibling value, so with random priors and values it
    may never try a low-prior winning move; an uninformed network makes it try every move.)
    """
    game = Othello(4)
    states = random_positions(4, games=256, seed=1)
    index, wins = immediate_endings(game, states, +1)
    assert len(index) >= 8
    index, wins = index[:BATCH], wins[:BATCH]
    variables = uninformed(4) if network == "uninformed" else None
    result = run(deterministic(variant), game, take(states, index), variables=variables)
    q = np.asarray(result.q)
    rows = np.arange(len(index))
    np.testing.assert_allclose(q[rows, wins], 1.0)
    action = np.asarray(result.action)
    if network == "uninformed":
        # the chosen move is that win, or another move the search proved won (q = +1 on every line)
        np.testing.assert_allclose(q[rows, action], 1.0)
    else:
        # Gumbel weighs q against random prior logits: the win is chosen nearly always
        assert (q[rows, action] == 1.0).mean() >= 0.8
    assert (np.asarray(result.root_value) > 0).all()


def test_moves_into_lost_endings_have_q_minus_one():
    """Positions where every legal move ends the game lost: q = -1, root value near -1."""
    game = Othello(4)
    states = random_positions(4, games=256, seed=2)
    legal = np.asarray(game.legal_moves(states))
    ending = np.asarray(step_every_action(game, states)[1])
    index = np.nonzero(legal.any(-1) & ((ending == -1) | ~legal).all(-1))[0][:BATCH]
    assert len(index) >= 4
    result = run(deterministic("gumbel"), game, take(states, index))
    visited = np.asarray(result.visit_counts) > 0
    np.testing.assert_allclose(np.asarray(result.q)[visited], -1.0)
    assert (np.asarray(result.root_value) < -0.8).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_terminal_positions_in_and_at_the_root(variant):
    """Near the end the tree reaches game-over nodes; finished roots give no NaN."""
    game = Othello(4)
    states = random_positions(4, games=64, seed=3)
    empties = game.num_squares - np.asarray(game.observation(states)).sum(axis=(1, 2, 3))
    late = np.nonzero(~np.asarray(states.terminal) & (empties <= 3))[0][:24]
    over = np.nonzero(np.asarray(states.terminal))[0][:8]
    roots = take(states, np.concatenate([late, over]))
    result = run(deterministic(variant), game, roots)
    tree = result.tree
    node_terminal = np.asarray(tree.embeddings.terminal)
    visited = np.asarray(tree.node_visits) > 0
    assert (node_terminal & visited)[: len(late), 1:].any()
    # a terminal node keeps raw value 0; the edge into it carries the final result
    raw = np.asarray(tree.raw_values)
    assert (raw[node_terminal & visited] == 0).all()
    for name in ("root_value", "q", "policy_target"):
        assert np.isfinite(np.asarray(getattr(result, name))).all(), name
    # exact values: every root child's q equals the solved result when the child ends the game
    b, n = np.nonzero((node_terminal & visited & (np.asarray(tree.parents) == 0))[: len(late)])
    sign, _ = game.outcome(take(jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), tree.embeddings),
                                b * node_terminal.shape[1] + n))
    q = np.asarray(result.q)[b, np.asarray(tree.action_from_parent)[b, n]]
    np.testing.assert_allclose(q, -np.asarray(sign))
    assert (np.asarray(result.policy_target)[len(late):] == 0).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_select_action_temperature(variant):
    game = Othello(6)
    states = pick_positions(game, random_positions(6), BATCH, want_pass=False)
    result = run(config(variant), game, states)
    greedy = search.select_action(result, 0.0, jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(greedy), np.asarray(result.action))
    keys = jax.random.split(jax.random.key(1), 2000)
    draws = np.asarray(jax.vmap(lambda k: search.select_action(result, 1.0, k))(keys))  # [2000, B]
    legal = np.asarray(result.legal)
    assert legal[np.arange(draws.shape[1])[None, :], draws].all()
    freq = np.stack([np.bincount(draws[:, i], minlength=game.num_actions) for i in range(draws.shape[1])]) / 2000
    np.testing.assert_allclose(freq, np.asarray(result.policy_target), atol=0.06)  # ~5 sigma


def test_variant_is_one_config_value_and_bad_names_fail_cleanly():
    game = Othello(4)
    states = pick_positions(game, random_positions(4), 8, want_pass=False)
    gumbel = run(deterministic("gumbel"), game, states)
    puct = run(deterministic("puct"), game, states)
    # gumbel targets are a softmax of logits + q (dense); puct targets are visit counts / SIMS
    counts = np.asarray(puct.policy_target) * SIMS
    assert np.allclose(counts, np.round(counts), atol=1e-4)
    counts = np.asarray(gumbel.policy_target) * SIMS
    assert not np.allclose(counts, np.round(counts), atol=1e-4)
    with pytest.raises(ValueError, match="unknown search variant 'alphabeta'; choose from gumbel, puct"):
        search.check_search_config(config("alphabeta", 8))
    with pytest.raises(ValueError, match="num_simulations"):
        search.check_search_config(config("gumbel", 0))


def test_dirichlet_noise_per_root_alpha():
    noise_fn = jax.jit(search.dirichlet_noise, static_argnums=2)
    legal = jnp.asarray(np.arange(65)[None, :] < np.array([[2], [20], [40]]))
    noise = np.asarray(noise_fn(jax.random.key(0), legal, 10.0))
    np.testing.assert_allclose(noise.sum(-1), 1.0, atol=1e-5)
    assert (noise[~np.asarray(legal)] == 0).all()
    # small alpha (many legal moves) concentrates the noise: the largest share grows
    many = np.asarray(noise_fn(jax.random.key(1), jnp.ones((2000, 65), bool), 10.0))
    few = np.asarray(noise_fn(jax.random.key(1), jnp.asarray(np.arange(65) < 10)[None].repeat(2000, 0), 10.0))
    assert many.max(-1).mean() > 3 * (1 / 65)  # alpha = 10/65: spiky
    assert few.max(-1).mean() < 0.35  # alpha = 1 over 10 moves: flat-ish


def test_symmetry_maps_the_policy_back():
    """An equivariant 'network' gives the same priors with and without random symmetries."""
    game = Othello(6)
    states = pick_positions(game, random_positions(6), 16, want_pass=False)

    def equivariant(variables, obs):
        flat = obs[..., 0].reshape(obs.shape[0], -1) * 3.0 + obs[..., 1].reshape(obs.shape[0], -1)
        return jnp.concatenate([flat, jnp.zeros_like(flat[:, :1])], -1), jnp.zeros(obs.shape[0])

    evaluate = jax.jit(search.evaluate, static_argnums=(0, 3))
    plain, _ = evaluate(equivariant, {}, states, game)
    for seed in range(3):
        sym, _ = evaluate(equivariant, {}, states, game, jax.random.key(seed))
        np.testing.assert_allclose(np.asarray(sym), np.asarray(plain))

    def ramp(variables, obs):
        return jnp.broadcast_to(jnp.arange(37.0), (obs.shape[0], 37)), jnp.zeros(obs.shape[0])

    sym, _ = evaluate(ramp, {}, states, game, jax.random.key(0))
    plain, _ = evaluate(ramp, {}, states, game)
    assert not np.allclose(np.asarray(sym), np.asarray(plain))  # orientations really vary


def test_step_materialized_matches_step_also_under_vmap():
    game = Othello(6)
    states = take(random_positions(6), np.arange(0, 512, 7))
    legal = np.asarray(game.legal_moves(states))
    action = jnp.asarray(np.where(legal.any(-1), legal.argmax(-1), 0), jnp.int32)
    want = jax.jit(game.step)(states, action)
    got = jax.jit(functools.partial(step_materialized, game))(states, action)
    for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=False):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    split = jax.tree.map(lambda x: x.reshape((2, -1) + x.shape[1:]), (states, action))
    got = jax.jit(jax.vmap(functools.partial(step_materialized, game)))(*split)
    for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=False):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b).reshape(np.asarray(a).shape))
    all_over = jax.tree.map(lambda x: x, states)._replace(terminal=jnp.ones_like(states.terminal))
    same = jax.jit(functools.partial(step_materialized, game))(all_over, action)
    for a, b in zip(jax.tree.leaves(all_over), jax.tree.leaves(same), strict=False):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_both_variants_at_batch_2048_with_32_simulations(variant):
    game = Othello(8)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (2048,) + x.shape), game.init())
    apply_fn, variables = tiny_net(8)
    result = _search(tuple(sorted(config(variant, 32).items())), game, apply_fn, variables, states, jax.random.key(0))
    legal = np.asarray(result.legal)
    action = np.asarray(result.action)
    assert legal[np.arange(2048), action].all()
    np.testing.assert_allclose(np.asarray(result.policy_target).sum(-1), 1.0, atol=1e-5)
    assert (np.asarray(result.visit_counts).sum(-1) == 32).all()
