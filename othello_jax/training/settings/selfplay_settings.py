"""Self-play settings: defaults (``default_selfplay_config``) and the typed records self-play reads.

:meth:`SelfPlaySettings.from_config` validates a run's ``selfplay`` section once (one-line
``InputError``) into frozen, hashable records (static arguments of a compiled function); code
below reads their fields. Defaults and their descriptions live only in the field tables
(:data:`SELFPLAY_FIELDS`, :data:`HARVEST_FIELDS`, :data:`RESIGN_FIELDS`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import ml_collections

from othello_jax.errors import need
from othello_jax.game import Othello
from othello_jax.records import Field, read_record, section

VALUE_TARGETS = ("z", "q", "zq", "lambda")

SELFPLAY_FIELDS: tuple[Field, ...] = (
    ("num_games", 256, "games played in parallel in each lane"),
    ("max_plies", 0, "the self-play scan's length; 0 = squares - 4 placements + 6 passes (longer games are cut)"),
    ("temperature", 1.0, "moves are sampled from the search's policy ** (1 / temperature) ..."),
    ("temperature_plies", 12, "... while the game's ply is below this; then the search's move is played"),
    ("value_target", "z", "z: the game's outcome; q: the search's value; zq: their mean; lambda: lambda-return"),
    ("td_lambda", 0.98, "the lambda of value_target='lambda'"),
    ("exact_endgame_empties", 0, "> 0: value targets of positions with at most this many empties solved exactly"),
)
HARVEST_FIELDS: tuple[Field, ...] = (
    ("per_tree", 0, "extra positions taken from each search tree (OLIVAW's harvesting); 0 = off"),
    ("min_visits", 4, "visits a node needs to be harvested"),
)
RESIGN_FIELDS: tuple[Field, ...] = (
    ("enabled", False, "resign games whose searched value falls below the threshold"),
    ("threshold", -0.9, "the initial threshold on the mover's searched value"),
    ("playout_fraction", 0.1, "share of games never resigned, to measure false positives"),
    ("target_false_positive_rate", 0.05, "the threshold is adjusted to keep false positives near this rate"),
    ("min_threshold", -1.0, "lowest threshold the adjustment may set"),
    ("max_threshold", -0.5, "highest threshold the adjustment may set"),
    ("max_change", 0.05, "largest change of the threshold per adjustment"),
    ("min_triggered", 4, "playout games below a threshold needed to judge it"),
)


def default_selfplay_config() -> ml_collections.ConfigDict:
    """Self-play settings with defaults (the search itself is configured separately)."""
    return section(SELFPLAY_FIELDS, harvest=section(HARVEST_FIELDS), resign=section(RESIGN_FIELDS))


Config = Mapping[str, Any] | ml_collections.ConfigDict

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
    """Resignation and its threshold's adjustment (see :data:`RESIGN_FIELDS` for each field)."""

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
    value_target: str
    td_lambda: float
    exact_endgame_empties: int
    harvest: HarvestSettings
    resign: ResignSettings
    final_board: bool

    @classmethod
    def from_config(cls, config: Config, final_board: bool = False) -> SelfPlaySettings:
        """The records of a ``selfplay`` section; one-line ``InputError`` naming the first impossible setting."""
        s = read_record(cls, config, "selfplay", harvest=HarvestSettings.from_config(config["harvest"]),
                        resign=ResignSettings.from_config(config["resign"]), final_board=bool(final_board))
        need(s.num_games >= 1, f"selfplay.num_games must be >= 1, got {s.num_games}")
        need(s.max_plies >= 0, f"selfplay.max_plies must be >= 0, got {s.max_plies}")
        need(s.temperature >= 0, f"selfplay.temperature must be >= 0, got {s.temperature}")
        need(s.value_target in VALUE_TARGETS,
             f"unknown selfplay.value_target {s.value_target!r}; choose from {', '.join(VALUE_TARGETS)}")
        need(0.0 <= s.td_lambda <= 1.0, f"selfplay.td_lambda must be in [0, 1], got {s.td_lambda}")
        need(s.exact_endgame_empties >= 0, "selfplay.exact_endgame_empties must be >= 0")
        return s


def check_selfplay_config(config: Config) -> SelfPlaySettings:
    """Raise a one-line ``InputError`` naming the first impossible setting; the validated record."""
    return SelfPlaySettings.from_config(config)


def num_plies(config: SelfPlaySettings | Config, game: Othello) -> int:
    """Static length T of the self-play scan (``max_plies``, or enough for any game)."""
    max_plies = config.max_plies if hasattr(config, "max_plies") else config["max_plies"]
    return int(max_plies) or game.num_squares - 4 + 6
