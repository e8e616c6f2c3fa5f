"""Monte-Carlo tree search over real Othello states with mctx, variants chosen by name.

One entry point serves self-play and the playing agents::

    config = default_search_config()            # config.variant = "gumbel" | "puct"
    result = run_search(config, apply_fn, variables, states, key, game)
    action = select_action(result, temperature, key)

``apply_fn(variables, observation) -> (logits, value)`` is the network in inference mode
(e.g. ``functools.partial(net.apply, train=False)``). The search steps the real game:
``discount = -1`` between plies (values are always from the mover's view), a move into a
finished game gets ``reward`` = the final result for the player who made it and ``discount =
0``, and terminal nodes are worth 0. Illegal actions get a vanishing prior at every node, not
only at the root (mctx masks only the root itself). A new variant is one function plus one
entry in ``VARIANTS`` (:mod:`othello_jax.search.variants`).
"""

from othello_jax.search.config import check_search_config, default_search_config
from othello_jax.search.lockstep import batched_backward, batched_simulate, faster_mctx, mctx_backward, mctx_simulate
from othello_jax.search.network import ApplyFn, evaluate, make_recurrent_fn, mask_logits
from othello_jax.search.run import SearchResult, run_search, select_action
from othello_jax.search.variants import VARIANTS, VariantOutput, dirichlet_noise

__all__ = [
    "VARIANTS", "ApplyFn", "SearchResult", "VariantOutput", "batched_backward", "batched_simulate",
    "check_search_config", "default_search_config", "dirichlet_noise", "evaluate", "faster_mctx",
    "make_recurrent_fn", "mask_logits", "mctx_backward", "mctx_simulate", "run_search", "select_action",
]
