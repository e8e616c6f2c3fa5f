"""An independent check of a proof file (:mod:`othello_jax.solver.proof_file`): the tree above
the leaves is walked again from the start position with the rules (every reply where the proof
says ``<= t``, the recorded move where it says ``>= t``), and every leaf is solved again by the
C solver in the window of what the tree needs of it. Nothing of the search that found the
proof is used, only the rules, the symmetry classes and the solver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from othello_jax.errors import InputError
from othello_jax.solver import c_solver
from othello_jax.solver.canonical import Position, Rules, canonical
from othello_jax.solver.proof_file import Proof

GE, LE = "ge", "le"


class ProofRejected(InputError):
    """The proof does not hold (one line: where and why): a bad file, as a user gives one."""


class CheckReport(NamedTuple):
    value: int
    positions: int  # records reached from the start
    leaves: int
    solver_nodes: int
    seconds: float


def _needs(kind: str, t: int, sign: int) -> tuple[str, int]:
    """What a child must meet, in its own view, for its parent to meet ``kind t`` (``sign``: -1
    when the child's mover is the parent's opponent)."""
    if sign > 0:
        return kind, t
    return (LE if kind == GE else GE), -t


def verify(proof: Proof, say: Callable[[str], None] | None = None) -> CheckReport:
    """Check the proof; raise :class:`ProofRejected` at the first thing that does not hold."""
    start_time = time.monotonic()
    rules = Rules(proof.size)
    size = proof.size
    settled = rules.settle(rules.start())
    if settled.final is not None:
        raise ProofRejected("the start position is already over")
    root = canonical(settled.position, size)[0]
    value = proof.value * settled.sign
    needed: dict[Position, dict[str, int]] = {}
    stack = [(root, GE, value), (root, LE, value)]
    while stack:
        key, kind, t = stack.pop()
        record = proof.records.get(key)
        if record is None:
            raise ProofRejected(f"position {key[0]:#x}/{key[1]:#x} is needed ({kind} {t:+d}) but not in the proof")
        have = record.ge if kind == GE else record.le
        if have is None or (have < t if kind == GE else have > t):
            raise ProofRejected(f"position {key[0]:#x}/{key[1]:#x} must be {kind} {t:+d}; the proof records {have}")
        wanted = needed.setdefault(key, {})
        if kind in wanted and (wanted[kind] >= t if kind == GE else wanted[kind] <= t):
            continue
        wanted[kind] = t
        if record.leaf:
            continue
        if kind == GE:
            if record.move not in rules.moves(key):
                raise ProofRejected(f"position {key[0]:#x}/{key[1]:#x}: the proving move {record.move} is not legal")
            moves = [record.move]
        else:
            moves = rules.moves(key)
        for square in moves:
            child = rules.settle(rules.play(key, square))
            child_kind, child_t = _needs(kind, t, -child.sign)
            if child.final is not None:
                if (child_kind == GE and child.final < child_t) or (child_kind == LE and child.final > child_t):
                    raise ProofRejected(f"position {key[0]:#x}/{key[1]:#x}, move {square}: the game ends "
                                        f"{child.final:+d}, not {child_kind} {child_t:+d}")
                continue
            stack.append((canonical(child.position, size)[0], child_kind, child_t))
    leaves = [(key, wanted) for key, wanted in needed.items() if proof.records[key].leaf]
    solver = c_solver.CSolver(size)
    nodes = 0
    last = time.monotonic()
    for i, (key, _) in enumerate(sorted(leaves)):
        record = proof.records[key]  # what it claims (at least what the tree needs, checked above)
        ge, le = record.ge, record.le
        if ge is not None and le is not None:
            low, high = min(ge, le) - 1, max(ge, le) + 1
        elif ge is not None:
            low, high = ge - 1, ge
        else:
            low, high = le, le + 1
        score, _, count = solver.solve(key[0], key[1], low, high)
        nodes += count
        if (ge is not None and score < ge) or (le is not None and score > le):
            bound = "<=" if score <= low else (">=" if score >= high else "=")
            claims = " and ".join(f"{name} {v:+d}" for name, v in ((GE, ge), (LE, le)) if v is not None)
            raise ProofRejected(f"leaf {key[0]:#x}/{key[1]:#x} claims {claims}; solved again it is {bound} {score:+d}")
        if say and time.monotonic() - last > 10:
            last = time.monotonic()
            say(f"  {i + 1:,}/{len(leaves):,} leaves solved again")
    return CheckReport(proof.value, len(needed), len(leaves), nodes, time.monotonic() - start_time)
