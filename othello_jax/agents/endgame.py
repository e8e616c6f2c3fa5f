"""Perfect endgames for any agent: the last empties are played by the exact solver."""

from __future__ import annotations

import dataclasses

import jax

from othello_jax.agents.base import Agent, AgentSpecError
from othello_jax.errors import InputError
from othello_jax.game import Othello
from othello_jax.solver import exact_endgame_act


def with_exact_endgame(agent: Agent, game: Othello, max_empties: int, backend: str | None = None) -> Agent:
    """``agent``, but positions with at most ``max_empties`` empty squares are played perfectly
    (``max_empties=0``: ``agent`` unchanged).

    ``backend``: ``"auto"`` (the default: the C solver on the host, one position at a time;
    where it cannot be built, the JAX solver with a one-line warning), ``"c"`` (C or an error)
    or ``"jax"`` (the batched on-device solver: the agent stays jittable, but a batch waits for
    its hardest position and the cost grows steeply with the empties). The C solver is never the
    slower: 40 games of 8x8 take 15-19 s with it at 8-14 empties, 20-24 s with the JAX solver at
    8-12 and 101 s at 14 (experiments/RESULTS.md, 2026-11-28).
    """
    if max_empties < 0:
        raise AgentSpecError(f"solve must be >= 0 empties, got {max_empties}")
    backend = backend or "auto"
    if backend not in ("jax", "c", "auto"):
        raise AgentSpecError(f"solver must be jax, c or auto, got {backend!r}")
    if max_empties == 0:  # solve=0: no exact endgame (the agent as it is, under its own name)
        return agent
    try:
        act = exact_endgame_act(agent.act, game, max_empties, backend=backend)
    except (InputError, OSError) as error:  # e.g. no C compiler for the C solver
        raise AgentSpecError(f"cannot use the {backend} endgame solver: {str(error).splitlines()[0]}") from None
    jittable = agent.jittable and backend == "jax"
    suffix = f",solve={max_empties}" + (f",solver={backend}" if backend != "auto" else "")
    return dataclasses.replace(agent, name=agent.name + suffix, act=jax.jit(act) if jittable else act,
                               jittable=jittable, params=None, act_with_params=None)
