"""Subtree reuse measured: the share of evaluations inherited, and strength at equal simulations and equal time.

For one network (a 6x6 checkpoint, or an untrained preset for a smoke run) it prints:

1. ``inherited share``: evaluations (tree nodes) a search inherits / (inherited + new), in
   self-play (``search.reuse``, one ply down, the training search's noise) and in match play
   (a ``reuse=1`` player against a plain one: two plies down, no noise);
2. ``equal simulations``: a match of the ``reuse=1`` player against the same network without
   reuse, both with ``--sims``;
3. ``equal time``: each setting's time per move is measured in a match against itself; the
   faster one gets more simulations until its time per move matches the slower one's, then the
   two play a match.

Matches use the arena: ``--games`` games (each generated near-even opening twice, colours
swapped), scores from the reuse player's view with a 95% interval over opening pairs. Usage::

    python -m experiments.bench_reuse --checkpoint runs/othello6/best --games 400 --sims 64
    python -m experiments.bench_reuse --games 8 --sims 16        # untrained tiny network, smoke run
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax import search
from othello_jax.agents import Agent, network_agent, renamed
from othello_jax.checkpoint import load_agent_variables
from othello_jax.evaluation import arena
from othello_jax.evaluation import openings as openings_lib
from othello_jax.game import Othello
from othello_jax.model import NetworkConfig, init_variables, make_network
from othello_jax.training import selfplay


def load_network(args: argparse.Namespace) -> tuple[NetworkConfig, dict, Othello]:
    if args.checkpoint:
        config, variables, size = load_agent_variables(args.checkpoint)
        return config, variables, Othello(size)
    config, game = NetworkConfig.preset(args.preset), Othello(args.size)
    return config, init_variables(make_network(game.size, config), jax.random.key(args.seed), game.size), game


def player(game: Othello, config: NetworkConfig, variables: dict, sims: int, variant: str, reuse: bool) -> Agent:
    agent = network_agent(game, config, variables, sims=sims, search=variant, reuse=reuse)
    return renamed(agent, f"{'reuse' if reuse else 'plain'} {sims} sims")


def selfplay_share(game: Othello, config: NetworkConfig, variables: dict, args: argparse.Namespace) -> float:
    """Inherited share in self-play with the training search (noise on), ``--selfplay-games`` games."""
    net = make_network(game.size, config)
    sp = selfplay.default_selfplay_config()
    sp.num_games = args.selfplay_games
    sc = search.default_search_config()
    sc.variant, sc.num_simulations, sc.reuse = args.variant, args.sims, True
    play = jax.jit(functools.partial(selfplay.play_games, sp, game, functools.partial(net.apply, train=False),
                                     search_config=sc))
    _, stats, _ = play(variables, jax.random.key(args.seed), selfplay.initial_resign_state(sp))
    return float(stats.reused_share)


def match_share(game: Othello, reuser: Agent, other: Agent, lines: list[list[int]], sims: int) -> float:
    """Inherited share of ``reuser``'s searches in games against ``other`` (both colours, host loop)."""
    starts, _ = openings_lib.replay(lines, game)
    step = jax.jit(game.step)
    inherited = moves = 0
    for color in (0, 1):
        states, memory = starts, reuser.init_memory(reuser.params, starts)
        for _ in range(arena.max_plies(game)):
            if bool(jnp.all(states.terminal)):
                break
            key = jax.random.key(moves)
            ours, memory_next = reuser.act_with_memory(reuser.params, memory, states, key)
            theirs = other.act(states, key)
            mine = np.asarray((states.color == color) & ~states.terminal)
            memory = jax.tree.map(lambda new, old: jnp.where(_rows(mine, new), new, old), memory_next, memory)
            inherited += int(np.sum(np.where(mine, np.asarray(memory_next.inherited), 0)))
            moves += int(mine.sum())
            states = step(states, jnp.where(mine, ours, theirs))
    return inherited / max(inherited + sims * moves, 1)


def _rows(flag: np.ndarray, x: jax.Array) -> jax.Array:
    return jnp.asarray(flag).reshape(flag.shape + (1,) * (x.ndim - 1))


def seconds_per_move(game: Othello, agent: Agent, lines: list[list[int]], key: jax.Array) -> float:
    """Time per move decision of ``agent`` in a match against itself (compilation excluded, best of 2)."""
    best = float("inf")
    for repeat in range(2):
        result = arena.play_match(game, agent, agent, lines, jax.random.fold_in(key, repeat))
        best = min(best, result.seconds / max(int(np.sum(result.moves >= 0)), 1))
    return best


