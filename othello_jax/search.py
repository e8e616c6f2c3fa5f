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
entry in ``VARIANTS``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Callable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import mctx
import ml_collections

from othello_jax.fusion import materialize
from othello_jax.game import Othello, State
from othello_jax.game.symmetry import NUM_SYMMETRIES, inverse, transform_grid, transform_policy

ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]


# ---------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------
def default_search_config() -> ml_collections.ConfigDict:
    """Search settings with defaults; ``variant`` picks the algorithm (see ``VARIANTS``)."""
    config = ml_collections.ConfigDict()
    config.variant = "gumbel"
    config.num_simulations = 32
    config.max_depth = 0  # 0: no limit beyond the number of simulations
    config.symmetry = False  # evaluate the network on a random dihedral transform per position
    config.batched_backward = True  # mctx's backup with O(B) updates per level (same trees, faster)
    config.batched_simulate = True  # mctx's tree walk in lockstep, one selection per level (same trees, faster)
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
    """Raise a one-line ``ValueError`` naming the first impossible setting."""
    if config.variant not in VARIANTS:
        raise ValueError(f"unknown search variant {config.variant!r}; choose from {', '.join(sorted(VARIANTS))}")
    if int(config.num_simulations) < 1:
        raise ValueError(f"search num_simulations must be >= 1, got {config.num_simulations}")
    if int(config.max_depth) < 0:
        raise ValueError(f"search max_depth must be >= 0 (0 = unlimited), got {config.max_depth}")
    if int(config.max_num_considered_actions) < 1:
        raise ValueError("search max_num_considered_actions must be >= 1")
    if not 0.0 <= float(config.dirichlet_fraction) <= 1.0:
        raise ValueError(f"search dirichlet_fraction must be in [0, 1], got {config.dirichlet_fraction}")


# ---------------------------------------------------------------------------------------------
# network evaluation
# ---------------------------------------------------------------------------------------------
def mask_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    """Logits with illegal actions set to the most negative finite value (no NaN if none legal).

    Not shifted by the maximum: every consumer (softmax, mctx) is shift-invariant, and on CPU
    the extra reduction fused into the policy head's matmul made it several times slower.
    """
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def _pick(stacked: jax.Array, index: jax.Array) -> jax.Array:
    """``stacked[index[b], b]`` for a leading axis of alternatives, without a gather."""
    one_hot = index[None, :] == jnp.arange(stacked.shape[0])[:, None]
    one_hot = one_hot.reshape(one_hot.shape + (1,) * (stacked.ndim - 2))
    return jnp.sum(jnp.where(one_hot, stacked, 0), axis=0).astype(stacked.dtype)


