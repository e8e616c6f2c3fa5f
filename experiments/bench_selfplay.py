"""Search throughput side by side: the project's engine, plain mctx, pgx's AlphaZero setting, the network alone.

For each network and batch size B, the same B root positions (the start position, or
``--plies`` random moves into the game) are searched with the same network and simulations by:

- (a) ``engine``: ``run_search`` with ``search.engine = "lockstep"`` (the project's batched search);
- (b) ``plain mctx``: ``run_search`` with ``search.engine = "mctx"``: mctx's public policy,
  unmodified, over the same othello_jax states; the script asserts that (a) and (b) built equal
  trees (every field) before it prints their ratio;
- (c) ``pgx setting``: pgx's AlphaZero example: pgx Othello states stepped by ``pgx.make("othello")``
  inside plain, unmodified ``mctx.gumbel_muzero_policy`` (always Gumbel, as in the example);
- (d) ``network only``: the network alone, called as often as one search calls it (B x (sims + 1));
- (e) ``uncompacted``: (a) with ``search.compact_levels = False`` (every walk and backup level on
  all B trees; asserted to build the same trees as (a));
- (f) ``no exact endings``: (a) with ``search.exact_endings = False`` (no one-ply look at the moves
  that end the game; different trees wherever such a move exists).

Calls are interleaved, best of ``--repeats``. It prints ms per call, moves/s (B / time), network
evaluations/s (B x (sims + 1) / time), and per setting the lines ``network share: NN%`` (d / a),
``vs plain mctx: N.NNx`` (b / a), ``vs pgx setting: N.NNx`` (c / a), ``vs uncompacted: N.NNx``
(e / a) and ``vs no exact endings: N.NNx`` (f / a: below 1 by what the look-ahead costs), for
scripts to read.
``--selfplay`` also times ``play_games`` (moves/s of whole self-play games). Usage::

    python -m experiments.bench_selfplay [--network tiny small] [--batch 256 2048] [--simulations 32]
        [--variant gumbel] [--plies 0] [--repeats 5] [--tree-updates scatter] [--selfplay]
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from experiments.timing import best_seconds, timed
from othello_jax import search
from othello_jax.game import Othello
from othello_jax.model import PRESETS, NetworkConfig, init_variables, make_network
from othello_jax.training.compiled import selfplay


def network(name: str, size: int, dtype: str) -> tuple[Callable, dict]:
    """A preset network in inference mode and its randomly initialised variables."""
    net = make_network(size, NetworkConfig.preset(name, dtype=dtype))
    return functools.partial(net.apply, train=False), init_variables(net, jax.random.key(0), size)


def network_only(game: Othello, apply_fn, variables, batch: int, calls: int):
    """(d) The network alone, ``calls`` times on B positions (chained so none is skipped)."""
    obs = game.observation(jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init()))

    @jax.jit
    def run(variables, obs):
        def body(_, total):
            logits, value = apply_fn(variables, obs + 0.0 * total[:, None, None, None])
            return total + value + logits[:, 0]

        return jax.lax.fori_loop(0, calls, body, jnp.zeros(obs.shape[0]))

    return run, (variables, obs)


def root_positions(batch: int, plies: int):
    """The same B positions as othello_jax and pgx states: ``plies`` random moves from the start.

    The moves are chosen on pgx's states and replayed on othello_jax's; the boards are checked
    to agree. With ``plies = 0`` every root is the start position.
    """
    import pgx

    game, env = Othello(8), pgx.make("othello")
    ours = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init())
    theirs = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), batch))

    @jax.jit
    def ply(ours, theirs, key):
        noise = jax.random.gumbel(key, theirs.legal_action_mask.shape)
        action = jnp.argmax(jnp.where(theirs.legal_action_mask, noise, -jnp.inf), axis=-1).astype(jnp.int32)
        return game.step(ours, action), jax.vmap(env.step)(theirs, action)

    for key in jax.random.split(jax.random.key(2), plies):
        ours, theirs = ply(ours, theirs, key)
    planes = np.asarray(game.observation(ours))
    board = np.asarray(theirs.observation)  # pgx: (mover, opponent) planes too
    assert np.array_equal(board[..., :2], planes[..., :2]), "pgx and othello_jax positions differ"
    assert not np.asarray(ours.terminal).any(), "use fewer plies: some games ended"
    return ours, theirs


def engine_search(config, game: Othello, apply_fn, variables, states):
    """(a) or (b): ``run_search`` with ``config.engine``; returns (jitted fn, its arguments)."""

    @jax.jit
    def run(variables, states, key):
        return search.run_search(config, apply_fn, variables, states, key, game)

    return run, (variables, states, jax.random.key(1))


def pgx_setting(config, apply_fn, variables, states):
    """(c) pgx's AlphaZero example: pgx states, plain ``mctx.gumbel_muzero_policy``."""
    import pgx

    env = pgx.make("othello")
    step = jax.vmap(env.step)

    def recurrent_fn(variables, key, action, state):
        player = state.current_player
        nxt = step(state, action)
        logits, value = apply_fn(variables, nxt.observation.astype(jnp.float32))
        out = mctx.RecurrentFnOutput(
            reward=nxt.rewards[jnp.arange(action.shape[0]), player],
            discount=jnp.where(nxt.terminated, 0.0, -1.0),
            prior_logits=jnp.where(nxt.legal_action_mask, logits, jnp.finfo(logits.dtype).min),
            value=jnp.where(nxt.terminated, 0.0, value),
        )
        return out, nxt

    @jax.jit
    def run(variables, states, key):
        logits, value = apply_fn(variables, states.observation.astype(jnp.float32))
        legal = states.legal_action_mask
        root = mctx.RootFnOutput(prior_logits=jnp.where(legal, logits, jnp.finfo(logits.dtype).min), value=value,
                                 embedding=states)
        out = mctx.gumbel_muzero_policy(variables, key, root, recurrent_fn, num_simulations=int(config.num_simulations),
                                        invalid_actions=~legal, qtransform=mctx.qtransform_completed_by_mix_value,
                                        gumbel_scale=1.0)
        return out.action, out.action_weights

    return run, (variables, states, jax.random.key(1))


