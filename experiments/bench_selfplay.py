"""Search and self-play throughput: othello_jax states vs pgx states inside the same mctx search.

For each batch size B the same search (variant, simulations, network, root positions: the start
position, or ``--plies`` random moves into the game) runs with four embeddings, interleaved and
best-of-``repeats``:

- ``othello_jax``: our bitboard State and rules (``othello_jax.search.run_search``);
- ``pgx``: pgx's Othello State stepped by ``pgx.make("othello").step``;
- ``floor/replay``: a do-nothing embedding (the node index) that replays the othello_jax trees
  exactly (recorded priors, values, rewards; the network still runs on a dummy input). Same
  trees, no game: what mctx and the network cost by themselves;
- ``floor/noop``: a do-nothing embedding whose trees are whatever the network's priors give;
- ``network only``: the network evaluated as often as in one search, nothing else;
- ``othello_jax*`` (with ``--embeddings ...,other-backup``): our states with the other backup
  implementation (mctx's own backward instead of ``search.batched_backward``, or vice versa);
- ``ours/plain mctx`` (with ``--embeddings ...,plain-mctx``): our states with mctx's own
  backward and tree walk (``search.batched_backward`` and ``search.batched_simulate`` off).

Every embedding uses the same mctx internals (by default othello_jax's faster backup and tree
walk, which build the same trees as mctx's own).

It prints ms per search call, moves/s (B / time), network evaluations/s (B * (sims + 1) / time),
tree depths, and the ratio pgx / othello_jax. ``--selfplay`` also times ``play_games``. Usage::

    python -m experiments.bench_selfplay [--batch 256 2048] [--simulations 32] [--network tiny]
        [--variant gumbel] [--plies 0] [--repeats 5] [--selfplay]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from othello_jax import search
from othello_jax.game import Othello
from othello_jax.model import PRESETS, NetworkConfig, init_variables, make_network
from othello_jax.training import selfplay


# ---------------------------------------------------------------------------------------------
# networks
# ---------------------------------------------------------------------------------------------
def trivial_network(size: int) -> tuple[Callable, dict]:
    """A single linear layer: almost free, so the search and the game dominate."""
    area = size * size
    w = jax.random.normal(jax.random.key(0), (2 * area, area + 2)) * 0.1

    def apply_fn(variables, obs):
        out = obs.reshape(obs.shape[0], -1) @ variables["w"]
        return out[:, : area + 1], jnp.tanh(out[:, area + 1])

    return apply_fn, {"w": w}


def network(name: str, size: int, dtype: str) -> tuple[Callable, dict]:
    if name == "trivial":
        return trivial_network(size)
    net = make_network(size, NetworkConfig.preset(name, dtype=dtype))
    return functools.partial(net.apply, train=False), init_variables(net, jax.random.key(0), size)


# ---------------------------------------------------------------------------------------------
# the same search over different embeddings; each returns (jitted fn, its arguments)
# ---------------------------------------------------------------------------------------------
def mctx_search(config, variables, key, root, recurrent_fn, invalid):
    """The configured variant with the same mctx internals (backup, tree walk) as ``run_search`` uses."""
    with search.faster_mctx(config):
        return search.VARIANTS[config.variant](config, variables, key, root, recurrent_fn, invalid)


def network_only(game: Othello, apply_fn, variables, batch: int, calls: int):
    """The network alone, as often as one search calls it (a lower bound for every embedding)."""
    obs = game.observation(jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init()))

    @jax.jit
    def run(variables, obs):
        def body(_, total):
            logits, value = apply_fn(variables, obs + 0.0 * total[:, None, None, None])
            return total + value + logits[:, 0]

        return jax.lax.fori_loop(0, calls, body, jnp.zeros(obs.shape[0]))

    return run, (variables, obs)


def root_positions(batch: int, plies: int):
    """The same B positions for both engines: ``plies`` uniformly random moves from the start.

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
    mover, opponent = game.observation(ours)[..., 0], game.observation(ours)[..., 1]
    board = np.asarray(theirs.observation)  # pgx: (mover, opponent) planes too
    assert np.array_equal(board[..., 0], np.asarray(mover)) and np.array_equal(board[..., 1], np.asarray(opponent))
    assert not np.asarray(ours.terminal).any(), "use fewer plies: some games ended"
    return ours, theirs