def evaluate(apply_fn: ApplyFn, variables: dict, states: State, game: Othello,
             key: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Masked prior logits ``[B, A]`` and value ``[B]`` of a batch of states (mover's view).

    With a ``key``, each position is shown to the network under a random dihedral symmetry and
    the policy is mapped back, which averages out orientation biases of the network.
    """
    obs = game.observation(states)
    if key is None:
        logits, value = apply_fn(variables, obs)
    else:
        k = jax.random.randint(key, obs.shape[:1], 0, NUM_SYMMETRIES)
        views = jnp.stack([transform_grid(obs, j, axes=(-3, -2)) for j in range(NUM_SYMMETRIES)])
        logits, value = apply_fn(variables, _pick(views, k))
        back = jnp.stack([transform_policy(logits, inverse(j), game.size) for j in range(NUM_SYMMETRIES)])
        logits = _pick(back, k)
    return mask_logits(logits.astype(jnp.float32), game.legal_moves(states)), value.astype(jnp.float32)


# ---------------------------------------------------------------------------------------------
# the game as an mctx environment
# ---------------------------------------------------------------------------------------------
def step_materialized(game: Othello, state: State, action: jax.Array) -> State:
    """``game.step`` whose result XLA must store before using it.

    Otherwise XLA fuses the whole move generator into each consumer that broadcasts the new
    state over squares (legal mask, observation, prior masking) and recomputes it once per
    square: about 10x slower on CPU. (``optimization_barrier`` does not stop that fusion there.)
    """
    return materialize(game.step(state, action))


def make_recurrent_fn(apply_fn: ApplyFn, game: Othello, symmetry: bool) -> mctx.RecurrentFn:
    """mctx ``recurrent_fn`` stepping the real game; ``params`` are the network variables."""

    def recurrent_fn(variables, key, action, state: State):
        nxt = step_materialized(game, state, action)
        ended_now = nxt.terminal & ~state.terminal
        result, _ = game.outcome(nxt)  # for the side to move in nxt; the mover of `action` gets -result
        logits, value = evaluate(apply_fn, variables, nxt, game, key if symmetry else None)
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(ended_now, -result, 0).astype(jnp.float32),
            discount=jnp.where(nxt.terminal, 0.0, -1.0).astype(jnp.float32),
            prior_logits=logits,
            value=jnp.where(nxt.terminal, 0.0, value),
        )
        return output, nxt

    return recurrent_fn


# ---------------------------------------------------------------------------------------------
# a faster backup for mctx
# ---------------------------------------------------------------------------------------------
def batched_backward(tree: mctx.Tree, leaf_index: jax.Array) -> mctx.Tree:
    """mctx's backup (leaf to root) for a whole batch, touching one node per tree per level.

    mctx vmaps a per-tree ``while_loop``; batching it turns every level into a select over the
    whole tree arrays ([B, nodes, actions]) so that finished trees keep their values, which
    makes the backup cost grow with the tree size (it dominated the search at B = 2048). Here
    the loop runs while any tree is unfinished and finished trees rewrite their root's values
    unchanged, so each level costs O(B). The arithmetic is mctx's, and the trees are
    bit-identical (tested).
    """
    rows = jnp.arange(leaf_index.shape[0])
    root = mctx.Tree.ROOT_INDEX

    def level(carry):
        tree, leaf_value, index = carry
        active = index != root
        parent = jnp.where(active, tree.parents[rows, index], root)
        action = jnp.where(active, tree.action_from_parent[rows, index], 0)
        count = tree.node_visits[rows, parent]
        leaf_value = jnp.where(active, tree.children_rewards[rows, parent, action]
                               + tree.children_discounts[rows, parent, action] * leaf_value, leaf_value)
        old_value = tree.node_values[rows, parent]
        parent_value = (old_value * count + leaf_value) / (count + 1.0)
        child_visits = tree.children_visits[rows, parent, action]
        child_value = tree.children_values[rows, parent, action]
        tree = tree.replace(
            node_values=tree.node_values.at[rows, parent].set(jnp.where(active, parent_value, old_value)),
            node_visits=tree.node_visits.at[rows, parent].set(jnp.where(active, count + 1, count)),
            children_values=tree.children_values.at[rows, parent, action].set(
                jnp.where(active, tree.node_values[rows, index], child_value)),
            children_visits=tree.children_visits.at[rows, parent, action].set(
                jnp.where(active, child_visits + 1, child_visits)),
        )
        return tree, leaf_value, jnp.where(active, parent, index)

    leaf_index = jnp.asarray(leaf_index, jnp.int32)
    start = (tree, tree.node_values[rows, leaf_index], leaf_index)
    tree, _, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[2] != root), level, start)
    return tree


def batched_simulate(rng_key: jax.Array, tree: mctx.Tree, action_selection_fn, max_depth: int):
    """mctx's tree walk (root to an unexpanded action) for a whole batch, one level per iteration.

    mctx vmaps a per-tree ``while_loop`` whose depth counter is per tree, so under ``vmap`` its
    ``lax.cond(depth == 0, root selection, interior selection)`` becomes a select that computes
    both selections at every level. Here every tree walks in lockstep (all start at the root,
    finished trees keep their result), so the depth is one scalar for the batch, the cond stays
    a cond, and each level runs only the selection it needs. Keys are split exactly as mctx
    splits them, so the trees are bit-identical (tested). Returns ``(parent_index, action)``.
    """
    select = jax.vmap(action_selection_fn, in_axes=(0, 0, 0, None))
    rows = jnp.arange(rng_key.shape[0])
    no_parent = jnp.full(rows.shape, mctx.Tree.NO_PARENT, jnp.int32)

    def level(carry):
        keys, node, action, next_node, depth, active = carry
        split = jax.vmap(jax.random.split)(keys)
        new_keys, selection_keys = split[:, 0], split[:, 1]
        new_action = select(selection_keys, tree, next_node, depth)
        reached = tree.children_index[rows, next_node, new_action]
        depth = depth + 1
        going_on = (reached != mctx.Tree.UNVISITED) & (depth < max_depth)

        def keep(new, old):
            where = active.reshape(active.shape + (1,) * (new.ndim - 1))
            return jnp.where(where, new, old)

        return (keep(new_keys, keys), keep(next_node, node), keep(new_action, action), keep(reached, next_node),
                depth, active & going_on)

    start = (rng_key, no_parent, no_parent, jnp.full(rows.shape, mctx.Tree.ROOT_INDEX, jnp.int32),
             jnp.zeros((), tree.children_prior_logits.dtype), jnp.ones(rows.shape, bool))
    _, node, action, _, _, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[5]), level, start)
    return node, action


@contextlib.contextmanager
def _swapped(name: str, replacement: Callable, enabled: bool) -> Iterator[bool]:
    """While tracing inside this context, mctx's search loop calls ``replacement`` for its ``name``.

    mctx calls its module-level ``backward``/``simulate`` (batched over B) from its search
    loop; the function is swapped only for the duration of the trace and restored afterwards.
    Yields whether the swap happened (False if disabled or if mctx's function no longer takes
    the replacement's parameters).
    """
    from mctx._src import search as mctx_search  # private: checked before use

    original = getattr(mctx_search, name, None)
    swap = (enabled and callable(original)
            and list(inspect.signature(original).parameters) == list(inspect.signature(replacement).parameters))
    if swap:
        setattr(mctx_search, name, replacement)
    try:
        yield swap
    finally:
        if swap:
            setattr(mctx_search, name, original)


def mctx_backward(enabled: bool):
    """Context: mctx backs up with :func:`batched_backward` (see :func:`_swapped`)."""
    return _swapped("backward", batched_backward, enabled)


def mctx_simulate(enabled: bool):
    """Context: mctx walks its trees with :func:`batched_simulate` (see :func:`_swapped`)."""
    return _swapped("simulate", batched_simulate, enabled)


@contextlib.contextmanager
def faster_mctx(config: ml_collections.ConfigDict) -> Iterator[None]:
    """Both swaps as ``config.batched_backward`` and ``config.batched_simulate`` ask."""
    with mctx_backward(bool(config.batched_backward)), mctx_simulate(bool(config.get("batched_simulate", True))):
        yield


# ---------------------------------------------------------------------------------------------
# variants
# ---------------------------------------------------------------------------------------------
class VariantOutput(NamedTuple):
    """What a variant returns: the move to play greedily, the policy target and the tree."""

    action: jax.Array
    policy_target: jax.Array
    tree: mctx.Tree


def _qtransform(config: ml_collections.ConfigDict):
    return functools.partial(
        mctx.qtransform_completed_by_mix_value,
        value_scale=float(config.value_scale),
        maxvisit_init=float(config.maxvisit_init),
        rescale_values=bool(config.rescale_values),
        use_mixed_value=bool(config.use_mixed_value),
    )


def _max_depth(config: ml_collections.ConfigDict) -> int | None:
    return int(config.max_depth) or None


def _gumbel(config, variables, key, root, recurrent_fn, invalid) -> VariantOutput:
    """Gumbel MuZero: sequential halving at the root; target = improved policy."""
    out = mctx.gumbel_muzero_policy(
        variables, key, root, recurrent_fn,
        num_simulations=int(config.num_simulations),
        invalid_actions=invalid,
        max_depth=_max_depth(config),
        qtransform=_qtransform(config),
        max_num_considered_actions=int(config.max_num_considered_actions),
        gumbel_scale=float(config.gumbel_scale),
    )
    return VariantOutput(out.action, out.action_weights, out.search_tree)


def dirichlet_noise(key: jax.Array, legal: jax.Array, alpha_scale: float) -> jax.Array:
    """Dirichlet noise over each row's legal actions with alpha = min(1, scale / #legal)."""
    num_legal = jnp.sum(legal, axis=-1, keepdims=True).astype(jnp.float32)
    alpha = jnp.minimum(1.0, alpha_scale / jnp.maximum(num_legal, 1.0))
    gamma = jax.random.gamma(key, jnp.broadcast_to(alpha, legal.shape))
    gamma = jnp.where(legal, gamma, 0.0)
    return gamma / jnp.maximum(jnp.sum(gamma, axis=-1, keepdims=True), jnp.finfo(jnp.float32).tiny)


def _puct(config, variables, key, root, recurrent_fn, invalid) -> VariantOutput:
    """AlphaZero PUCT with root Dirichlet noise; target = root visit distribution."""
    noise_key, search_key = jax.random.split(key)
    legal = ~invalid
    fraction = float(config.dirichlet_fraction)
    noise = dirichlet_noise(noise_key, legal, float(config.dirichlet_alpha_scale))
    probs = (1.0 - fraction) * jax.nn.softmax(root.prior_logits) + fraction * noise
    root = root.replace(prior_logits=mask_logits(jnp.log(jnp.maximum(probs, 1e-30)), legal))
    out = mctx.muzero_policy(
        variables, search_key, root, recurrent_fn,
        num_simulations=int(config.num_simulations),
        invalid_actions=invalid,
        max_depth=_max_depth(config),
        dirichlet_fraction=0.0,  # noise added above, with a per-root alpha
        pb_c_init=float(config.pb_c_init),
        pb_c_base=float(config.pb_c_base),
    )
    visits = out.search_tree.children_visits[:, 0]
    # most visited legal move; ties broken by the prior
    score = jnp.where(legal, visits.astype(jnp.float32) + 1e-3 * jax.nn.softmax(root.prior_logits), -1.0)
    return VariantOutput(jnp.argmax(score, axis=-1).astype(jnp.int32), out.action_weights, out.search_tree)


VariantFn = Callable[..., VariantOutput]
VARIANTS: dict[str, VariantFn] = {
    "gumbel": _gumbel,
    "puct": _puct,
}


# ---------------------------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------------------------
class SearchResult(NamedTuple):
    """Search outcome for a batch of root states (leading axis B).

    action: int32[B] move to play at zero temperature (legal unless the game is over).
    policy_target: float32[B, A] training target (sums to 1 over legal actions).
    root_value: float32[B] search value of the root, mover's view.
    q: float32[B, A] root action values (mover's view; the root value where unvisited).
    visit_counts: int32[B, A] root visit counts.
    prior_logits: float32[B, A] the network's masked root logits.
    network_value: float32[B] the network's root value.
    legal: bool[B, A] legal actions at the root.
    tree: the mctx tree (for harvesting extra training positions).
    """

    action: jax.Array
    policy_target: jax.Array
    root_value: jax.Array
    q: jax.Array
    visit_counts: jax.Array
    prior_logits: jax.Array
    network_value: jax.Array
    legal: jax.Array
    tree: mctx.Tree


def run_search(config: ml_collections.ConfigDict, apply_fn: ApplyFn, variables: dict,
               states: State, key: jax.Array, game: Othello) -> SearchResult:
    """Search every root in the batch ``states`` (leading axis B) with the configured variant."""
    check_search_config(config)
    eval_key, search_key = jax.random.split(key)
    symmetry = bool(config.symmetry)
    logits, value = evaluate(apply_fn, variables, states, game, eval_key if symmetry else None)
    legal = game.legal_moves(states)
    root = mctx.RootFnOutput(prior_logits=logits, value=jnp.where(states.terminal, 0.0, value),
                             embedding=states)
    recurrent_fn = make_recurrent_fn(apply_fn, game, symmetry)
    with faster_mctx(config):
        out = VARIANTS[config.variant](config, variables, search_key, root, recurrent_fn, ~legal)
    tree = out.tree
    summary = tree.summary()
    visits = tree.children_visits[:, 0]
    q = jnp.where(visits > 0, summary.qvalues, summary.value[:, None])
    target = jnp.where(legal, out.policy_target, 0.0)
    target = target / jnp.maximum(jnp.sum(target, axis=-1, keepdims=True), 1e-30)
    return SearchResult(
        action=out.action,
        policy_target=target,
        root_value=summary.value,
        q=q,
        visit_counts=visits,
        prior_logits=logits,
        network_value=value,
        legal=legal,
        tree=tree,
    )


def select_action(result: SearchResult, temperature: jax.Array | float, key: jax.Array) -> jax.Array:
    """Sample from ``policy_target ** (1/T)`` where ``temperature > 0``, else the search's move."""
    temperature = jnp.broadcast_to(jnp.asarray(temperature, jnp.float32), result.action.shape)
    logp = jnp.log(jnp.maximum(result.policy_target, 1e-30)) / jnp.maximum(temperature, 1e-6)[:, None]
    sampled = jax.random.categorical(key, jnp.where(result.legal, logp, -jnp.inf), axis=-1)
    return jnp.where(temperature > 0, sampled.astype(jnp.int32), result.action)