def assert_same_trees(a: search.SearchResult, b: search.SearchResult, other: str = "plain mctx") -> None:
    """Every field of two search results (the whole tree included) is equal."""
    paths = jax.tree_util.tree_flatten_with_path(a)[0]
    for (path, x), y in zip(paths, jax.tree.leaves(b), strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True), \
            f"engine and {other} built different trees: {jax.tree_util.keystr(path)}"


def bench_search(args, net: str, batch: int) -> dict[str, float]:
    """One setting: rows (a)-(d), then the ratio lines."""
    game = Othello(8)
    config = search.default_search_config()
    config.variant = args.variant
    config.num_simulations = args.simulations
    config.tree_updates = args.tree_updates
    config.exact_endings = True  # as the players search
    plain = config.copy_and_resolve_references()
    plain.engine = "mctx"
    uncompacted = config.copy_and_resolve_references()
    uncompacted.compact_levels = False
    no_endings = config.copy_and_resolve_references()
    no_endings.exact_endings = False
    apply_fn, variables = network(net, 8, args.dtype)
    our_roots, pgx_roots = root_positions(batch, args.plies)

    calls = {
        "(a) engine": engine_search(config, game, apply_fn, variables, our_roots),
        "(b) plain mctx": engine_search(plain, game, apply_fn, variables, our_roots),
        "(c) pgx setting": pgx_setting(config, apply_fn, variables, pgx_roots),
        "(d) network only": network_only(game, apply_fn, variables, batch, args.simulations + 1),
        "(e) uncompacted": engine_search(uncompacted, game, apply_fn, variables, our_roots),
        "(f) no exact endings": engine_search(no_endings, game, apply_fn, variables, our_roots),
    }
    ours = calls["(a) engine"][0](*calls["(a) engine"][1])
    for other in ("(b) plain mctx", "(e) uncompacted"):
        assert_same_trees(ours, calls[other][0](*calls[other][1]), other)
    seconds = best_seconds(calls, args.repeats)

    blocks, channels = PRESETS[net]
    print(f"\nsearch: network {net} {blocks}x{channels} ({args.dtype}), B={batch}, {args.simulations} simulations, "
          f"{args.variant} (pgx setting: gumbel), tree updates {args.tree_updates}, "
          f"{f'roots {args.plies} random plies in' if args.plies else 'roots at the start position'}, "
          f"best of {args.repeats}, {jax.devices()[0].platform}")
    print(f"  {'setting':<21} {'ms/call':>9} {'moves/s':>10} {'net evals/s':>12}")
    evals = batch * (args.simulations + 1)
    for name, wall in seconds.items():
        moves = f"{batch / wall:10.0f}" if "network" not in name else f"{'-':>10}"
        print(f"  {name:<21} {1e3 * wall:9.1f} {moves} {evals / wall:12.0f}")
    engine = seconds["(a) engine"]
    print("  (a), (b) and (e) built equal trees (every field)")
    print(f"network share: {100 * seconds['(d) network only'] / engine:.0f}%")
    print(f"vs plain mctx: {seconds['(b) plain mctx'] / engine:.2f}x")
    print(f"vs pgx setting: {seconds['(c) pgx setting'] / engine:.2f}x")
    print(f"vs uncompacted: {seconds['(e) uncompacted'] / engine:.2f}x")
    print(f"vs no exact endings: {seconds['(f) no exact endings'] / engine:.2f}x")
    return seconds