def othello_jax_search(config, game: Othello, apply_fn, variables, states):

    @jax.jit
    def run(variables, states, key):
        result = search.run_search(config, apply_fn, variables, states, key, game)
        t = result.tree
        record = (t.children_index, t.children_prior_logits, t.raw_values, t.children_rewards, t.children_discounts)
        return result.action, t.parents, record

    return run, (variables, states, jax.random.key(1))


def pgx_search(config, apply_fn, variables, states):
    import pgx

    env = pgx.make("othello")
    step = jax.vmap(env.step)

    def recurrent_fn(variables, key, action, state):
        player = state.current_player
        nxt = step(state, action)
        logits, value = apply_fn(variables, nxt.observation.astype(jnp.float32))
        terminal = nxt.terminated
        out = mctx.RecurrentFnOutput(
            reward=nxt.rewards[jnp.arange(action.shape[0]), player],
            discount=jnp.where(terminal, 0.0, -1.0),
            prior_logits=search.mask_logits(logits, nxt.legal_action_mask),
            value=jnp.where(terminal, 0.0, value),
        )
        return out, nxt

    @jax.jit
    def run(variables, states, key):
        eval_key, search_key = jax.random.split(key)  # same key use as run_search
        logits, value = apply_fn(variables, states.observation.astype(jnp.float32))
        legal = states.legal_action_mask
        root = mctx.RootFnOutput(prior_logits=search.mask_logits(logits, legal), value=value, embedding=states)
        out = mctx_search(config, variables, search_key, root, recurrent_fn, ~legal)
        return out.action, out.tree.parents

    return run, (variables, states, jax.random.key(1))


def replay_floor_search(config, game: Othello, apply_fn, variables, batch: int, record):
    """Do-nothing embedding (node index) replaying recorded trees: same shapes, no game."""
    children, priors, raw_values, rewards, discounts = record
    rows = jnp.arange(batch)
    dummy = jnp.zeros((batch, game.size, game.size, 2), jnp.float32)

    def recurrent_fn(variables, key, action, node):
        child = children[rows, node, action]
        logits, value = apply_fn(variables, dummy + node[:, None, None, None].astype(jnp.float32))
        out = mctx.RecurrentFnOutput(
            reward=rewards[rows, node, action],
            discount=discounts[rows, node, action],
            prior_logits=priors[rows, child] + 0.0 * logits,  # keep the network's cost
            value=raw_values[rows, child] + 0.0 * value,
        )
        return out, child

    @jax.jit
    def run(variables, node, key):
        eval_key, search_key = jax.random.split(key)
        logits, value = apply_fn(variables, dummy)
        root = mctx.RootFnOutput(prior_logits=priors[:, 0] + 0.0 * logits, value=raw_values[:, 0] + 0.0 * value,
                                 embedding=node)
        invalid = priors[:, 0] <= jnp.finfo(jnp.float32).min
        out = mctx_search(config, variables, search_key, root, recurrent_fn, invalid)
        return out.action, out.tree.parents

    return run, (variables, jnp.zeros((batch,), jnp.int32), jax.random.key(1))


def noop_floor_search(config, game: Othello, apply_fn, variables, batch: int):
    """Do-nothing embedding: every node is the start position; trees follow the priors."""
    obs = game.observation(jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init()))

    def recurrent_fn(variables, key, action, node):
        logits, value = apply_fn(variables, obs + 0.0 * node[:, None, None, None])
        out = mctx.RecurrentFnOutput(reward=jnp.zeros_like(value), discount=-jnp.ones_like(value),
                                     prior_logits=logits, value=value)
        return out, node

    @jax.jit
    def run(variables, node, key):
        eval_key, search_key = jax.random.split(key)
        logits, value = apply_fn(variables, obs)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=node)
        out = mctx_search(config, variables, search_key, root, recurrent_fn, jnp.zeros_like(logits, bool))
        return out.action, out.tree.parents

    return run, (variables, jnp.zeros((batch,), jnp.float32), jax.random.key(1))


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------
def depths(parents: np.ndarray) -> tuple[float, int]:
    """Mean over the batch of each tree's depth, and the deepest tree."""
    parents = np.asarray(parents)
    depth = np.zeros_like(parents)
    rows = np.arange(parents.shape[0])
    for node in range(1, parents.shape[1]):
        parent = parents[:, node]
        depth[:, node] = np.where(parent >= 0, depth[rows, np.maximum(parent, 0)] + 1, 0)
    deepest = depth.max(axis=1)
    return float(deepest.mean()), int(deepest.max())