def equal_time_sims(measure: Callable[[int], float], sims: int, seconds: float, goal: float, limit: int = 4) -> int:
    """The simulations at which ``measure(sims)`` (seconds per move, rising with sims) comes closest to ``goal``.

    Starts from ``sims`` (taking ``seconds``, below the goal), grows by 15% until a setting takes
    longer than ``goal`` (at most ``limit`` times ``sims``), then bisects the last bracket; each
    setting is measured once.
    """
    below, above = (sims, seconds), None
    while above is None and below[0] < limit * sims:
        nxt = max(below[0] + 1, int(round(below[0] * 1.15)))
        taken = measure(nxt)
        below, above = ((nxt, taken), None) if taken <= goal else (below, (nxt, taken))
    if above is None:
        return below[0]
    while above[0] - below[0] > 1:
        middle = (below[0] + above[0]) // 2
        taken = measure(middle)
        below, above = ((middle, taken), above) if taken <= goal else (below, (middle, taken))
    return min((below, above), key=lambda point: abs(point[1] - goal))[0]


def report(title: str, result: arena.MatchResult) -> None:
    s = result.summary()
    print(f"{title}: {s.first} vs {s.second}: score {s.score:.3f} +- {s.score_ci:.3f} over {s.games} games "
          f"(W/D/L {s.wins}/{s.draws}/{s.losses}, as black {s.score_as_black:.3f}, as white "
          f"{s.score_as_white:.3f}), Elo {s.elo:+.0f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a trained network (training workdir, WORKDIR/best, ...)")
    parser.add_argument("--preset", default="tiny", help="untrained network preset when no --checkpoint")
    parser.add_argument("--size", type=int, default=6, help="board size of the untrained network")
    parser.add_argument("--games", type=int, default=400, help="games per match (even)")
    parser.add_argument("--sims", type=int, default=64)
    parser.add_argument("--variant", default="gumbel", choices=sorted(search.VARIANTS))
    parser.add_argument("--timing-games", type=int, default=32, help="games of the timing self-matches")
    parser.add_argument("--selfplay-games", type=int, default=64)
    parser.add_argument("--batch", type=int, default=0, help="openings per compiled batch (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 2 or args.games % 2 or args.sims < 1:
        parser.error("--games must be even and >= 2, --sims >= 1")

    config, variables, game = load_network(args)
    open_key, time_key, play_key = jax.random.split(jax.random.key(args.seed), 3)
    lines = arena.match_openings(game, args.games, open_key)
    timing_lines = lines[: max(1, args.timing_games // 2)]
    make = functools.partial(player, game, config, variables, variant=args.variant)
    reuse, plain = make(args.sims, reuse=True), make(args.sims, reuse=False)
    print(f"{jax.devices()[0].platform}: {game.size}x{game.size}, "
          f"{args.checkpoint or 'untrained ' + args.preset}, {args.variant}, {args.sims} sims", flush=True)

    print(f"inherited share, self-play: {selfplay_share(game, config, variables, args):.1%}", flush=True)
    print(f"inherited share, match play: {match_share(game, reuse, plain, lines, args.sims):.1%}", flush=True)

    batch = args.batch or None
    report("equal simulations", arena.play_match(game, reuse, plain, lines, play_key, batch_size=batch))

    def timed(sims: int, with_reuse: bool, agent: Agent | None = None) -> float:
        """Seconds per move of one setting (printed); ``agent``: that setting's player, if already built."""
        agent = agent or make(sims, reuse=with_reuse)
        seconds = seconds_per_move(game, agent, timing_lines, time_key)
        print(f"time per move, {'reuse' if with_reuse else 'plain'} {sims} sims: {seconds * 1e3:.2f} ms", flush=True)
        return seconds

    times = {True: timed(args.sims, True, reuse), False: timed(args.sims, False, plain)}
    faster = times[True] < times[False]  # the faster setting gets more sims
    goal = max(times.values())
    sims = equal_time_sims(functools.partial(timed, with_reuse=faster), args.sims, times[faster], goal)
    print(f"equal time: {'reuse' if faster else 'plain'} {sims} sims against "
          f"{'plain' if faster else 'reuse'} {args.sims} sims", flush=True)
    fast = make(sims, reuse=faster)
    slow = make(args.sims, reuse=not faster)
    first, second = (fast, slow) if faster else (slow, fast)
    report("equal time", arena.play_match(game, first, second, lines, jax.random.fold_in(play_key, 1),
                                          batch_size=batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
