"""The Agent type: anything that picks moves, behind one batched interface ``act(states, key) -> actions``.

``states`` is a batched :class:`~othello_jax.game.State` (leading axis B), ``key`` a PRNG key,
and the result int32[B] legal actions (anything for games already over). Jittable agents can
be played inside one compiled match (see :mod:`othello_jax.evaluation.arena`); host agents
(external engines) are called once per ply from Python.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax

from othello_jax.errors import InputError
from othello_jax.game import ActFn, State


@dataclasses.dataclass(frozen=True)
class Agent:
    """A move picker. ``act(states, key) -> int32[B]`` over a batch of states.

    jittable: False for host-side agents (external engines); the arena then plays a host loop.
    start_games: optional hook for host agents that must know how positions were reached (a
        GTP engine replays moves): the arena calls it with each game's opening moves.
    close: optional hook releasing resources (engine processes).
    params, act_with_params: optional split of ``act`` into ``act_with_params(params, states,
        key)`` and its (array) parameters, e.g. a network's variables. The arena then passes
        the parameters as arguments, so agents differing only in parameters (the checkpoints of
        a run) share one compiled match instead of baking each network into its own.
    ready_for: optional, for host agents whose programs compile in the background: whether the
        move in one (unbatched) position waits for no compile (an opening book's reply while a
        clocked search compiles); the players then say nothing of compiling before it.
    """

    name: str
    act: ActFn
    jittable: bool = True
    start_games: Callable[[Sequence[Sequence[int]]], None] | None = None
    close: Callable[[], None] | None = None
    params: Any = dataclasses.field(default=None, compare=False)
    act_with_params: Callable[[Any, State, jax.Array], jax.Array] | None = None
    ready_for: Callable[[State], bool] | None = dataclasses.field(default=None, compare=False)


class AgentSpecError(InputError):
    """A malformed agent spec (one-line message naming the problem)."""


def parametric_agent(name: str, fn: Callable[[Any, State, jax.Array], jax.Array], params: Any) -> Agent:
    """An agent whose moves are ``fn(params, states, key)``."""
    return Agent(name, functools.partial(fn, params), params=params, act_with_params=fn)


def renamed(agent: Agent, name: str) -> Agent:
    """The same agent under another name (the name shown in result tables)."""
    return dataclasses.replace(agent, name=name)