def best_times(calls: dict[str, tuple[Callable, tuple]], repeats: int) -> dict[str, tuple[float, float]]:
    """Best-of-``repeats`` (wall, process CPU) seconds per call, the calls interleaved.

    On a shared machine the wall time depends on other processes; the CPU time this process
    spent (all its threads) is the steadier measure of the work a call does.
    """
    wall = {name: float("inf") for name in calls}
    cpu = dict(wall)
    for _ in range(repeats):
        for name, (fn, args) in calls.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(fn(*args))
            wall[name] = min(wall[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    return {name: (wall[name], cpu[name]) for name in calls}


def bench_search(args, batch: int) -> dict[str, float]:
    game = Othello(8)
    config = search.default_search_config()
    config.variant = args.variant
    config.num_simulations = args.simulations
    config.batched_backward = not args.mctx_backward
    config.batched_simulate = not args.mctx_simulate
    apply_fn, variables = network(args.network, 8, args.dtype)

    our_roots, pgx_roots = root_positions(batch, args.plies)
    ours, ours_args = othello_jax_search(config, game, apply_fn, variables, our_roots)
    action, parents, record = jax.block_until_ready(ours(*ours_args))
    calls = {"othello_jax": (ours, ours_args)}
    tree_parents = {"othello_jax": parents}
    if "pgx" in args.embeddings:
        calls["pgx"] = pgx_search(config, apply_fn, variables, pgx_roots)
    if "replay" in args.embeddings:
        calls["floor/replay"] = replay_floor_search(config, game, apply_fn, variables, batch, record)
    if "noop" in args.embeddings:
        calls["floor/noop"] = noop_floor_search(config, game, apply_fn, variables, batch)
    if "other-backup" in args.embeddings:  # our states with the other backup implementation
        other = config.copy_and_resolve_references()
        other.batched_backward = not config.batched_backward
        calls["othello_jax*"] = othello_jax_search(other, game, apply_fn, variables, our_roots)
    if "plain-mctx" in args.embeddings:  # our states, mctx's own backward and tree walk
        plain = config.copy_and_resolve_references()
        plain.batched_backward = plain.batched_simulate = False
        calls["ours/plain mctx"] = othello_jax_search(plain, game, apply_fn, variables, our_roots)
    for name, (fn, fn_args) in calls.items():  # compile and record the trees
        if name != "othello_jax":
            tree_parents[name] = jax.block_until_ready(fn(*fn_args))[1]
    calls["network only"] = network_only(game, apply_fn, variables, batch, args.simulations + 1)
    jax.block_until_ready(calls["network only"][0](*calls["network only"][1]))
    for name in ("floor/replay", "othello_jax*", "ours/plain mctx"):  # these must build exactly our trees
        if name in calls:
            assert np.array_equal(np.asarray(tree_parents[name]), np.asarray(parents)), f"{name}: different trees"

    seconds = best_times(calls, args.repeats)
    if args.network == "trivial":
        net = args.network
    else:
        net = f"{args.network} {PRESETS[args.network][0]}x{PRESETS[args.network][1]}"
    backup = ("mctx's backward" if args.mctx_backward else "batched backward") + ", " + (
        "mctx's tree walk" if args.mctx_simulate else "lockstep tree walk")
    roots = f"roots {args.plies} random plies in" if args.plies else "roots at the start position"
    print(f"\nsearch: B={batch}, {args.simulations} simulations, {args.variant}, network {net} ({args.dtype}), "
          f"{backup}, {roots}, best of {args.repeats}, {jax.devices()[0].platform}")
    print(f"  {'embedding':<14} {'ms/call':>9} {'CPU ms':>9} {'moves/s':>9} {'net evals/s':>12}"
          "   tree depth mean / max")
    for name, (wall, cpu) in seconds.items():
        searched = name in tree_parents  # the network-only row plays no moves
        moves = f"{batch / wall:9.0f}" if searched else f"{'-':>9}"
        trees = "   {:5.2f} / {:d}".format(*depths(tree_parents[name])) if searched else ""
        evals = batch * (args.simulations + 1) / wall
        print(f"  {name:<14} {1e3 * wall:9.1f} {1e3 * cpu:9.1f} {moves} {evals:12.0f}{trees}")
    print("  (ms/call: wall clock; CPU ms: CPU time of this process; moves/s and net evals/s from the wall clock)")
    if "pgx" in seconds:
        ratio = [seconds["pgx"][i] / seconds["othello_jax"][i] for i in (0, 1)]
        print(f"  pgx / othello_jax = {ratio[0]:.2f}x wall, {ratio[1]:.2f}x CPU")
    if "floor/replay" in seconds:
        above = [seconds["othello_jax"][i] - seconds["floor/replay"][i] for i in (0, 1)]
        print(f"  othello_jax above the replay floor: {1e3 * above[0]:+.1f} ms wall, {1e3 * above[1]:+.1f} ms CPU "
              f"({100 * above[1] / seconds['othello_jax'][1]:.0f}% of its CPU time is the game)")
    return seconds


def bench_selfplay(args, batch: int) -> None:
    game = Othello(8)
    search_config = search.default_search_config()
    search_config.variant = args.variant
    search_config.num_simulations = args.simulations
    search_config.batched_backward = not args.mctx_backward
    search_config.batched_simulate = not args.mctx_simulate
    config = selfplay.default_selfplay_config()
    config.num_games = batch
    apply_fn, variables = network(args.network, 8, args.dtype)
    play = jax.jit(functools.partial(selfplay.play_games, config, game, apply_fn, search_config=search_config))
    resign = selfplay.initial_resign_state(config)
    start = time.perf_counter()
    out, stats, _ = jax.block_until_ready(play(variables, jax.random.key(0), resign))
    compile_s = time.perf_counter() - start
    best = float("inf")
    for r in range(max(1, args.repeats // 2)):
        start = time.perf_counter()
        out, stats, _ = jax.block_until_ready(play(variables, jax.random.key(r + 1), resign))
        best = min(best, time.perf_counter() - start)
    moves = float(stats.positions)
    searched = batch * selfplay.num_plies(config, game)
    print(f"\nself-play: B={batch} games, {args.simulations} simulations, {args.variant}, network {args.network}: "
          f"{best:.2f} s per call (first call with compile {compile_s:.1f} s)")
    print(f"  {moves / best:,.0f} moves/s, {moves * (args.simulations + 1) / best:,.0f} network evaluations/s "
          f"({searched / best:,.0f} positions searched/s incl. finished games), "
          f"mean game length {float(stats.game_length):.1f} plies")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_selfplay", description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[256, 2048])
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--network", default="tiny", help=f"'trivial' or a preset: {', '.join(PRESETS)}")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--variant", default="gumbel")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--plies", type=int, default=0,
                        help="search positions this many random plies into a game (0 = the start position)")
    parser.add_argument("--embeddings", default="pgx,replay,noop",
                        help="comma list among pgx, replay, noop, other-backup (othello_jax* row: our states "
                             "with the other backup, mctx's own or the batched one), plain-mctx (our states "
                             "with mctx's own backward and tree walk)")
    parser.add_argument("--selfplay", action="store_true", help="also time play_games")
    parser.add_argument("--mctx-backward", action="store_true",
                        help="back up with mctx's own backward instead of othello_jax.search.batched_backward")
    parser.add_argument("--mctx-simulate", action="store_true",
                        help="walk the trees with mctx's own simulate instead of othello_jax.search.batched_simulate")
    parser.add_argument("--no-search", action="store_true", help="skip the search comparison")
    args = parser.parse_args(argv)
    if args.variant not in search.VARIANTS:
        print(f"bench_selfplay: unknown variant {args.variant!r}; choose from {', '.join(sorted(search.VARIANTS))}",
              file=sys.stderr)
        return 2
    if args.network != "trivial" and args.network not in PRESETS:
        print(f"bench_selfplay: unknown network {args.network!r}; choose from trivial, {', '.join(PRESETS)}",
              file=sys.stderr)
        return 2
    if min(args.batch) < 1 or args.simulations < 1 or args.repeats < 1 or not 0 <= args.plies <= 40:
        print("bench_selfplay: --batch, --simulations, --repeats must be >= 1 and --plies in 0..40", file=sys.stderr)
        return 2
    args.embeddings = [e.strip() for e in args.embeddings.split(",") if e.strip()]
    for batch in args.batch:
        if not args.no_search:
            bench_search(args, batch)
        if args.selfplay:
            bench_selfplay(args, batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
