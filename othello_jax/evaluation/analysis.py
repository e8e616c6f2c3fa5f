"""What the network and its search think of a position: prior policy, value, visit counts.

Shared by the `analyze` command, the terminal `play` commentary and the play notebook.
:class:`Analyzer` jits one search function for a network and search settings; its
:meth:`Analyzer.agent` plays the search's move and keeps the analysis behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import ml_collections
import numpy as np

from othello_jax.agents import Agent
from othello_jax.agents.neural import search_fn
from othello_jax.game import Othello, State, batch_of_one, square_name
from othello_jax.search import ApplyFn, SearchResult


class MoveStat(NamedTuple):
    """One legal move at the root: the network's prior and what the search made of it."""

    action: int
    square: str  # "d3" or "--" for pass
    prior: float  # network policy probability (renormalised over legal moves)
    visits: int  # search visits
    q: float  # search value of the move, mover's view (-1..1)


class PositionAnalysis(NamedTuple):
    """Network and search view of one position, all values from the side to move."""

    network_value: float
    search_value: float
    best: int  # the search's move
    simulations: int
    moves: tuple[MoveStat, ...]  # legal moves, most visited first (ties: higher prior first)
    game: Othello  # the rules the values are for (their board size)
    value_margin: float = 0.0  # the network's value scale (``NetworkConfig.value_margin``): 0 = results only

    def describe(self, value: float) -> str:
        """One of this analysis' values with what it says (see :func:`format_value`)."""
        return format_value(value, self.game, self.value_margin)


def summarize(result: SearchResult, index: int, game: Othello, value_margin: float = 0.0) -> PositionAnalysis:
    """The ``index``-th root of a batched search result as host-side numbers (values on the scale
    of a network with ``value_margin``). In numpy: after every move of a player, no jax operation
    to compile (its first move ran eleven)."""
    pick = lambda x: np.asarray(x)[index]
    legal = pick(result.legal)
    weights = np.exp(np.where(legal, pick(result.prior_logits) - np.max(pick(result.prior_logits), where=legal,
                                                                         initial=-np.inf), -np.inf))
    prior = weights / max(np.sum(weights), np.finfo(weights.dtype).tiny)  # no legal move (a finished game): zeros
    visits, q = pick(result.visit_counts), pick(result.q)
    moves = [MoveStat(int(a), square_name(int(a), game.size), float(prior[a]), int(visits[a]), float(q[a]))
             for a in np.flatnonzero(legal)]
    moves.sort(key=lambda m: (-m.visits, -m.prior, m.action))
    return PositionAnalysis(
        network_value=float(pick(result.network_value)),
        search_value=float(pick(result.root_value)),
        best=int(pick(result.action)),
        simulations=int(visits.sum()),
        moves=tuple(moves),
        game=game,
        value_margin=value_margin,
    )


class Analyzer:
    """A compiled search for one network, its variables and search settings."""

    def __init__(self, game: Othello, apply_fn: ApplyFn, variables: dict,
                 search_config: ml_collections.ConfigDict, value_margin: float = 0.0):
        self.game = game
        self.variables = variables
        self.value_margin = value_margin
        self.search_config = ml_collections.FrozenConfigDict(search_config)
        self._search: Callable[[dict, State, jax.Array], SearchResult] = search_fn(game, apply_fn, self.search_config,
                                                                                   value_margin)
        self.last_move: PositionAnalysis | None = None  # behind the last move of :meth:`agent`'s agent

    def search(self, states: State, key: jax.Array) -> SearchResult:
        """Search a batch of positions (leading axis B)."""
        return self._search(self.variables, states, key)

    def analyze(self, state: State, key: jax.Array) -> PositionAnalysis:
        """Analysis of one unbatched position."""
        return summarize(self.search(batch_of_one(state), key), 0, self.game, self.value_margin)


    def agent(self, name: str = "network+search") -> Agent:
        """The search as a host :class:`~othello_jax.agents.Agent` that plays the search's move and
        keeps the analysis of the first position of its last call in :attr:`last_move`."""

        def act(states: State, key: jax.Array) -> jax.Array:
            result = self.search(states, key)
            self.last_move = summarize(result, 0, self.game, self.value_margin)
            return result.action

        return Agent(name=name, act=act, jittable=False)


def format_value(value: float, game: Othello, value_margin: float = 0.0) -> str:
    """A value with what it says: a result-only network's rough winning chance, ``+0.30 (65%)``;
    a margin network's result and disc difference (``Othello.read_value``), ``+0.62 (wins by ~9)``."""
    if not value_margin:
        return f"{value:+.2f} ({50 * (value + 1):.0f}%)"
    result, difference = (x.item() for x in game.read_value(value, value_margin))
    if result == 0:
        return f"{value:+.2f} (about a draw)"
    return f"{value:+.2f} ({'wins' if result > 0 else 'loses'} by ~{abs(difference):.0f})"


def format_search_line(analysis: PositionAnalysis, top: int = 5) -> str:
    """One line: the searcher's value estimate and its most visited moves."""
    moves = ", ".join(f"{m.square} {m.visits}" for m in analysis.moves[:top])
    return f"value estimate {analysis.describe(analysis.search_value)}; top moves (visits): {moves}"


def format_analysis(analysis: PositionAnalysis, top: int = 5) -> str:
    """A small table: values, then the top moves by visits with prior and search value."""
    lines = [
        f"network value {analysis.describe(analysis.network_value)}, "
        f"search value {analysis.describe(analysis.search_value)} "
        f"after {analysis.simulations} simulations (side to move's view)",
        f"{'move':>5} {'visits':>7} {'prior':>7} {'q':>7}",
    ]
    for move in analysis.moves[:top]:
        q = f"{move.q:+.2f}" if move.visits else "-"
        lines.append(f"{move.square:>5} {move.visits:>7} {move.prior:>7.1%} {q:>7}")
    if len(analysis.moves) > top:
        lines.append(f"  ... {len(analysis.moves) - top} more legal moves")
    return "\n".join(lines)
