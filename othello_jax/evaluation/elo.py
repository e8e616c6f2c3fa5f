"""Elo ratings from match results: maximum-likelihood Bradley-Terry, draws counted as half.

``P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))``. Ratings maximise the likelihood of the
observed scores (Newton's method; a few players, so dense linear algebra on the host), one
player is anchored (e.g. random = 0), and the inverse Hessian gives standard errors and 95%
intervals relative to the anchor. A small prior of virtual draws between players who met keeps
ratings finite when someone won or lost every game (as in BayesElo).

:func:`rate_agents` plays a round robin or a ladder (each checkpoint against its neighbours
and every baseline) and fits the ratings; :func:`plot_elo` draws Elo against training
iterations.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from othello_jax.agents import Agent
from othello_jax.errors import InputError
from othello_jax.game import Othello

_SCALE = math.log(10.0) / 400.0  # Elo points -> natural-log odds


class Pairing(NamedTuple):
    """Aggregated results of ``a`` against ``b`` (from ``a``'s view)."""

    a: str
    b: str
    wins: float
    draws: float
    losses: float

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return self.wins + 0.5 * self.draws


@dataclasses.dataclass(frozen=True)
class Ratings:
    """Fitted ratings: ``elo[i]`` for ``players[i]`` with ``anchor`` at 0; ``stderr`` vs the anchor."""

    players: tuple[str, ...]
    elo: np.ndarray
    stderr: np.ndarray
    anchor: str

    def __getitem__(self, name: str) -> float:
        return float(self.elo[self.players.index(name)])

    def interval(self, name: str) -> tuple[float, float]:
        """95% interval of a player's rating (relative to the anchor)."""
        i = self.players.index(name)
        half = 1.96 * float(self.stderr[i])
        return float(self.elo[i]) - half, float(self.elo[i]) + half

    def table(self) -> str:
        rows = [f"{'player':<40} {'Elo':>7} {'95% interval':>18}"]
        for i in np.argsort(-self.elo):
            low, high = self.interval(self.players[i])
            rows.append(f"{self.players[i][:40]:<40} {self.elo[i]:>7.0f}   [{low:>6.0f}, {high:>6.0f}]")
        return "\n".join(rows)


class EloError(InputError):
    """Results that cannot be rated (one-line message)."""


def fit_elo(pairings: Sequence[Pairing], anchor: str, prior_draws: float = 1.0,
            players: Sequence[str] | None = None, iterations: int = 100) -> Ratings:
    """Maximum-likelihood ratings of every player in ``pairings``, ``anchor`` fixed at 0.

    ``prior_draws`` virtual draws are added to every pair that played (0 for the plain MLE,
    which diverges when a player won or lost all its games).
    """
    names = list(players) if players is not None else sorted({p.a for p in pairings} | {p.b for p in pairings})
    if anchor not in names:
        raise EloError(f"anchor {anchor!r} is not among the players ({', '.join(names)})")
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    games = np.zeros((n, n))
    score = np.zeros((n, n))  # score[i, j]: points i took from j
    for p in pairings:
        if p.a not in index or p.b not in index or p.a == p.b:
            raise EloError(f"pairing {p.a!r} vs {p.b!r} names an unknown player or a player against itself")
        i, j = index[p.a], index[p.b]
        games[i, j] += p.games
        games[j, i] += p.games
        score[i, j] += p.score
        score[j, i] += p.games - p.score
    met = games > 0
    games = games + prior_draws * met  # each virtual draw: one more game, half a point each
    score = score + 0.5 * prior_draws * met
    _check_connected(met, names, anchor)

    free = [i for i in range(n) if i != index[anchor]]
    r = np.zeros(n)  # natural-log-odds units
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(r[None, :] - r[:, None]))  # p[i, j] = P(i beats j)
        gradient = np.sum(score - games * p, axis=1)
        weight = games * p * (1.0 - p)
        hessian = np.diag(weight.sum(axis=1)) - weight  # negative Hessian of the log-likelihood
        sub = hessian[np.ix_(free, free)]
        step = np.linalg.solve(sub, gradient[free])
        r[free] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(r[None, :] - r[:, None]))
    weight = games * p * (1.0 - p)
    hessian = np.diag(weight.sum(axis=1)) - weight
    stderr = np.zeros(n)
    stderr[free] = np.sqrt(np.diag(np.linalg.inv(hessian[np.ix_(free, free)])))
    return Ratings(tuple(names), r / _SCALE, stderr / _SCALE, anchor)