def bench_selfplay(args, net: str, batch: int) -> None:
    """Whole self-play games with the engine: moves/s and network evaluations/s."""
    game = Othello(8)
    search_config = search.default_search_config()
    search_config.variant = args.variant
    search_config.num_simulations = args.simulations
    search_config.tree_updates = args.tree_updates
    config = selfplay.default_selfplay_config()
    config.num_games = batch
    apply_fn, variables = network(net, 8, args.dtype)
    settings = selfplay.SelfPlaySettings.from_config(config)
    play = jax.jit(functools.partial(selfplay.play_games, settings, search.SearchSettings.from_config(search_config),
                                     game, apply_fn))
    resign = selfplay.lane_resign_states(settings, 1)  # one lane of B games
    _, first_call = timed(play, variables, jax.random.key(0)[None], resign)
    compile_s = first_call.wall
    best = float("inf")
    for r in range(max(1, args.repeats // 2)):
        (_, stats, _), watch = timed(play, variables, jax.random.key(r + 1)[None], resign)
        best = min(best, watch.wall)
    moves = float(stats.positions[0])
    print(f"\nself-play: network {net}, B={batch} games, {args.simulations} simulations, {args.variant}: "
          f"{best:.2f} s per call (first call with compile {compile_s:.1f} s)")
    print(f"  {moves / best:,.0f} moves/s, {moves * (args.simulations + 1) / best:,.0f} network evaluations/s, "
          f"mean game length {float(stats.game_length[0]):.1f} plies")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_selfplay", description=__doc__.split("\n")[0])
    parser.add_argument("--network", nargs="+", default=["tiny", "small"], help=f"presets: {', '.join(PRESETS)}")
    parser.add_argument("--batch", type=int, nargs="+", default=[256, 2048])
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--variant", default="gumbel")
    parser.add_argument("--tree-updates", default="scatter", choices=list(search.TREE_UPDATES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--plies", type=int, default=0,
                        help="search positions this many random plies into a game (0 = the start position)")
    parser.add_argument("--selfplay", action="store_true", help="also time play_games")
    args = parser.parse_args(argv)
    if args.variant not in search.VARIANTS:
        print(f"bench_selfplay: unknown variant {args.variant!r}; choose from {', '.join(sorted(search.VARIANTS))}",
              file=sys.stderr)
        return 2
    unknown = [n for n in args.network if n not in PRESETS]
    if unknown:
        print(f"bench_selfplay: unknown network {unknown[0]!r}; choose from {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    if min(args.batch) < 1 or args.simulations < 1 or args.repeats < 1 or not 0 <= args.plies <= 40:
        print("bench_selfplay: --batch, --simulations, --repeats must be >= 1 and --plies in 0..40", file=sys.stderr)
        return 2
    for net in args.network:
        for batch in args.batch:
            bench_search(args, net, batch)
            if args.selfplay:
                bench_selfplay(args, net, batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
