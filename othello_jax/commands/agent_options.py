"""Command-line options naming the opponent: ``--checkpoint`` (a trained network plus search)
or ``--agent`` (any agent spec), shared by `play`, `engine` and `analyze`."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from othello_jax.errors import InputError
from othello_jax.game import SIZES, Othello

if TYPE_CHECKING:  # imported when building: the agents bring JAX along
    from othello_jax.agents import Agent
    from othello_jax.evaluation.analysis import Analyzer


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


def add_arguments(parser: argparse.ArgumentParser, spec_agents: bool = True) -> None:
    parser.add_argument("--checkpoint", help="trained network: a training workdir, WORKDIR/best, or one "
                                             "step directory (WORKDIR/checkpoints/40)")
    if spec_agents:
        parser.add_argument("--agent", help="any agent spec instead of a checkpoint, e.g. random, greedy, "
                                            "alphabeta:3 (see `othello-jax eval --help`)")
    parser.add_argument("--sims", type=int, default=64, help="search simulations per move (default 64)")
    parser.add_argument("--search", default="gumbel", help="search variant: gumbel or puct (default gumbel)")
    parser.add_argument("--size", type=int, default=0, help="board size 4, 6 or 8 (default: the "
                                                            "checkpoint's, else 8)")


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
    analyzer = Analyzer(game, network_apply_fn(game, network), variables, config)
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
    if args.checkpoint:
        player = checkpoint_player(args.checkpoint, args.sims, args.search)
        if args.size and args.size != player.size:
            raise AgentOptionError(f"the checkpoint plays {player.size}x{player.size}, not --size={args.size}")
        return player
    return spec_player(spec, args.size or 8)
