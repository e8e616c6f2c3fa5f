"""Command-line options naming the opponent: --checkpoint (a trained network plus search) or
--agent (any agent spec), shared by `play`, `engine`, `analyze`, `testset` and
`endgame-accuracy`; and the players' exact endgames: `play`, `engine` and the play notebook solve
the last empties exactly by default (--solve=E, --no-solve; see with_endgame_solve)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from othello_jax.commands.command import add_checkpoint_argument
from othello_jax.errors import InputError
from othello_jax.game import SIZES, Othello, State

if TYPE_CHECKING:  # imported when building: the agents bring JAX along
    from othello_jax.agents import Agent
    from othello_jax.evaluation.analysis import Analyzer


# Simulations per move of the players (`play`, `engine`, `analyze`) unless told: one move of the
# shipped networks takes 0.03 s (builtin:8x8), 0.07 s (builtin:6x6) and 0.29 s (builtin:8x8-large)
# on one core of cpu-2c, and builtin:8x8 scores 0.873 against alpha-beta 4 with it against 0.750
# with 64 (0.945 with 1,024; experiments/RESULTS.md, 2026-11-28).
PLAYING_SIMULATIONS = 256

# How many empties the players (`othello-jax play`, `engine`, the play notebook) solve exactly by
# default, per board size: the largest count whose C solve of one position (what choosing a move
# costs; fresh transposition table) stayed under ~1 s of CPU in every sampled position.
# `python -m experiments.bench_move_solve` (defaults, then `--size=S --empties=A-B --count=20
# --seed=1`), 2026-11-25, cpu-2c shared with other jobs (CPU seconds; wall clocks 2-4x that),
# random-play and greedy-play positions: 6x6 worst 0.38 s at 19 empties (52 positions), 1.68 s at
# 20 (52), 3.2 s at 21 (12); 8x8 worst 0.96 s at 18 (52), 1.47 s at 19 (12). 4x4: the whole game
# (12 empties), milliseconds.
# 6x6 again with the faster solver (issue 66), 2026-12-02, `--size=6 --empties=20-24 --count=20
# --seed=1`, a loaded machine: worst 0.17 s at 20, 0.34 s at 21, 0.93 s at 22, 1.29 s at 23, 2.1 s
# at 24 empties (CPU s). 22 it is: 10-ply openings of 6x6 are solved from their first move.
# 8x8 again with the faster solver (issue 66), 2026-12-02, `python -m experiments.bench_solve_depth
# --count=20 --games=60 --single=8` (positions from the expert network's own XOT games, a loaded
# machine): median/p90/max wall s 0.17/0.48/1.11 at 20 empties, 0.51/2.5/5.1 at 22, against
# ~0.45 s for its 256-simulation move; 20 against 18 in 400 XOT games: 0.549 +- 0.019. 20 it is.
PLAYING_SOLVE_DEPTH = {4: 16, 6: 22, 8: 20}
PROOF_SIZE = 6  # the board of the shipped proof (othello-jax solve-6x6), which networks' players follow


class AgentOptionError(InputError):
    """Bad or inconsistent agent options (one-line message)."""


class Player(NamedTuple):
    """What the options describe.

    size: the default board size; sizes: the sizes it can play (a network knows one);
    make_agent(game): the agent for a board size; analyzer: the network's search (None for
    spec agents); commentary(agent) -> text after each of the agent's moves (or None).
    """

    name: str
    size: int
    sizes: tuple[int, ...]
    make_agent: Callable[[Othello], Agent]
    analyzer: Analyzer | None
    commentary: Callable[[Agent], str] | None


def add_arguments(parser: argparse.ArgumentParser, spec_agents: bool = True, endgame: bool = False) -> None:
    """The opponent's options; ``endgame`` adds ``--solve``/``--no-solve`` (the players, not `analyze`)."""
    add_checkpoint_argument(parser)
    if spec_agents:
        parser.add_argument("--agent", help="any agent spec instead of a checkpoint, e.g. random, greedy, "
                                            "alphabeta:3, net:ckpt=CHECKPOINT,sims=64 (CHECKPOINT as for "
                                            "--checkpoint; see `othello-jax eval --help`)")
    parser.add_argument("--sims", type=int, default=PLAYING_SIMULATIONS,
                        help=f"search simulations per move (default {PLAYING_SIMULATIONS})")
    parser.add_argument("--search", default="gumbel", help="search variant: gumbel or puct (default gumbel)")
    parser.add_argument("--size", type=int, default=0, help="board size 4, 6 or 8 (default: the "
                                                            "checkpoint's, else 8)")
    if endgame:
        depths = ", ".join(f"{size}x{size}: {depth}" for size, depth in PLAYING_SOLVE_DEPTH.items())
        parser.add_argument("--solve", type=int, default=None, metavar="E",
                            help=f"play positions with at most E empty squares perfectly with the exact "
                                 f"solver (default with the C solver: {depths}; 0: never)")
        parser.add_argument("--no-solve", dest="solve", action="store_const", const=0,
                            help="no exact endgame: the agent alone plays every move (same as --solve=0)")


