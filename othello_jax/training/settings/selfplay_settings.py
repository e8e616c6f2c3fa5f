"""Self-play settings: defaults (``default_selfplay_config``) and the typed records self-play reads.

:meth:`SelfPlaySettings.from_config` validates a run's ``selfplay`` section once (one-line
``InputError``) into frozen, hashable records (static arguments of a compiled function); code
below reads their fields. Defaults live only in :func:`default_selfplay_config`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import ml_collections

from othello_jax.agents.specs import parse_spec
from othello_jax.errors import InputError, need
from othello_jax.game import Othello
from othello_jax.search.search_settings import read_record

VALUE_TARGETS = ("z", "q", "zq", "lambda")
OPPONENT_KINDS = ("random", "greedy", "alphabeta")  # fixed opponents self-play can compile in


def default_selfplay_config() -> ml_collections.ConfigDict:
    """Self-play settings with defaults (the search itself is configured separately)."""
    c = ml_collections.ConfigDict()
    c.num_games = 256  # B, games played in parallel
    c.max_plies = 0  # scan length; 0 = squares - 4 placements + 6 passes; longer games are cut
    c.temperature = 1.0  # sample moves from target ** (1 / temperature) ...
    c.temperature_plies = 12  # ... while the game's ply is below this; then play the search's move
    # > 0: each game opens with k uniformly random legal moves, k drawn per game from 0..random_plies,
    # played before the search starts and not recorded (positions beyond the network's own narrow
    # opening book; no gain at equal time on 6x6: experiments/RESULTS.md, "Random opening moves")
    c.random_plies = 0
    c.value_target = "z"  # "z" outcome, "q" search value, "zq" their mean, "lambda" lambda-return
    c.td_lambda = 0.98
    c.exact_endgame_empties = 0  # > 0: value targets of positions with <= E empties solved exactly
    # > 0: value targets of positions with <= E empties (and more than exact_endgame_empties) solved
    # exactly by the C solver on the host while the device runs the next iteration, written back into
    # the replay buffer two iterations later (othello_jax/training/runner/host_labels.py); one process only
    c.host_exact_empties = 0
    c.host_exact_workers = 1  # solver processes for host_exact_empties (1: in the training process)
    # with host_exact_empties: the policy targets of those positions become uniform over their
    # optimal moves (exact disc margin), solved with the values (3-5x their cost at 9-16 empties)
    # Off: +3.3 points of optimal moves at 10 minutes, none at 26 (RESULTS.md, 2026-11-26)
    c.host_exact_policy = False
    # > 0: this share of each lane's games is played against a fixed opponent (``opponent``) for
    # positions self-play never reaches (the max-flips lines behind 8x8's wipeouts); the opponent
    # plays black in half of them and white in the other half. The network searches every position
    # of those games as usual, and every position trains on the search's policy and value targets
    c.opponent_share = 0.0
    c.opponent = "greedy"  # an agent spec: "random", "greedy" or "alphabeta:depth=D"
    c.harvest = ml_collections.ConfigDict(dict(
        per_tree=0,  # extra positions taken from each search tree (OLIVAW); 0 = off
        min_visits=4,  # a node needs at least this many visits to be harvested
    ))
    c.resign = ml_collections.ConfigDict(dict(
        enabled=False,
        threshold=-0.9,  # initial threshold on the mover's searched value
        playout_fraction=0.1,  # games never resigned, to measure false positives
        target_false_positive_rate=0.05,
        min_threshold=-1.0,  # the adjusted threshold stays within [min, max]
        max_threshold=-0.5,
        max_change=0.05,  # per call
        min_triggered=4,  # playout games needed below a threshold to judge it
    ))
    return c


Config = Mapping[str, Any] | ml_collections.ConfigDict

# settings added after runs were written: a config without them (an old workdir's) reads them at
# their defaults, which leave self-play as it was
ADDED_SETTINGS = ("host_exact_empties", "host_exact_workers", "host_exact_policy", "random_plies", "opponent_share",
                  "opponent")


@dataclasses.dataclass(frozen=True)
class HarvestSettings:
    """OLIVAW harvesting: ``per_tree`` extra positions per search tree (0 = off), nodes of at least ``min_visits``."""

    per_tree: int
    min_visits: int

    @classmethod
    def from_config(cls, config: Config) -> HarvestSettings:
        settings = read_record(cls, config, "selfplay.harvest")
        need(settings.per_tree >= 0, "selfplay.harvest.per_tree must be >= 0")
        need(settings.min_visits >= 1, "selfplay.harvest.min_visits must be >= 1")
        return settings


@dataclasses.dataclass(frozen=True)
class ResignSettings:
    """Resignation and its threshold's adjustment (see :func:`default_selfplay_config` for each field)."""

    enabled: bool
    threshold: float
    playout_fraction: float
    target_false_positive_rate: float
    min_threshold: float
    max_threshold: float
    max_change: float
    min_triggered: int

    @classmethod
    def from_config(cls, config: Config) -> ResignSettings:
        r = read_record(cls, config, "selfplay.resign")
        need(0.0 <= r.playout_fraction <= 1.0, "selfplay.resign.playout_fraction must be in [0, 1]")
        need(-1.0 <= r.min_threshold <= r.max_threshold <= 1.0,
             "selfplay.resign thresholds must satisfy -1 <= min_threshold <= max_threshold <= 1")
        need(0.0 < r.target_false_positive_rate < 1.0,
             "selfplay.resign.target_false_positive_rate must be in (0, 1)")
        return r


