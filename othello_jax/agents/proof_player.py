"""Perfect 6x6 openings from the shipped proof (``othello-jax solve-6x6``): where a position is
in the proof with a bound its mover can keep, the agent plays the proof's move, which keeps it
after any reply (the proof covers every reply of the other side), as the paper's perfect player
read its results above the pivot. Other positions are left to the wrapped agent (usually a
network whose last empties the exact solver plays; see :func:`with_exact_endgame`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jax
import numpy as np

from othello_jax.agents.base import Agent, AgentSpecError
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.solver import proof_file
from othello_jax.solver.canonical import Rules, canonical, inverse, square_image
from othello_jax.solver.host import bitboards_u64


@functools.cache
def shipped_proof(path: str = str(proof_file.DEFAULT_PATH)) -> proof_file.Proof:
    """The proof file, read once per process."""
    return proof_file.read(path)


def proof_move(proof: proof_file.Proof, rules: Rules, mover: int, opponent: int) -> tuple[int, int] | None:
    """(square, the bound it keeps for the mover) where the proof has a move for the position
    (row * 8 + col on the real board), else None."""
    settled = rules.settle((mover, opponent))
    if settled.final is not None or settled.sign < 0:  # over, or a forced pass: nothing to choose
        return None
    key, symmetry = canonical(settled.position, rules.size)
    record = proof.records.get(key)
    if record is None or record.leaf or record.ge is None or not 0 <= record.move < 64:
        return None
    return square_image(record.move, inverse(symmetry), rules.size), record.ge


def with_proof(agent: Agent, game: Othello, path: str | Path | None = None, exact_from: int = 0) -> Agent:
    """``agent``, but positions the proof covers are played by the proof (a host agent).

    ``exact_from``: positions with at most this many empties stay with ``agent`` (its exact
    solver: the proof's move keeps the proved bound, the solver the exact value, which is more
    once the other side has erred)."""
    try:
        proof = shipped_proof(str(path or proof_file.DEFAULT_PATH))
    except InputError as error:
        raise AgentSpecError(f"cannot read the proof: {error}") from None
    if proof.size != game.size:
        raise AgentSpecError(f"the proof is of {proof.size}x{proof.size}, not {game.size}x{game.size}")
    rules = Rules(game.size)
    inner = agent.act

    def act(states: State, key: jax.Array) -> np.ndarray:
        host = jax.tree.map(np.asarray, states)
        movers, opponents = bitboards_u64(host.mover).tolist(), bitboards_u64(host.opponent).tolist()
        found = [None if host.terminal[i] or rules.empties((m, o)) <= exact_from else proof_move(proof, rules, m, o)
                 for i, (m, o) in enumerate(zip(movers, opponents, strict=True))]
        actions = None if all(f is not None for f in found) else np.array(inner(states, key), np.int32)
        if actions is None:
            actions = np.full(len(movers), game.pass_action, np.int32)
        for row, hit in enumerate(found):
            if hit is not None:
                actions[row] = (hit[0] // 8) * game.size + hit[0] % 8
        return actions

    return dataclasses.replace(agent, name=agent.name + ",proof", act=act, jittable=False, params=None,
                               act_with_params=None)


def _colour(colour: int) -> str:
    return "black" if colour == 0 else "white"


def verdict(proof: proof_file.Proof, rules: Rules, mover: int, opponent: int, colour: int) -> str | None:
    """What the proof says of a position, in words ("proved: white wins by 4"), or None where it
    has nothing to say; ``colour``: the mover's (0 black, 1 white)."""
    settled = rules.settle((mover, opponent))
    if settled.final is not None:
        return None
    if settled.sign < 0:
        colour = 1 - colour
    record = proof.records.get(canonical(settled.position, rules.size)[0])
    if record is None:
        return None
    me, other = _colour(colour), _colour(1 - colour)
    ge, le = record.ge, record.le
    if ge is not None and ge == le:
        text = "a draw" if ge == 0 else f"{me if ge > 0 else other} wins by {abs(ge)}"
    elif ge is not None:
        text = (f"{me} wins by at least {ge}" if ge > 0 else f"{me} at least draws" if ge == 0
                else f"{other} wins by at most {-ge}")
    elif le is not None:
        text = (f"{other} wins by at least {-le}" if le < 0 else f"{other} at least draws" if le == 0
                else f"{me} wins by at most {le}")
    else:
        return None
    return f"proved: {text}"


def _for_state(state: State, game: Othello, path: str | Path | None) -> tuple[proof_file.Proof, int, int] | None:
    """(the proof, mover, opponent) for one unbatched state on the proof's board; None elsewhere
    or where no proof can be read."""
    if game.size != proof_file.DEFAULT_PATH_SIZE:
        return None
    try:
        proof = shipped_proof(str(path or proof_file.DEFAULT_PATH))
    except InputError:
        return None
    mover, opponent = (int(x) for x in (bitboards_u64(state.mover), bitboards_u64(state.opponent)))
    return proof, mover, opponent


def state_verdict(state: State, game: Othello, path: str | Path | None = None) -> str | None:
    """:func:`verdict` of one (unbatched) state on the shipped proof's board; None elsewhere or
    where no proof can be read."""
    found = _for_state(state, game, path)
    if found is None:
        return None
    proof, mover, opponent = found
    return verdict(proof, Rules(game.size), mover, opponent, int(np.asarray(state.color)))


def proof_chooses(state: State, game: Othello, path: str | Path | None = None) -> bool:
    """Whether :func:`with_proof` plays one (unbatched) state by the proof."""
    found = _for_state(state, game, path)
    return found is not None and proof_move(found[0], Rules(game.size), found[1], found[2]) is not None
