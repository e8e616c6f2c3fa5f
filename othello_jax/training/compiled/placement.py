"""Where every input of a compiled training program lives on the device mesh: decided here only.

A compiled iteration is specialised to the shardings of its inputs and rejects an array placed
anywhere else. Arrays arrive from many places: a fresh start (the key is a host value), a
checkpoint (orbax puts each array where its restore target says), the loop's own key splits,
the schedule span (a host float pair), a gate that swaps the actor, several processes (every
input must be one global array). So no caller places anything itself: the run's
:class:`Placement` gives the shardings (:meth:`Placement.state_shardings`, :attr:`replicated`),
puts a fresh state, key or schedule span on the mesh (:meth:`Placement.state`,
:meth:`Placement.key`, :meth:`Placement.schedule`), and brings values back to the host for work
that runs outside the compiled program (:meth:`Placement.host`: evaluation, gating).

The layout: network parameters, optimizer state, counters, keys and the schedule span are
replicated; the replay buffer and the self-play resignation state are split by lanes over the
mesh axis ``"data"``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, Sharding

AXIS = "data"


def put(tree: Any, shardings: Any) -> Any:
    """``tree`` with every leaf on its sharding in ``shardings`` (a matching tree of shardings).

    A leaf already placed there is returned as it is (no copy). With several processes a value
    that is not yet a global array (a host value, or an array on this process's devices) must be
    the same on every process; each process contributes its own devices' part.
    """
    return jax.tree.map(_put_leaf, tree, shardings)


def _put_leaf(value: Any, sharding: Sharding) -> jax.Array:
    if isinstance(value, jax.Array):
        if value.sharding.is_equivalent_to(sharding, value.ndim):  # the same devices, the same layout
            return value
        if not value.is_fully_addressable:  # a global array laid out otherwise: reshard on the devices
            return jax.device_put(value, sharding)
    if sharding.is_fully_addressable:
        return jax.device_put(value, sharding)
    host = np.asarray(value)  # the same value on every process: each supplies its devices' slices
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


@dataclasses.dataclass(frozen=True)
class Placement:
    """The shardings of one run's compiled programs over a 1-D device mesh."""

    mesh: Mesh

    @property
    def replicated(self) -> NamedSharding:
        """A full copy on every device (parameters, optimizer state, keys, scalars)."""
        return NamedSharding(self.mesh, PartitionSpec())

    @property
    def lanes(self) -> NamedSharding:
        """Split along the leading lane axis, each device holding its own lanes."""
        return NamedSharding(self.mesh, PartitionSpec(AXIS))

    def state_shardings(self, train_state: Any) -> Any:
        """A train state's shardings (same tree): lane-split buffer and resign state, the rest replicated."""
        shardings = jax.tree.map(lambda _: self.replicated, train_state)
        return shardings._replace(buffer=jax.tree.map(lambda _: self.lanes, train_state.buffer),
                                  resign=jax.tree.map(lambda _: self.lanes, train_state.resign))

    def state(self, train_state: Any) -> Any:
        """``train_state`` on the mesh (a restored or host state; an already placed one is unchanged)."""
        return put(train_state, self.state_shardings(train_state))

    def replicate(self, tree: Any) -> Any:
        """A full copy of ``tree`` on every device, placed once (e.g. parameters and the training
        rows of supervised learning, which must not move on every call)."""
        return put(tree, jax.tree.map(lambda _: self.replicated, tree))

    def key(self, key: Any) -> jax.Array:
        """A PRNG key (or any small array) replicated on the mesh."""
        return _put_leaf(key, self.replicated)

    def schedule(self, span: Any) -> jax.Array:
        """The schedule positions ``[start, end]`` an iteration spans, as a replicated float32[2]."""
        return _put_leaf(np.asarray(span, np.float32), self.replicated)

    def abstract(self, tree: Any, shardings: Any) -> Any:
        """Shape/dtype skeleton of ``tree`` carrying ``shardings`` (a compile or restore target)."""
        return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=s), tree, shardings)

    def host(self, tree: Any) -> Any:
        """NumPy copies of replicated arrays, for work outside the compiled program (evaluation,
        gating): they run on one device of this process whatever the mesh."""
        return jax.tree.map(np.asarray, tree)