@dataclasses.dataclass(frozen=True)
class SelfPlaySettings:
    """One self-play call's settings. ``final_board``: record each position's final board (for
    score/ownership heads; decided by the network, not the config)."""

    num_games: int
    max_plies: int
    temperature: float
    temperature_plies: int
    random_plies: int
    value_target: str
    td_lambda: float
    exact_endgame_empties: int
    host_exact_empties: int
    host_exact_workers: int
    host_exact_policy: bool
    opponent_share: float
    opponent: str
    harvest: HarvestSettings
    resign: ResignSettings
    final_board: bool

    @classmethod
    def from_config(cls, config: Config, final_board: bool = False) -> SelfPlaySettings:
        """The records of a ``selfplay`` section; one-line ``InputError`` naming the first impossible setting."""
        defaults = default_selfplay_config()
        added = {name: defaults[name] for name in ADDED_SETTINGS if name not in config}
        s = read_record(cls, config, "selfplay", harvest=HarvestSettings.from_config(config["harvest"]),
                        resign=ResignSettings.from_config(config["resign"]), final_board=bool(final_board),
                        **added)
        need(s.num_games >= 1, f"selfplay.num_games must be >= 1, got {s.num_games}")
        need(s.max_plies >= 0, f"selfplay.max_plies must be >= 0, got {s.max_plies}")
        need(s.temperature >= 0, f"selfplay.temperature must be >= 0, got {s.temperature}")
        need(s.random_plies >= 0, f"selfplay.random_plies must be >= 0 (0 = off), got {s.random_plies}")
        need(s.value_target in VALUE_TARGETS,
             f"unknown selfplay.value_target {s.value_target!r}; choose from {', '.join(VALUE_TARGETS)}")
        need(0.0 <= s.td_lambda <= 1.0, f"selfplay.td_lambda must be in [0, 1], got {s.td_lambda}")
        need(s.exact_endgame_empties >= 0, "selfplay.exact_endgame_empties must be >= 0")
        need(s.host_exact_empties >= 0,
             f"selfplay.host_exact_empties must be >= 0 (0 = off), got {s.host_exact_empties}")
        need(s.host_exact_empties == 0 or s.host_exact_empties > s.exact_endgame_empties,
             f"selfplay.host_exact_empties={s.host_exact_empties} must exceed selfplay.exact_endgame_empties="
             f"{s.exact_endgame_empties} (those positions are solved in self-play already) or be 0 (off)")
        need(s.host_exact_workers >= 1, f"selfplay.host_exact_workers must be >= 1, got {s.host_exact_workers}")
        need(not s.host_exact_policy or s.host_exact_empties > 0,
             "selfplay.host_exact_policy needs selfplay.host_exact_empties > 0 (the positions it labels)")
        need(0.0 <= s.opponent_share <= 1.0, f"selfplay.opponent_share must be in [0, 1], got {s.opponent_share}")
        if s.opponent_share > 0:
            check_opponent(s.opponent)
        return s

    def opponent_games(self) -> int:
        """Games per lane played against ``opponent`` (the lane's first ones; 0 = off)."""
        return int(round(self.opponent_share * self.num_games))


def check_opponent(spec: str) -> None:
    """One-line ``InputError`` unless ``spec`` names a fixed opponent self-play can compile in."""
    try:
        kind, options = parse_spec(spec)
    except InputError as error:  # a malformed spec: say which setting holds it
        raise InputError(f"selfplay.opponent {spec!r}: {error}") from None
    need(kind in OPPONENT_KINDS and not {"solve", "solver"} & set(options),
         f"selfplay.opponent must be one of {', '.join(OPPONENT_KINDS)} (e.g. alphabeta:depth=2, without solve=), "
         f"got {spec!r}")


def check_selfplay_config(config: Config) -> SelfPlaySettings:
    """Raise a one-line ``InputError`` naming the first impossible setting; the validated record."""
    return SelfPlaySettings.from_config(config)


def num_plies(config: SelfPlaySettings | Config, game: Othello) -> int:
    """Static length T of the self-play scan (``max_plies``, or enough for any game)."""
    max_plies = config.max_plies if hasattr(config, "max_plies") else config["max_plies"]
    return int(max_plies) or game.num_squares - 4 + 6
