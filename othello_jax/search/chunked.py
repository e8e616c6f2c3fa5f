"""A search run in chunks of simulations: one compiled chunk continues a tree until the host says stop.

A timed player (:mod:`othello_jax.agents.timed`) does not know how many simulations fit in its
time. It starts a tree with room for ``capacity`` simulations, runs compiled chunks of ``chunk``
simulations on it, checks the clock between chunks, and reads the answer from the tree whenever
it stops. Three programs, each compiled once (fixed shapes whatever the time):

- ``start(variables, states, key) -> carry``: the roots evaluated, an empty tree;
- ``advance(variables, carry, schedule, count) -> carry``: ``count`` (at most ``chunk``) more simulations
  (:func:`~othello_jax.search.lockstep.continue_search`: the chunks build the same tree as one
  search of their total);
- ``finish(carry) -> SearchResult``: the move, policy and values, as :func:`run_search` gives them.

Gumbel's sequential halving needs the total in advance; here it is an argument (``schedule``,
:meth:`ChunkedSearch.schedule`), planned once the first chunk has shown the speed. The root's
first simulations do not depend on the plan (:data:`FIRST_PLAN` chunks' schedule is a prefix of
every longer one's), so the plan may change after the first chunk. With the plan equal to the
total, the tree is the one ``run_search`` builds (tested). PUCT needs no plan. The lockstep engine
only (mctx's policies run a whole search in one call).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx
import ml_collections
import numpy as np

from othello_jax.game import Othello, State
from othello_jax.search import policies
from othello_jax.search.lockstep import continue_search
from othello_jax.search.network import ApplyFn, make_recurrent_fn
from othello_jax.search.run import SearchResult, SearchRoot, search_result, search_root, settings_of
from othello_jax.search.search_settings import SearchSettings
from othello_jax.search.tree import init_tree
from othello_jax.search.variants import VariantOutput, gumbel_qtransform, puct_action, puct_root

FIRST_PLAN = 8  # chunks the first chunk's schedule is planned for: a prefix of any longer plan's (tested)


class SearchCarry(NamedTuple):
    """A search between chunks: the roots, the tree so far, the key to continue with, and the
    simulations done (int32 scalar). ``prepared``: the root as the variant searches it (masked,
    noisy logits); ``gumbel``: Gumbel's root noise (zeros for PUCT)."""

    states: State
    root: SearchRoot
    prepared: mctx.RootFnOutput
    gumbel: jax.Array
    tree: mctx.Tree
    key: jax.Array
    done: jax.Array


class ChunkedSearch:
    """``config``'s search (``variant`` gumbel or puct) for ``apply_fn``, compiled in chunks of
    ``chunk`` simulations on trees of ``capacity`` simulations (``value_margin``: the network's).

    Any batch size works (one compile per size); a timed player searches a batch of one.
    """

    def __init__(self, config: SearchSettings | ml_collections.ConfigDict, apply_fn: ApplyFn, game: Othello,
                 value_margin: float = 0.0, chunk: int = 32, capacity: int = 8192):
        settings = settings_of(config)
        if settings.variant not in ("gumbel", "puct"):
            raise ValueError(f"a chunked search runs gumbel or puct, not {settings.variant!r}")
        if chunk < 1 or capacity < chunk:
            raise ValueError(f"need 1 <= chunk <= capacity, got chunk {chunk} and capacity {capacity}")
        self.settings, self.game, self.chunk = settings, game, int(chunk)
        self.capacity = int(capacity)
        self.considered = int(settings.max_num_considered_actions)
        qtransform = gumbel_qtransform(settings)
        recurrent_fn = make_recurrent_fn(apply_fn, game, settings.symmetry, settings.exact_endings, value_margin)

        def start(variables: Any, states: State, key: jax.Array) -> SearchCarry:
            root, _, key = search_root(settings, apply_fn, variables, states, key, game, value_margin)
            if settings.variant == "gumbel":
                prepared, key, gumbel = policies.gumbel_root(root.output, key, root.invalid, settings.gumbel_scale)
                extra = mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)
            else:
                prepared, key = puct_root(settings, key, root.output, root.invalid)
                prepared, key = policies.muzero_root(prepared, key, root.invalid)
                gumbel, extra = jnp.zeros_like(root.logits), None
            tree = init_tree(prepared, self.capacity, root.invalid, extra, settings.tree_updates)
            return SearchCarry(states, root, prepared, gumbel, tree, key, jnp.zeros((), jnp.int32))

        def advance(variables: Any, carry: SearchCarry, schedule: jax.Array, count: jax.Array) -> SearchCarry:
            if settings.variant == "gumbel":
                root_select = policies.table_root_selection(schedule, qtransform)
                interior_select = functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform)
            else:
                select = functools.partial(mctx.muzero_action_selection, pb_c_init=settings.pb_c_init,
                                  pb_c_base=settings.pb_c_base, qtransform=mctx.qtransform_by_parent_and_siblings)
                root_select, interior_select = functools.partial(select, depth=0), select
            key, tree = continue_search(variables, carry.key, carry.tree, recurrent_fn, root_select, interior_select,
                                        carry.done, count, settings.max_depth or None, settings.tree_updates,
                                        settings.compact_levels)
            return carry._replace(tree=tree, key=key, done=carry.done + count)

        def finish(carry: SearchCarry) -> SearchResult:
            tree, invalid = carry.tree, carry.root.invalid
            if settings.variant == "gumbel":
                out = policies.gumbel_outcome(tree, carry.prepared.prior_logits, carry.gumbel, invalid, qtransform)
                output = VariantOutput(out.action, out.action_weights, tree)
            else:
                output = VariantOutput(puct_action(tree, carry.prepared, invalid), tree.summary().visit_probs, tree)
            return search_result(settings, game, carry.states, carry.root, output)

        self.start: Callable[[Any, State, jax.Array], SearchCarry] = jax.jit(start)
        self._advance = jax.jit(advance, donate_argnums=1)
        self.finish: Callable[[SearchCarry], SearchResult] = jax.jit(finish)

    def advance(self, variables: Any, carry: SearchCarry, schedule: jax.Array, count: int | None = None) -> SearchCarry:
        """``count`` (default and at most ``chunk``) more simulations on ``carry``'s tree (its
        buffers are reused: use the returned carry only)."""
        count = self.chunk if count is None else min(int(count), self.chunk)
        return self._advance(variables, carry, schedule, np.int32(count))

    def schedule(self, planned: int) -> np.ndarray:
        """The root's schedule for ``planned`` simulations in all (Gumbel's sequential halving),
        int32[considered + 1, capacity]. Stopping early is always allowed, and going on past the
        plan visits the best two moves in turn (:func:`~othello_jax.search.policies.considered_visits`).
        PUCT ignores it."""
        planned = int(min(max(planned, 1), self.capacity))
        return policies.considered_visits(self.considered, planned, self.capacity)

    def run(self, variables: Any, states: State, key: jax.Array, simulations: int) -> SearchResult:
        """A whole search of ``simulations`` (at most ``capacity``), chunk by chunk: the tree of
        ``run_search`` with as many."""
        carry = self.start(variables, states, key)
        total = min(max(1, int(simulations)), self.capacity)
        schedule = jnp.asarray(self.schedule(total))
        for done in range(0, total, self.chunk):
            carry = self.advance(variables, carry, schedule, min(self.chunk, total - done))
        return self.finish(carry)
