"""Monte-Carlo tree search over real Othello states, variants chosen by name.

One entry point serves self-play and the playing agents::

    config = default_search_config()            # config.variant = "gumbel" | "puct"
    result = run_search(config, apply_fn, variables, states, key, game)
    action = select_action(result, temperature, key)

``apply_fn(variables, observation) -> (logits, value)`` is the network in inference mode
(e.g. ``functools.partial(net.apply, train=False)``). The search steps the real game:
``discount = -1`` between plies (values are always from the mover's view), a move into a
finished game gets ``reward`` = the final result for the player who made it and ``discount =
0``, and terminal nodes are worth 0. Illegal actions get a vanishing prior at every node, not
only at the root (mctx masks only the root itself). Each evaluated node also values the moves
that end the game exactly (``search.exact_endings``, see
:func:`~othello_jax.search.network.exact_endings`). A new variant is one function plus one entry
in ``VARIANTS`` (:mod:`othello_jax.search.variants`).

The search engine (``config.engine``) is the project's own batched search by default: all trees
walk, expand and back up in lockstep (:mod:`~othello_jax.search.lockstep`) over an ``mctx.Tree``
(:mod:`~othello_jax.search.tree`), with mctx's public selection functions
(:mod:`~othello_jax.search.policies`); deep levels, where most trees are done, run on the trees
still working only (:mod:`~othello_jax.search.compaction`). ``"mctx"`` runs mctx's public
policies instead. Both build the same trees. Only mctx's public API is used (ruff bans its
private modules).
"""

from othello_jax.search.network import ApplyFn, evaluate, make_recurrent_fn, mask_logits
from othello_jax.search.policies import gumbel_muzero_policy, muzero_policy
from othello_jax.search.run import SearchResult, run_search, select_action
from othello_jax.search.search_settings import (
    SearchSettings,
    check_search_config,
    default_search_config,
)
from othello_jax.search.tree import TREE_UPDATES
from othello_jax.search.variants import ENGINES, VARIANTS, VariantOutput, dirichlet_noise

__all__ = [
    "ENGINES", "TREE_UPDATES", "VARIANTS", "ApplyFn", "SearchResult", "VariantOutput", "check_search_config",
    "default_search_config", "dirichlet_noise", "evaluate", "gumbel_muzero_policy", "make_recurrent_fn",
    "mask_logits", "muzero_policy", "run_search", "select_action",
    "SearchSettings",
]
