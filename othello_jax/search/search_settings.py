"""Search settings: defaults (``default_search_config``) and the typed record the search reads.

The config file and the command line set a ``ConfigDict``; :meth:`SearchSettings.from_config`
validates it once (one-line ``InputError``) into a frozen, hashable record, so a compiled
function can take it as a static argument. Code below reads its fields; defaults live only in
:func:`default_search_config`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import ml_collections

from othello_jax.errors import InputError, need
from othello_jax.search.tree import TREE_UPDATES
from othello_jax.search.variants import ENGINES, VARIANTS


def default_search_config() -> ml_collections.ConfigDict:
    """Search settings with defaults; ``variant`` picks the algorithm (see ``VARIANTS``)."""
    config = ml_collections.ConfigDict()
    config.variant = "gumbel"
    config.num_simulations = 32
    config.max_depth = 0  # 0: no limit beyond the number of simulations
    config.symmetry = False  # evaluate the network on a random dihedral transform per position
    # value the moves that end the game exactly at every evaluated node (search/network.py exact_endings):
    # on for players and evaluations (agents.playing_search_config); off here, in training's self-play,
    # until an A/B shows it pays there (it costs 3-13% of a search and compile time; RESULTS 2026-11-25)
    config.exact_endings = False
    # with exact_endings: replace a root move after which the opponent forces a wipeout within its
    # next two moves (three with few discs; search/traps.py); on for players, off in self-play
    config.avoid_traps = False
    config.engine = "lockstep"  # the project's batched search; "mctx": mctx's public policies (same trees, slower)
    # lockstep tree writes: "scatter" (the default everywhere) or "select" (one-hot; meant for TPU, unmeasured there)
    config.tree_updates = "scatter"
    # lockstep deep levels on the trees still working only (B/2, B/4, B/8 lanes; same trees; scatter updates only)
    config.compact_levels = True
    # gumbel
    config.max_num_considered_actions = 16
    config.gumbel_scale = 1.0
    config.value_scale = 0.1  # qtransform_completed_by_mix_value settings
    config.maxvisit_init = 50.0
    config.rescale_values = True
    config.use_mixed_value = True
    # puct
    config.pb_c_init = 1.25
    config.pb_c_base = 19652.0
    config.dirichlet_fraction = 0.25
    config.dirichlet_alpha_scale = 10.0  # alpha = min(1, scale / number of legal moves)
    return config


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The search settings of :func:`default_search_config`, typed and validated (see there for each)."""

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


Record = TypeVar("Record")

# the annotated field types a config value is converted to (configs hold ints where floats are meant)
_CASTS: dict[str, Callable[[Any], Any]] = {
    "str": str, "int": int, "bool": bool, "float": float,
    "tuple[int, ...]": lambda v: tuple(int(x) for x in v),
    "tuple[float, ...]": lambda v: tuple(float(x) for x in v),
}


def read_record(cls: type[Record], config: Mapping[str, Any] | ml_collections.ConfigDict, section: str,
                **given: Any) -> Record:
    """The dataclass ``cls`` with each field read from the config section ``config`` and converted
    to its annotated type, except those ``given`` (nested records, values resolved elsewhere).
    A field the section lacks, or a value that does not convert (``'nan'`` for an integer), is a
    one-line ``InputError`` naming it: defaults live in the config's defaults only. The one reader
    of every settings record (search, self-play, training)."""
    values = dict(given)
    for field in dataclasses.fields(cls):
        if field.name in values:
            continue
        need(field.name in config, f"config has no setting {section}.{field.name} (start from default_config())")
        kind, value = str(field.type), config[field.name]
        try:
            values[field.name] = _CASTS[kind](value)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{section}.{field.name} must be {kind}, got {value!r}") from None
    return cls(**values)


def search_settings(config: SearchSettings | Mapping[str, Any] | ml_collections.ConfigDict) -> SearchSettings:
    """``config`` as a :class:`SearchSettings` (validated once when given as a config)."""
    return config if isinstance(config, SearchSettings) else SearchSettings.from_config(config)


def check_search_config(config: SearchSettings | Mapping[str, Any] | ml_collections.ConfigDict) -> SearchSettings:
    """Raise a one-line ``InputError`` naming the first impossible setting; the validated record."""
    return search_settings(config)