def checkpoint_player(checkpoint: str, sims: int, variant: str = "gumbel") -> Player:
    """A trained network from a checkpoint, searching ``sims`` simulations per move."""
    from othello_jax.agents import playing_search_config
    from othello_jax.agents.neural import load_network, network_apply_fn
    from othello_jax.evaluation.analysis import Analyzer, format_search_line

    try:
        game, network, variables = load_network(checkpoint)  # as `--agent=net:ckpt=PATH` loads it
        config = playing_search_config(variant, sims)
    except InputError as error:  # a missing or incompatible checkpoint, an unknown search variant
        raise AgentOptionError(str(error)) from None
    size = game.size
    analyzer = Analyzer(game, network_apply_fn(game, network), variables, config, network.value_margin)
    agent = analyzer.agent(name=f"network, {sims} sims")

    def make_agent(wanted: Othello) -> Agent:
        if wanted != game:
            raise AgentOptionError(f"the checkpoint plays {size}x{size}, not {wanted.size}x{wanted.size}")
        return agent

    commentary = lambda agent: format_search_line(analyzer.last_move) if analyzer.last_move is not None else ""
    return Player(agent.name, size, (size,), make_agent, analyzer, commentary)


def spec_player(spec: str, size: int) -> Player:
    """Any agent spec understood by the evaluation module (built per board size)."""
    from othello_jax.agents import parse_agent

    @functools.cache
    def make_agent(game: Othello) -> Agent:
        try:
            return parse_agent(spec, game)
        except InputError as error:
            raise AgentOptionError(str(error)) from None

    make_agent(Othello(size))  # fail now, not at the first move, on a bad spec
    return Player(spec, size, SIZES, make_agent, None, None)


def endgame_depth(size: int, solve: int | None = None) -> int:
    """The empty squares at or below which a player built with ``--solve=solve`` plays perfectly
    (None: the board's default, :data:`PLAYING_SOLVE_DEPTH`; 0: never)."""
    return PLAYING_SOLVE_DEPTH.get(size, 0) if solve is None else solve


