"""Arena throughput: one batched match between two agents, timed apart from compilation.

    python -m experiments.bench_arena                      # 512 alphabeta:depth=2 vs greedy games, 8x8
    python -m experiments.bench_arena --first=alphabeta:3 --games=256 --openings=../shared/data/xot/openingslarge.txt
    python -m experiments.bench_arena --search-only         # alpha-beta stack search vs full-width expansion

The match is one compiled ``while_loop`` over plies for both agents and every game. With
``--search-only`` it instead times one move decision for a batch of midgame positions with the
explicit-stack alpha-beta and with full-width expansion (same evaluation, same values), side
by side as a ratio, per depth.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from experiments.timing import mean_seconds
from othello_jax.agents import alphabeta, heuristic, parse_agent
from othello_jax.evaluation import arena
from othello_jax.game import Othello, State


def full_width_negamax(states: State, game: Othello, depth: int) -> tuple[jax.Array, jax.Array]:
    """:func:`othello_jax.agents.alphabeta.negamax` by brute force: every one of the N*N+1 actions
    expanded ``depth`` times over the game's own ``step``.

    Static shapes and no loop, but (N*N+1)**depth positions per root: what the stack search is
    timed against here, and the independent reference ``tests/test_agents.py`` checks it with.
    Returns (best action, value) like ``negamax``.
    """
    value, finished, _, _ = heuristic.position_value(states.mover, states.opponent, game.size)
    if depth == 0:
        return jnp.full(value.shape, game.pass_action, jnp.int32), value
    actions = jnp.arange(game.num_actions, dtype=jnp.int32)
    widen = lambda x: jnp.broadcast_to(x[..., None], x.shape + actions.shape)
    children = game.step(jax.tree.map(widen, states), jnp.broadcast_to(actions, states.ply.shape + actions.shape))
    scores = -full_width_negamax(children, game, depth - 1)[1]
    scores = jnp.where(game.legal_moves(states), scores, -heuristic.INF)
    best = jnp.argmax(scores, axis=-1).astype(jnp.int32)
    return jnp.where(finished, game.pass_action, best), jnp.where(finished, value, jnp.max(scores, axis=-1))


def bench_match(args: argparse.Namespace) -> None:
    game = Othello(args.size)
    open_key, play_key = jax.random.split(jax.random.PRNGKey(args.seed))
    lines = arena.match_openings(game, args.games, open_key, args.openings, args.plies)
    first, second = parse_agent(args.first, game), parse_agent(args.second, game)
    print(f"{jax.devices()[0].platform}: {args.games} games on {args.size}x{args.size}, "
          f"{first.name} vs {second.name}", flush=True)
    for repeat in range(args.repeats):
        play_key, key = jax.random.split(play_key)
        result = arena.play_match(game, first, second, lines, key)
        if repeat == 0 and result.compile_seconds:
            print(f"compile: {result.compile_seconds:.1f} s")
        summary = result.summary()
        print(f"run {repeat + 1}: {result.seconds:.2f} s for {summary.games} games "
              f"({summary.games / result.seconds:.0f} games/s), score {summary.score:.3f} for {first.name}",
              flush=True)


def midgame_positions(game: Othello, count: int, plies: int, key: jax.Array):
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
    for sub in jax.random.split(key, plies):
        states = game.step(states, game.random_legal_action(states, sub))
    return states


def bench_search(args: argparse.Namespace) -> None:
    game = Othello(args.size)
    states = midgame_positions(game, args.positions, args.midgame_plies, jax.random.PRNGKey(args.seed))
    print(f"{jax.devices()[0].platform}: one move for {args.positions} positions after {args.midgame_plies} "
          f"random plies, {args.size}x{args.size}")
    print(f"{'depth':>5} {'alpha-beta ms':>14} {'full-width ms':>14} {'full/ab':>8}")
    for depth in range(1, args.max_depth + 1):
        stack = jax.jit(lambda s, d=depth: alphabeta.negamax(s, game, d)[:2])
        stack_time = mean_seconds(stack, states)
        width = "-"
        ratio = "-"
        if game.num_actions ** depth * args.positions <= args.full_width_limit:
            full = jax.jit(lambda s, d=depth: full_width_negamax(s, game, d))
            full_time = mean_seconds(full, states)
            width, ratio = f"{1e3 * full_time:14.1f}", f"{full_time / stack_time:8.1f}"
        print(f"{depth:>5} {1e3 * stack_time:14.1f} {width:>14} {ratio:>8}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", default="alphabeta:depth=2")
    parser.add_argument("--second", default="greedy")
    parser.add_argument("--games", type=int, default=512)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--openings", help="transcript file (default: generated near-even openings)")
    parser.add_argument("--plies", type=int, help="plies of generated openings")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--search-only", action="store_true", help="time alpha-beta vs full-width expansion")
    parser.add_argument("--positions", type=int, default=256)
    parser.add_argument("--midgame-plies", type=int, default=20)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--full-width-limit", type=int, default=3_000_000,
                        help="skip full-width expansion above this many leaf positions")
    args = parser.parse_args(argv)
    (bench_search if args.search_only else bench_match)(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
