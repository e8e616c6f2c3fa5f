"""Search settings: defaults and validation with one-line errors."""

from __future__ import annotations

import ml_collections

from othello_jax.errors import InputError
from othello_jax.search.tree import TREE_UPDATES
from othello_jax.search.variants import ENGINES, VARIANTS


def default_search_config() -> ml_collections.ConfigDict:
    """Search settings with defaults; ``variant`` picks the algorithm (see ``VARIANTS``)."""
    config = ml_collections.ConfigDict()
    config.variant = "gumbel"
    config.num_simulations = 32
    config.max_depth = 0  # 0: no limit beyond the number of simulations
    config.symmetry = False  # evaluate the network on a random dihedral transform per position
    config.engine = "lockstep"  # the project's batched search; "mctx": mctx's public policies (same trees, slower)
    config.tree_updates = "scatter"  # lockstep tree writes: "scatter" (CPU/GPU) or "select" (one-hot, for TPU)
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


def check_search_config(config: ml_collections.ConfigDict) -> None:
    """Raise a one-line ``InputError`` naming the first impossible setting."""
    if config.variant not in VARIANTS:
        raise InputError(f"unknown search variant {config.variant!r}; choose from {', '.join(sorted(VARIANTS))}")
    if config.engine not in ENGINES:
        raise InputError(f"unknown search engine {config.engine!r}; choose from {', '.join(ENGINES)}")
    if config.tree_updates not in TREE_UPDATES:
        raise InputError(f"unknown search tree_updates {config.tree_updates!r}; choose from {', '.join(TREE_UPDATES)}")
    if int(config.num_simulations) < 1:
        raise InputError(f"search num_simulations must be >= 1, got {config.num_simulations}")
    if int(config.max_depth) < 0:
        raise InputError(f"search max_depth must be >= 0 (0 = unlimited), got {config.max_depth}")
    if int(config.max_num_considered_actions) < 1:
        raise InputError("search max_num_considered_actions must be >= 1")
    if not 0.0 <= float(config.dirichlet_fraction) <= 1.0:
        raise InputError(f"search dirichlet_fraction must be in [0, 1], got {config.dirichlet_fraction}")
