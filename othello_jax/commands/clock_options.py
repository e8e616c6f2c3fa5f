"""The players' time: --seconds (a move) and --clock (a game) for `play` and `engine`, and the
network player that honours them (a search in chunks of simulations until its time is spent,
:class:`~othello_jax.agents.timed.TimedSearch`; the endgame solver's time counted)."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from typing import TYPE_CHECKING

from othello_jax.agents.time_control import GameClock, MoveBudget
from othello_jax.commands import agent_options
from othello_jax.commands.agent_options import AgentOptionError, Player
from othello_jax.errors import InputError

if TYPE_CHECKING:
    from othello_jax.agents import Agent
    from othello_jax.agents.timed import TimedSearch
    from othello_jax.game import Othello

_CLOCK = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(?:\+\s*(\d+(?:\.\d*)?)\s*)?")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--seconds and --clock (a network's player; agent specs play at their own strength)."""
    parser.add_argument("--seconds", type=float, default=None, metavar="S",
                        help="think S seconds a move instead of a fixed number of simulations (the search runs "
                             "in chunks until its time is spent; the endgame solver's time counts)")
    parser.add_argument("--clock", default=None, metavar="T[+I]",
                        help="a game clock for the player: T seconds for all of its moves, I more after each "
                             "(e.g. 300 or 300+2); each move gets a share of what is left")


def parse_clock(text: str) -> GameClock:
    """``'300'`` or ``'300+2'`` -> a clock of 300 s main time (2 s increment)."""
    match = _CLOCK.fullmatch(text)
    if not match or float(match.group(1)) <= 0:
        raise AgentOptionError(f"--clock must be SECONDS or SECONDS+INCREMENT, e.g. 300 or 300+2, got {text!r}")
    return GameClock(main=float(match.group(1)), increment=float(match.group(2) or 0.0))


def move_budget(args: argparse.Namespace) -> MoveBudget:
    """The budget the options give: a game clock, seconds a move, else the --sims search."""
    seconds = getattr(args, "seconds", None)
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise AgentOptionError(f"--seconds must be a positive number, got {seconds}")
    budget = MoveBudget(per_move=seconds, simulations=args.sims)
    if getattr(args, "clock", None):
        budget.set_clocks(parse_clock(args.clock))
    return budget


def wants_clock(args: argparse.Namespace) -> bool:
    """Whether the options ask for play on the clock."""
    return getattr(args, "seconds", None) is not None or bool(getattr(args, "clock", None))


def build(args: argparse.Namespace, budget: MoveBudget, timed: bool) -> Player:
    """The player of ``args`` (:func:`othello_jax.commands.agent_options.build`); a network's
    (--checkpoint) plays on ``budget`` when ``timed`` or when the options give a clock."""
    if getattr(args, "agent", None) and args.checkpoint:
        raise AgentOptionError("give exactly one of --checkpoint=PATH or --agent=SPEC")
    if wants_clock(args) and not args.checkpoint:
        raise AgentOptionError("--seconds and --clock need a network (--checkpoint); an agent spec plays at its "
                               "own strength")
    if not args.checkpoint or not (timed or wants_clock(args)):
        return agent_options.build(args)
    if args.sims < 1:
        raise AgentOptionError(f"--sims must be at least 1, got {args.sims}")
    player = timed_player(args.checkpoint, budget, args.sims, args.search, getattr(args, "solve", None))
    if args.size and args.size != player.size:
        raise AgentOptionError(f"the checkpoint plays {player.size}x{player.size}, not --size={args.size}")
    return player


def describe(budget: MoveBudget) -> str:
    """``"3 s a move"``, ``"clock 300+2 s"`` or ``"256 sims"``."""
    if budget.clocks is not None:
        clock = budget.clocks[0]
        return f"clock {clock.main:g}" + (f"+{clock.increment:g}" if clock.increment else "") + " s"
    return f"{budget.per_move:g} s a move" if budget.per_move is not None else f"{budget.simulations} sims"


