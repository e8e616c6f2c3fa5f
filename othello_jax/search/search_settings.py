"""Search settings: defaults (``default_search_config``) and the typed record the search reads.

The config file and the command line set a ``ConfigDict``; :meth:`SearchSettings.from_config`
validates it once (one-line ``InputError``) into a frozen, hashable record, so a compiled
function can take it as a static argument. Code below reads its fields; defaults and their
descriptions live only in :data:`SEARCH_FIELDS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import ml_collections

from othello_jax.errors import need
from othello_jax.records import Field, read_record, section
from othello_jax.search.tree import TREE_UPDATES
from othello_jax.search.variants import ENGINES, VARIANTS

SEARCH_FIELDS: tuple[Field, ...] = (
    ("variant", "gumbel", "the search algorithm: gumbel (Gumbel MuZero) or puct (AlphaZero's PUCT); see VARIANTS"),
    ("num_simulations", 32, "simulations per move"),
    ("max_depth", 0, "deepest a simulation descends; 0 = no limit beyond the number of simulations"),
    ("symmetry", False, "evaluate the network on a random dihedral transform of each position"),
    ("exact_endings", False, "value the moves that end the game exactly at every evaluated node (on for players "
     "and evaluations; off in self-play, where it cost 3-13% of a search and gained nothing)"),
    ("avoid_traps", False, "with exact_endings: replace a root move after which the opponent forces a wipeout "
     "within its next two moves (search/traps.py); on for players, off in self-play"),
    ("engine", "lockstep", "lockstep: the project's batched search; mctx: mctx's public policies (same trees, slower)"),
    ("tree_updates", "scatter",
     "lockstep's tree writes: scatter, or select (one-hot; meant for TPU, unmeasured there)"),
    ("compact_levels", True, "lockstep's deep levels run on the trees still working only (same trees, faster)"),
    ("max_num_considered_actions", 16, "gumbel: root moves sampled without replacement (sequential halving)"),
    ("gumbel_scale", 1.0, "gumbel: scale of the Gumbel noise at the root (0 = none, as players use)"),
    ("value_scale", 0.1, "gumbel: qtransform_completed_by_mix_value's value_scale"),
    ("maxvisit_init", 50.0, "gumbel: qtransform_completed_by_mix_value's maxvisit_init"),
    ("rescale_values", True, "gumbel: rescale the completed Q values to [0, 1]"),
    ("use_mixed_value", True, "gumbel: complete unvisited moves with the mixed value (else the raw value)"),
    ("pb_c_init", 1.25, "puct: exploration constant c_init"),
    ("pb_c_base", 19652.0, "puct: exploration constant c_base"),
    ("dirichlet_fraction", 0.25, "puct: share of Dirichlet noise in the root's prior (0 = none, as players use)"),
    ("dirichlet_alpha_scale", 10.0, "puct: Dirichlet alpha = min(1, scale / number of legal moves)"),
)


def default_search_config() -> ml_collections.ConfigDict:
    """Search settings with defaults (:data:`SEARCH_FIELDS`); ``variant`` picks the algorithm (see ``VARIANTS``)."""
    return section(SEARCH_FIELDS)


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The search settings of :data:`SEARCH_FIELDS`, typed and validated (see there for each)."""

    variant: str
    num_simulations: int
    max_depth: int
    symmetry: bool
    exact_endings: bool
    avoid_traps: bool
    engine: str
    tree_updates: str
    compact_levels: bool
    max_num_considered_actions: int
    gumbel_scale: float
    value_scale: float
    maxvisit_init: float
    rescale_values: bool
    use_mixed_value: bool
    pb_c_init: float
    pb_c_base: float
    dirichlet_fraction: float
    dirichlet_alpha_scale: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | ml_collections.ConfigDict) -> SearchSettings:
        """The record of a search config (``ConfigDict`` or dict); one-line ``InputError`` naming the
        first missing or impossible setting."""
        settings = read_record(cls, config, "search")
        settings.check()
        return settings

    def check(self) -> None:
        need(self.variant in VARIANTS,
             f"unknown search variant {self.variant!r}; choose from {', '.join(sorted(VARIANTS))}")
        need(self.engine in ENGINES, f"unknown search engine {self.engine!r}; choose from {', '.join(ENGINES)}")
        need(self.tree_updates in TREE_UPDATES,
             f"unknown search tree_updates {self.tree_updates!r}; choose from {', '.join(TREE_UPDATES)}")
        need(self.num_simulations >= 1, f"search num_simulations must be >= 1, got {self.num_simulations}")
        need(self.max_depth >= 0, f"search max_depth must be >= 0 (0 = unlimited), got {self.max_depth}")
        need(self.exact_endings or not self.avoid_traps, "search avoid_traps needs search exact_endings")
        need(self.max_num_considered_actions >= 1, "search max_num_considered_actions must be >= 1")
        need(0.0 <= self.dirichlet_fraction <= 1.0,
             f"search dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")


def check_search_config(config: SearchSettings | Mapping[str, Any] | ml_collections.ConfigDict) -> SearchSettings:
    """Raise a one-line ``InputError`` naming the first impossible setting; the validated record."""
    return config if isinstance(config, SearchSettings) else SearchSettings.from_config(config)