def _check_connected(met: np.ndarray, names: list[str], anchor: str) -> None:
    """Every player must be linked to the anchor by games, or its rating is undefined."""
    reached, frontier = {names.index(anchor)}, [names.index(anchor)]
    while frontier:
        i = frontier.pop()
        for j in np.flatnonzero(met[i]):
            if j not in reached:
                reached.add(int(j))
                frontier.append(int(j))
    missing = [names[i] for i in range(len(names)) if i not in reached]
    if missing:
        raise EloError(f"players not connected to the anchor {anchor!r} by any games: {', '.join(missing)}")


# ---------------------------------------------------------------------------------------------
# tournaments
# ---------------------------------------------------------------------------------------------
def round_robin_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair once."""
    return list(itertools.combinations(names, 2))


def ladder_pairs(series: Sequence[str], baselines: Sequence[str], neighbours: int = 1) -> list[tuple[str, str]]:
    """Each member of ``series`` (e.g. checkpoints in training order) against the next
    ``neighbours`` members and every baseline; baselines against each other. Far cheaper than a
    round robin for long series, still connected."""
    pairs = list(itertools.combinations(baselines, 2))
    for i, name in enumerate(series):
        pairs += [(name, other) for other in series[i + 1: i + 1 + neighbours]]
        pairs += [(name, base) for base in baselines]
    return pairs


def play_pairs(agents: Mapping[str, Agent], pairs: Sequence[tuple[str, str]], game: Othello, games: int,
               key: jax.Array, lines: Sequence[Sequence[int]] | None = None,
               report: Callable[[str], None] | None = None) -> list[Pairing]:
    """Play ``games`` games for every pair (same openings for all pairs) -> pairings."""
    from othello_jax.evaluation import arena

    open_key, key = jax.random.split(key)
    lines = arena.match_openings(game, games, open_key) if lines is None else lines
    results = []
    for a, b in pairs:
        key, match_key = jax.random.split(key)
        summary = arena.play_match(game, agents[a], agents[b], lines, match_key).summary()
        results.append(Pairing(a, b, summary.wins, summary.draws, summary.losses))
        if report is not None:
            report(f"{a} vs {b}: {summary.wins}/{summary.draws}/{summary.losses} (score {summary.score:.3f})")
    return results


def rate_agents(agents: Mapping[str, Agent], game: Othello, games: int, key: jax.Array, anchor: str,
                series: Sequence[str] | None = None, neighbours: int = 1,
                lines: Sequence[Sequence[int]] | None = None,
                report: Callable[[str], None] | None = None) -> tuple[Ratings, list[Pairing]]:
    """Rate ``agents``: a round robin, or with ``series`` (names in order, e.g. checkpoints) a
    ladder of series neighbours plus every other agent as a baseline."""
    if series is None:
        pairs = round_robin_pairs(list(agents))
    else:
        baselines = [name for name in agents if name not in series]
        pairs = ladder_pairs(series, baselines, neighbours)
    pairings = play_pairs(agents, pairs, game, games, key, lines, report)
    return fit_elo(pairings, anchor, players=list(agents)), pairings


def plot_elo(ratings: Ratings, series: Mapping[str, float], path: str | Path, title: str = "Elo over training",
             xlabel: str = "training iteration") -> Path:
    """Elo (with 95% intervals) of the ``series`` players against their x value (e.g. iteration);
    the other rated players are drawn as horizontal reference lines. Writes a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(series, key=lambda name: series[name])
    xs = [series[name] for name in names]
    ys = [ratings[name] for name in names]
    errors = [1.96 * float(ratings.stderr[ratings.players.index(name)]) for name in names]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label="checkpoints")
    for name in ratings.players:
        if name not in series:
            axes.axhline(ratings[name], linestyle="--", linewidth=1, color="gray")
            axes.annotate(name, (xs[0] if xs else 0, ratings[name]), fontsize=8, color="gray",
                          xytext=(2, 2), textcoords="offset points")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(f"Elo ({ratings.anchor} = 0)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