def timed_player(checkpoint: str, budget: MoveBudget, sims: int = agent_options.PLAYING_SIMULATIONS,
                 variant: str = "gumbel", solve: int | None = None, background: bool = True) -> Player:
    """A trained network whose moves follow ``budget`` (seconds, a game clock, or ``sims``
    simulations while none is set), solving the last ``solve`` empties exactly (None: the board's
    default with the C solver when it builds; 0: never). Its analyzer (hints) and commentary are
    those of the fixed-simulation player.

    With ``background`` its search starts compiling now, in a thread, and until it is ready the
    8x8 opening book (WThor's most played moves, :mod:`othello_jax.agents.opening_book`) answers
    the positions it knows: a first reply from the start takes no compile."""
    import jax
    import numpy as np

    from othello_jax.agents.base import Agent
    from othello_jax.evaluation.analysis import Analyzer, format_search_line, summarize

    timed = network_search(checkpoint, variant, sims, solve, book=background)
    game, apply_fn, variables, config = timed.game, timed.apply_fn, timed.variables, timed.config
    depth, native = timed.solve_empties, timed.solver == "c"
    if background:
        timed.prepare_in_background()
    analyzer = Analyzer(game, apply_fn, variables, config, timed.value_margin)
    analyzer.search = lambda states, key: timed.run(states, key, sims)  # hints: the same compiled programs
    name = f"network, {describe(budget)}" + (f",solve={depth}" + (",solver=c" if native else "") if depth else "")
    inner = timed.agent(budget, name)

    def act(states, key) -> np.ndarray:
        actions = inner.act(states, key)
        move = timed.last_move
        searched = move is not None and move.result is not None
        analyzer.last_move = summarize(move.result, 0, game, timed.value_margin) if searched else None
        return actions

    searching = Agent(name=name, act=act, jittable=False, ready_for=inner.ready_for)  # a book reply: no notice
    proved = _with_proof(searching, game, depth)  # 6x6: the shipped proof's moves where it has them

    verdict: list[str | None] = [None]  # what the proof says of the position the last move was chosen in

    def first_act(states, key) -> np.ndarray:
        timed.last_move = analyzer.last_move = None  # set again unless the proof chose
        if proved is not searching and int(np.asarray(states.terminal).shape[0]) == 1:
            verdict[0] = _proof_verdict(jax.tree.map(lambda x: np.asarray(x)[0], states), game)
        return proved.act(states, key)

    agent = dataclasses.replace(proved, act=first_act)

    def make_agent(wanted: Othello) -> Agent:
        if wanted != game:
            raise AgentOptionError(f"the checkpoint plays {game.size}x{game.size}, not {wanted.size}x{wanted.size}")
        return agent

    def commentary(agent: Agent) -> str:
        move = timed.last_move
        if move is None:
            return f"{verdict[0] or 'proved'} (the move follows the shipped proof)" if proved is not searching else ""
        if move.source == "book":
            return f"book move: experts played it in {move.games} games (the search is still being prepared)"
        if move.source == "solver":
            return f"perfect play: the exact endgame solver chose this move ({move.seconds:.1f} s)"
        if move.source == "only move" or analyzer.last_move is None:
            return "the only legal move"
        waited = f", after {move.waited:.0f} s preparing the search" if move.waited >= 1 else ""
        return (f"{format_search_line(analyzer.last_move)} ({move.simulations} simulations in "
                f"{move.seconds - move.waited:.1f} s{waited})")

    return Player(agent.name, game.size, (game.size,), make_agent, analyzer, commentary)


def network_search(checkpoint: str, variant: str = "gumbel", sims: int = agent_options.PLAYING_SIMULATIONS,
                   solve: int | None = None, book: bool = True, c_solver_only: bool = False) -> TimedSearch:
    """The network ``checkpoint``'s search on the clock (``variant``, ``sims`` simulations where a
    move is given no time), for `play`, `engine` (:func:`timed_player`) and `serve`.

    Positions with at most ``solve`` empties are solved exactly (None: the board's default depth
    with the C solver when it builds, none without it; 0: never; E: E empties, with the slower JAX
    solver where the C one does not build, unless ``c_solver_only``: then none, as `serve`, whose
    exact hints need the C solver). ``book``: the shipped 8x8 opening book answers the positions
    it knows while the search is not compiled yet. :class:`AgentOptionError` when the network
    cannot be loaded or the options are bad."""
    from othello_jax.agents import playing_search_config
    from othello_jax.agents.neural import load_network, network_apply_fn
    from othello_jax.agents.opening_book import shipped_book
    from othello_jax.agents.timed import TimedSearch
    from othello_jax.solver import c_solver

    if solve is not None and solve < 0:
        raise AgentOptionError(f"--solve must be >= 0 empty squares, got {solve}")
    try:
        game, network, variables = load_network(checkpoint)
        config = playing_search_config(variant, sims)
    except InputError as error:
        raise AgentOptionError(str(error)) from None
    native = c_solver.available()
    unsolved = solve == 0 or (not native and (solve is None or c_solver_only))
    depth = 0 if unsolved else agent_options.endgame_depth(game.size, solve)
    return TimedSearch(game, network_apply_fn(game, network), variables, config, network.value_margin,
                       solve_empties=depth, solver="c" if native else "auto", book=shipped_book() if book else None)


def _with_proof(agent: Agent, game: Othello, depth: int) -> Agent:
    """On the proof's board, the shipped 6x6 proof's moves where it covers the position (as the
    fixed-simulation player plays, ``agent_options.with_endgame_solve``); elsewhere ``agent``."""
    proof_size = getattr(agent_options, "PROOF_SIZE", None)
    if game.size != proof_size or depth <= 0:
        return agent
    try:
        from othello_jax.agents.proof_player import with_proof
    except ImportError:  # no proof player in this version
        return agent
    try:
        return with_proof(agent, game, exact_from=depth)
    except InputError:  # no proof file: the network plays
        return agent


def _proof_verdict(state, game: Othello) -> str | None:
    """What the shipped proof says of one position ("proved: white wins by 4"), if anything."""
    try:
        from othello_jax.agents.proof_player import state_verdict
    except ImportError:
        return None
    return state_verdict(state, game)