def with_endgame_solve(player: Player, solve: int | None = None, spec: str | None = None,
                       proof: bool = False) -> Player:
    """The player with exact endgames, as Edax and Egaroucid play: positions with at most
    ``solve`` empty squares are played by the solver.

    ``solve=None``: the board's default depth (:data:`PLAYING_SOLVE_DEPTH`, about a second a
    move at most) with the C solver; where it cannot be built the player stays as it is, saying
    why in one line on stderr. ``solve=0``: the player unchanged. An explicit ``solve=E`` (>0)
    falls back to the slower JAX solver without a C compiler. ``spec`` (a spec player's): a spec
    giving ``solve=E`` itself keeps it; ``perfect`` and ``gtp`` agents play their own endgames
    and stay as they are unless ``solve`` is given. The commentary says when the solver chose
    the move (the search's analysis is then dropped: its move was not played).

    ``proof`` (a network's player): on 6x6 the shipped proof plays the positions it covers above
    the solver's depth (:mod:`othello_jax.agents.proof_player`), so from the start the player
    never lets its proved result fall; the commentary then says what is proved.
    """
    import jax
    import numpy as np

    from othello_jax.agents import parse_spec, with_exact_endgame
    from othello_jax.solver import CSolverUnavailable, empties_on_host, resolve_backend

    if solve is not None and solve < 0:
        raise AgentOptionError(f"--solve must be >= 0 empty squares, got {solve}")
    if spec is not None:
        kind, options = parse_spec(spec)
        if "solve" in options:
            if solve is not None:
                raise AgentOptionError("give the endgame depth once: solve=E in the agent spec or --solve/--no-solve")
            return player
        if solve is None and kind in ("perfect", "gtp"):
            return player
    if solve == 0:
        return player
    backend = "c"
    try:
        resolve_backend("c")  # builds the C solver on first use
    except CSolverUnavailable as error:
        if solve is None:
            print(f"othello-jax: endgames are not solved exactly: {str(error).splitlines()[0]}",
                  file=sys.stderr, flush=True)
            return player
        backend = "auto"  # an explicit depth: the JAX solver, slower but exact

    solved = [False]  # whether the solver chose the agent's last move (for the commentary)
    proved: list[str | None] = [None]  # what the proof says after the agent's last move, if it chose it

    @functools.cache
    def make_agent(game: Othello) -> Agent:
        from othello_jax.agents.proof_player import proof_chooses, state_verdict, with_proof

        depth = endgame_depth(game.size, solve)
        try:
            agent = with_exact_endgame(player.make_agent(game), game, depth, backend)
            use_proof = proof and game.size == PROOF_SIZE and depth > 0
            if use_proof:
                agent = with_proof(agent, game, exact_from=depth)
        except InputError as error:
            raise AgentOptionError(str(error)) from None

        def act(states: State, key: jax.Array) -> np.ndarray:
            live = ~np.asarray(states.terminal)
            proved[0] = None
            if use_proof and live.sum() == 1 and np.all(empties_on_host(states, game)[live] > depth):
                one = jax.tree.map(lambda x: np.asarray(x)[live][0], states)
                proved[0] = state_verdict(one, game) if proof_chooses(one, game) else None
            actions = agent.act(states, key)
            solved[0] = bool(live.any() and np.all(empties_on_host(states, game)[live] <= depth))
            if (solved[0] or proved[0]) and player.analyzer is not None:
                player.analyzer.last_move = None  # the search ran, but its move was not played
            return actions

        return dataclasses.replace(agent, act=act)

    def commentary(agent: Agent) -> str:
        if proved[0]:
            return f"{proved[0]} (the move follows the shipped proof)"
        if solved[0]:
            return "perfect play: the exact endgame solver chose this move"
        return player.commentary(agent) if player.commentary is not None else ""

    name = make_agent(Othello(player.size)).name
    return player._replace(name=name, make_agent=make_agent, commentary=commentary)


def build(args: argparse.Namespace) -> Player:
    """The player the parsed options describe; :class:`AgentOptionError` on bad options."""
    spec = getattr(args, "agent", None)
    if not hasattr(args, "agent") and not args.checkpoint:
        raise AgentOptionError("--checkpoint=PATH is required")
    if bool(args.checkpoint) == bool(spec):
        raise AgentOptionError("give exactly one of --checkpoint=PATH or --agent=SPEC")
    if args.size and args.size not in SIZES:
        raise AgentOptionError(f"--size must be one of {', '.join(map(str, SIZES))}, got {args.size}")
    if args.sims < 1:
        raise AgentOptionError(f"--sims must be at least 1, got {args.sims}")
    solve = getattr(args, "solve", 0)  # commands without --solve (analyze) show the network alone
    if args.checkpoint:
        player = checkpoint_player(args.checkpoint, args.sims, args.search)
        if args.size and args.size != player.size:
            raise AgentOptionError(f"the checkpoint plays {player.size}x{player.size}, not --size={args.size}")
        return with_endgame_solve(player, solve, proof=True)
    return with_endgame_solve(spec_player(spec, args.size or 8), solve, spec)
