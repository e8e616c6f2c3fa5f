"""Search variants by name: Gumbel MuZero and AlphaZero PUCT; a new variant is one entry in ``VARIANTS``.

Each runs on the engine ``settings.engine`` names: ``"lockstep"`` (the project's batched search,
:mod:`othello_jax.search.policies`) or ``"mctx"`` (mctx's public policies, unmodified); both
build the same trees (tested). A variant reads a
:class:`~othello_jax.search.search_settings.SearchSettings` (``settings`` below).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from othello_jax.search import keys, policies
from othello_jax.search.network import mask_logits

ENGINES = ("lockstep", "mctx")


class VariantOutput(NamedTuple):
    """What a variant returns: the move to play greedily, the policy target and the tree."""

    action: jax.Array
    policy_target: jax.Array
    tree: mctx.Tree


def gumbel_qtransform(settings: Any) -> Callable:
    """Gumbel's completed-Q transform with the settings' value scale and mixing."""
    return functools.partial(
        mctx.qtransform_completed_by_mix_value,
        value_scale=settings.value_scale,
        maxvisit_init=settings.maxvisit_init,
        rescale_values=settings.rescale_values,
        use_mixed_value=settings.use_mixed_value,
    )


def _search(settings: Any, lockstep_policy: Callable, mctx_policy: Callable,
            variables, key, root, recurrent_fn, invalid, **kwargs):
    """Run a variant's policy on the engine ``settings.engine`` names, with the arguments every variant shares.

    ``"lockstep"`` calls ``lockstep_policy`` (the project's engine, with ``settings.tree_updates``
    and ``settings.compact_levels``); ``"mctx"`` calls ``mctx_policy`` (mctx's public policy).
    ``kwargs`` are the variant's own settings.
    """
    if settings.engine == "mctx":
        policy = mctx_policy
    else:
        policy = functools.partial(lockstep_policy, updates=settings.tree_updates, compact=settings.compact_levels)
    return policy(variables, key, root, recurrent_fn, num_simulations=settings.num_simulations,
                  invalid_actions=invalid, max_depth=settings.max_depth or None, **kwargs)


def _gumbel(settings, variables, key, root, recurrent_fn, invalid) -> VariantOutput:
    """Gumbel MuZero: sequential halving at the root; target = improved policy."""
    out = _search(
        settings, policies.gumbel_muzero_policy, mctx.gumbel_muzero_policy,
        variables, key, root, recurrent_fn, invalid,
        qtransform=gumbel_qtransform(settings),
        max_num_considered_actions=settings.max_num_considered_actions,
        gumbel_scale=settings.gumbel_scale,
    )
    return VariantOutput(out.action, out.action_weights, out.search_tree)


def dirichlet_noise(key: jax.Array, legal: jax.Array, alpha_scale: float) -> jax.Array:
    """Dirichlet noise over each row's legal actions with alpha = min(1, scale / #legal)."""
    num_legal = jnp.sum(legal, axis=-1, keepdims=True).astype(jnp.float32)
    alpha = jnp.minimum(1.0, alpha_scale / jnp.maximum(num_legal, 1.0))
    gamma = keys.draw(lambda k, _, a: jax.random.gamma(k, a), key, legal.shape, jnp.broadcast_to(alpha, legal.shape))
    gamma = jnp.where(legal, gamma, 0.0)
    return gamma / jnp.maximum(jnp.sum(gamma, axis=-1, keepdims=True), jnp.finfo(jnp.float32).tiny)


def puct_root(settings: Any, key: jax.Array, root: mctx.RootFnOutput,
              invalid: jax.Array) -> tuple[mctx.RootFnOutput, jax.Array]:
    """PUCT's root: Dirichlet noise mixed into the prior (``settings.dirichlet_fraction``), then
    masked; ``(root, the search's key)``."""
    noise_key, search_key = keys.split(key)
    legal = ~invalid
    fraction = settings.dirichlet_fraction
    noise = dirichlet_noise(noise_key, legal, settings.dirichlet_alpha_scale)
    probs = (1.0 - fraction) * jax.nn.softmax(root.prior_logits) + fraction * noise
    return root.replace(prior_logits=mask_logits(jnp.log(jnp.maximum(probs, 1e-30)), legal)), search_key


def puct_action(tree: mctx.Tree, root: mctx.RootFnOutput, invalid: jax.Array) -> jax.Array:
    """PUCT's move: the most visited legal move, ties broken by the (noisy) prior."""
    visits = tree.children_visits[:, 0]
    score = jnp.where(~invalid, visits.astype(jnp.float32) + 1e-3 * jax.nn.softmax(root.prior_logits), -1.0)
    return jnp.argmax(score, axis=-1).astype(jnp.int32)


def _puct(settings, variables, key, root, recurrent_fn, invalid) -> VariantOutput:
    """AlphaZero PUCT with root Dirichlet noise; target = root visit distribution."""
    root, search_key = puct_root(settings, key, root, invalid)
    out = _search(
        settings, policies.muzero_policy,
        functools.partial(mctx.muzero_policy, dirichlet_fraction=0.0),  # noise added above
        variables, search_key, root, recurrent_fn, invalid,
        qtransform=mctx.qtransform_by_parent_and_siblings,
        pb_c_init=settings.pb_c_init,
        pb_c_base=settings.pb_c_base,
    )
    return VariantOutput(puct_action(out.search_tree, root, invalid), out.action_weights, out.search_tree)


VariantFn = Callable[..., VariantOutput]
VARIANTS: dict[str, VariantFn] = {
    "gumbel": _gumbel,
    "puct": _puct,
}
