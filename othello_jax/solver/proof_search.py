"""Weakly solving a board by "Othello is solved"'s method (Takizawa 2023, Algorithms 1, 5, 6).

1. Every position at the first pivot (``pivot1`` empties) is enumerated, one per symmetry
   class, with the whole tree above it, and each gets a predicted value.
2. Algorithm 1: an alpha-beta over that tree with the predictions as leaf values picks a small
   set of pivot positions whose predicted bounds, if true, prove the root's predicted value: at
   a node that must reach ``>= t`` one child (the one whose proof is cheapest), at a node that
   must stay ``<= t`` every child.
3. Algorithm 5: each selected hypothesis (``>= t`` or ``<= t`` at one pivot position) is carried
   down to the second pivot (``pivot2`` empties) by a null-window search whose children are
   predicted when first met and tried in the order their predictions give: for ``>= t`` the one
   predicted best first, the next only where a solve refutes it; for ``<= t`` every child.
4. At the second pivot the positions reached are solved exactly with the C solver, each in the
   null window of its hypothesis, so a solve either confirms it or returns the bound that
   refutes it.
5. Algorithm 6: a refuted pivot hypothesis keeps the bound its search proved, the known bounds
   are propagated up the tree as intervals, and selection runs again (with a new target where
   what is proved excludes the old one) until the root's interval is one value.

Scores are the mover's final disc difference (empties to the winner); on an even board they are
even, so ``>= t`` fails exactly when ``<= t - 2``. Positions are kept with passes settled and one
per symmetry class (:mod:`othello_jax.solver.canonical`). The state (predictions, expanded
nodes, proved bounds, counters) is saved to a file so a stopped run resumes where it was.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from othello_jax.errors import InputError
from othello_jax.solver import c_solver
from othello_jax.solver.canonical import Position, Rules, canonical

# (positions) -> predicted values in discs, mover's view
Predictor = Callable[[Sequence[Position]], Sequence[float]]
GE, LE = 0, 1  # the two kinds of requirement: value >= t, value <= t
AGAINST_PREDICTION = 1e6  # Algorithm 1's cost of a pivot position whose prediction says it fails
STATE_FORMAT = 1


@dataclass
class Edge:
    square: int  # in the parent's canonical frame; 64 for none (the node is settled)
    child: Position
    sign: int  # the child's value times sign is the parent's value along this edge


@dataclass
class SearchStats:
    """Counters of a proof search (kept in its state file)."""

    pivot1_positions: int = 0
    tree_nodes: int = 0
    predicted: int = 0
    first_selection: int = 0  # Algorithm 1's pick at the first pivot, from the predictions alone
    pivot_proved: int = 0  # first-pivot hypotheses settled (proved or refuted)
    pivot_refuted: int = 0
    rounds: int = 0
    solves: int = 0
    refuted: int = 0
    solver_nodes: int = 0
    solve_seconds: float = 0.0
    predict_seconds: float = 0.0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time (the machine may be shared: wall time is not the cost)


@dataclass
class ProofResult:
    value: int
    stats: SearchStats
    records: list[dict] = field(default_factory=list)  # what the proof file holds (see proof_file)


class ProofSearch:
    """The proof of the start position's value on a ``size`` board (see the module's text)."""

    def __init__(self, size: int, pivot1: int, pivot2: int, predictor: Predictor, state_path: Path | None = None,
                 say: Callable[[str], None] | None = None, solver: c_solver.CSolver | None = None,
                 target: int | None = None):
        if not 0 <= pivot2 <= pivot1 <= size * size - 4:
            raise ValueError(f"pivots must satisfy 0 <= pivot2 <= pivot1 <= {size * size - 4}, "
                             f"got {pivot1} and {pivot2}")
        self.size, self.pivot1, self.pivot2 = size, pivot1, pivot2
        self.rules = Rules(size)
        self.limit = size * size
        self.predictor = predictor
        self.state_path = state_path
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.solver = solver or c_solver.CSolver(size)
        self.children: dict[Position, list[Edge]] = {}
        self.empties: dict[Position, int] = {}
        self.pred: dict[Position, int] = {}
        self.bounds: dict[Position, tuple[int, int]] = {}  # proved by a solve or by the game's end
        self.best_move: dict[Position, int] = {}  # the solver's move at solved leaves (canonical frame)
        self.expanded: list[Position] = []  # below the first pivot, in expansion order (for resuming)
        self.target: int | None = None  # the root's value being proved (settled root's view)
        self.stats = SearchStats()
        self._started = time.monotonic()
        self._cpu_started = time.process_time()
        settled = self.rules.settle(self.rules.start())
        self.root_sign = settled.sign
        self.root = self._add(settled.position, settled.final)
        if target is not None:  # a hypothesis given (black's view), as the paper's draw was
            self.target = target * self.root_sign
        # without one, the target follows the predictions' minimax every round (refuted pivot
        # predictions replaced by what was proved), so a wrong first guess is left as soon as the
        # solves say so rather than only once it is disproved outright
        self.follow = target is None

    # ---- the tree ------------------------------------------------------------------------
    def _add(self, position: Position, final: int | None) -> Position:
        key = canonical(position, self.size)[0]
        if key not in self.empties:
            self.empties[key] = self.rules.empties(key)
            if final is not None:
                self.bounds[key] = (final, final)
        return key

    def _expand(self, key: Position) -> list[Position]:
        """Generate a node's children (new ones returned, for prediction)."""
        fresh = []
        edges = []
        for square in self.rules.moves(key):
            settled = self.rules.settle(self.rules.play(key, square))
            known = len(self.empties)
            child = self._add(settled.position, settled.final)
            if len(self.empties) > known and settled.final is None:
                fresh.append(child)
            edges.append(Edge(square, child, -settled.sign))
        self.children[key] = edges
        return fresh

    def enumerate(self) -> list[Position]:
        """Build the tree down to the first pivot; the pivot's positions (with a legal move)."""
        level = [self.root]
        pivot = []
        while level:
            following = []
            for key in level:
                if key in self.bounds:
                    continue
                if self.empties[key] <= self.pivot1:
                    pivot.append(key)
                    continue
                following.extend(self._expand(key))
            level = following
        self.stats.pivot1_positions = len(pivot)
        return pivot

    def _predict(self, keys: list[Position]) -> None:
        keys = [k for k in keys if k not in self.pred and k not in self.bounds]
        if not keys:
            return
        start = time.monotonic()
        values = self.predictor(keys)
        for key, value in zip(keys, values, strict=True):
            self.pred[key] = self._even(value)
        self.stats.predicted += len(keys)
        self.stats.predict_seconds += time.monotonic() - start

    def _even(self, value: float) -> int:
        """The nearest possible score (an even number on the board) within the board."""
        if not math.isfinite(value):
            return 0
        return int(max(-self.limit, min(self.limit, 2 * round(value / 2))))

    # ---- values: proved intervals and predictions ----------------------------------------
    def _interval(self, key: Position, memo: dict) -> tuple[int, int]:
        """What is proved of a node's value: its own bounds met with its children's minimax."""
        if key in memo:
            return memo[key]
        lo, hi = self.bounds.get(key, (-self.limit, self.limit))
        if lo < hi and key in self.children:
            clo, chi = -self.limit - 1, -self.limit - 1
            for edge in self.children[key]:
                a, b = self._interval(edge.child, memo)
                if edge.sign < 0:
                    a, b = -b, -a
                clo, chi = max(clo, a), max(chi, b)
            lo, hi = max(lo, clo), min(hi, chi)
        memo[key] = (lo, hi)
        return lo, hi

    def _estimate(self, key: Position, memo: dict, proved: dict) -> int:
        """Algorithm 1's value of a node above the first pivot: the minimax of the pivot's
        predictions, each kept inside what is proved of it."""
        if key in memo:
            return memo[key]
        lo, hi = self._interval(key, proved)
        if lo == hi:
            value = lo
        elif key in self.children and self.empties[key] > self.pivot1:
            value = max(edge.sign * self._estimate(edge.child, memo, proved) for edge in self.children[key])
        else:
            value = self.pred.get(key, 0)
        memo[key] = value = max(lo, min(hi, value))
        return value

    # ---- Algorithm 1: the fewest pivot positions whose predictions would prove the target ----
    def _cost(self, key: Position, kind: int, t: int, memo: dict, est: dict, proved: dict) -> float:
        """Pivot positions a proof of ``value >= t`` (GE) or ``<= t`` (LE) needs: one per pivot
        position predicted to meet its part, :data:`AGAINST_PREDICTION` per one predicted not to
        (tried only where nothing else is left); inf where what is proved rules it out."""
        memo_key = (key, kind, t)
        if memo_key in memo:
            return memo[memo_key]
        lo, hi = self._interval(key, proved)
        if (kind == GE and lo >= t) or (kind == LE and hi <= t):
            cost = 0.0
        elif (kind == GE and hi < t) or (kind == LE and lo > t):
            cost = math.inf
        elif self.empties[key] <= self.pivot1:
            value = self._estimate(key, est, proved)
            cost = AGAINST_PREDICTION if (kind == GE and value < t) or (kind == LE and value > t) else 1.0
        else:
            costs = (self._cost(e.child, kind if e.sign > 0 else 1 - kind, t * e.sign, memo, est, proved)
                     for e in self.children[key])
            cost = min(costs) if kind == GE else sum(costs)
        memo[memo_key] = cost
        return cost

    def _select(self) -> tuple[int, list[tuple[Position, int, int]]]:
        """(target, [(pivot position, kind, t)]): the value to prove and the pivot hypotheses
        that would prove it, cheapest first where there is a choice (Algorithm 1).

        The target is a given hypothesis, kept until what is proved excludes it (as the paper kept
        its draw hypothesis), or else the root's predicted value of this round.
        """
        proved, est, costs = {}, {}, {}
        lo, hi = self._interval(self.root, proved)
        if self.follow or self.target is None or not lo <= self.target <= hi:
            self.target = self._estimate(self.root, est, proved)
        target = self.target
        chosen: list[tuple[Position, int, int]] = []
        seen = set()
        stack = [(self.root, LE, target), (self.root, GE, target)]
        while stack:
            key, kind, t = stack.pop()
            if (key, kind, t) in seen:
                continue
            seen.add((key, kind, t))
            if self._cost(key, kind, t, costs, est, proved) in (0.0, math.inf):
                continue
            if self.empties[key] <= self.pivot1:
                chosen.append((key, kind, t))
                continue
            follow = lambda e: (e.child, kind if e.sign > 0 else 1 - kind, t * e.sign)
            if kind == GE:  # the child with the cheapest proof; ties to the larger predicted margin
                edge = min(self.children[key], key=lambda e: (self._cost(*follow(e), costs, est, proved),
                                                              -e.sign * self._estimate(e.child, est, proved)))
                stack.append(follow(edge))
            else:
                stack.extend(follow(e) for e in self.children[key])
        return target, chosen

    # ---- Algorithms 5 and 6: a pivot hypothesis carried to the second pivot and solved ----
    def _holds(self, key: Position, kind: int, t: int) -> bool | None:
        lo, hi = self.bounds.get(key, (-self.limit, self.limit))
        if (kind == GE and lo >= t) or (kind == LE and hi <= t):
            return True
        if (kind == GE and hi < t) or (kind == LE and lo > t):
            return False
        return None

    def _record(self, key: Position, kind: int, t: int, holds: bool) -> None:
        lo, hi = self.bounds.get(key, (-self.limit, self.limit))
        if kind == GE:
            lo, hi = (max(lo, t), hi) if holds else (lo, min(hi, t - 1))
        else:
            lo, hi = (lo, min(hi, t)) if holds else (max(lo, t + 1), hi)
        self.bounds[key] = (lo, hi)

    def _children_predicted(self, key: Position) -> list[Edge]:
        if key not in self.children:
            self._predict(self._expand(key))
            self.expanded.append(key)
        return self.children[key]

    def prove(self, key: Position, kind: int, t: int) -> bool:
        """Whether the node's value is ``>= t`` (GE) or ``<= t`` (LE), proved: above the second
        pivot by trying the children in the order their predictions give (the one predicted to
        prove it first; the next where a solve refutes it), at the second pivot by a solve."""
        known = self._holds(key, kind, t)
        if known is not None:
            return known
        if self.empties[key] <= self.pivot2:
            return self._solve(key, kind, t)
        edges = self._children_predicted(key)
        follow = lambda e: (e.child, kind if e.sign > 0 else 1 - kind, t * e.sign)
        # best first for the side that must reach >= t; for <= t, the reply most likely to break it first
        margin = lambda e: e.sign * self._value_guess(e.child)
        ordered = sorted(edges, key=margin, reverse=True)
        if kind == GE:
            holds = any(self.prove(*follow(e)) for e in ordered)
        else:
            holds = all(self.prove(*follow(e)) for e in ordered)
        self._record(key, kind, t, holds)
        return holds

    def _value_guess(self, key: Position) -> int:
        lo, hi = self.bounds.get(key, (-self.limit, self.limit))
        return lo if lo == hi else max(lo, min(hi, self.pred.get(key, 0)))

    def _solve(self, key: Position, kind: int, t: int) -> bool:
        """Solve a second-pivot position in the null window of its hypothesis."""
        alpha, beta = (t - 1, t) if kind == GE else (t, t + 1)
        start = time.monotonic()
        score, move, nodes = self.solver.solve(key[0], key[1], alpha, beta)
        self.stats.solve_seconds += time.monotonic() - start
        self.stats.solves += 1
        self.stats.solver_nodes += nodes
        lo, hi = self.bounds.get(key, (-self.limit, self.limit))
        if score >= beta:
            lo = max(lo, score)
            if 0 <= move < 64:
                self.best_move[key] = move
        else:
            hi = min(hi, score)
        self.bounds[key] = (lo, hi)
        holds = self._holds(key, kind, t)
        if not holds:
            self.stats.refuted += 1
        return bool(holds)

    # ---- the loop ------------------------------------------------------------------------
    def run(self, save_every: float = 30.0) -> ProofResult:
        """Prove the root's value (resuming from the state file if there is one)."""
        self.say(f"enumerating the {self.size}x{self.size} tree down to {self.pivot1} empties")
        pivot = self.enumerate()
        resumed = self._load()
        self.say(f"{len(pivot):,} positions at {self.pivot1} empties ({len(self.empties):,} nodes above and at "
                 f"the pivot, one per symmetry class)" + (f"; resumed: {self.stats.solves:,} solves so far"
                                                           if resumed else ""))
        self._predict(pivot)
        last_save = last_say = time.monotonic()
        try:
            while True:
                lo, hi = self._interval(self.root, {})
                if lo == hi:
                    break
                target, chosen = self._select()
                if self.stats.rounds == 0 and not resumed:
                    self.stats.first_selection = len({key for key, _, _ in chosen})
                self.stats.rounds += 1
                self.say(f"round {self.stats.rounds}: proving {self._root_view(target):+d} for black needs "
                         f"{len(chosen):,} hypotheses at {self.pivot1} empties (proved so far: "
                         f"{self._root_view(lo) if self.root_sign > 0 else -hi:+d}..{self._root_view(hi):+d})")
                start, refuted = time.monotonic(), self.stats.pivot_refuted
                for i, (key, kind, t) in enumerate(chosen):
                    if not self.prove(key, kind, t):
                        self.stats.pivot_refuted += 1
                        self.pred[key] = self._value_guess(key)
                    self.stats.pivot_proved += 1
                    now = time.monotonic()
                    if now - last_save > save_every:
                        self._save()
                        last_save = now
                    if now - last_say > 10:
                        last_say = now
                        rate = (now - start) / (i + 1)
                        self.say(f"  {i + 1:,}/{len(chosen):,} hypotheses settled "
                                 f"({self.stats.pivot_refuted - refuted} refuted), {self.stats.solves:,} solves, "
                                 f"ETA for this round {rate * (len(chosen) - i - 1):.0f} s")
                    if self.stats.pivot_refuted - refuted > len(chosen) // 20:
                        break  # wrong predictions: select again with what the solves proved (Algorithm 6)
                self.say(f"  {self.stats.solves:,} solves ({self.stats.refuted:,} refuted) so far, "
                         f"{self.stats.solver_nodes / 1e6:,.0f}M solver nodes")
                self._save()
        except BaseException:  # a stop (Ctrl-C, SIGTERM) or a failure: what was proved so far is kept
            self._save()
            raise
        value = self._root_view(self._interval(self.root, {})[0])
        self.stats.tree_nodes = len(self.empties)
        self.stats.wall_seconds += time.monotonic() - self._started
        self.stats.cpu_seconds += time.process_time() - self._cpu_started
        self._started, self._cpu_started = time.monotonic(), time.process_time()
        self._save()
        return ProofResult(value, self.stats, self.records())

    def _root_range(self, lo: int, hi: int) -> str:
        """The settled root's interval as the start's mover sees it, as text."""
        low, high = sorted((self._root_view(lo), self._root_view(hi)))
        return f"{low:+d}..{high:+d}"

    def _root_view(self, value: int) -> int:
        """A value of the settled root node as the start position's mover sees it."""
        return value * self.root_sign

    # ---- the proof -----------------------------------------------------------------------
    def records(self) -> list[dict]:
        """The proof tree of the root's proved value, one record per node (canonical frame):
        ``ge``/``le`` the thresholds it must meet, ``move`` the move proving ``ge``, ``leaf``
        for positions whose bound the checker solves again."""
        proved = {}
        lo, hi = self._interval(self.root, proved)
        if lo != hi:
            raise ValueError("the root is not proved yet")
        out: dict[Position, dict] = {}
        stack = [(self.root, GE, lo), (self.root, LE, lo)]
        while stack:
            key, kind, t = stack.pop()
            record = out.setdefault(key, {"position": key, "ge": None, "le": None, "move": 64, "leaf": False})
            name = "ge" if kind == GE else "le"
            if record[name] is not None and (record[name] >= t if kind == GE else record[name] <= t):
                continue
            record[name] = t
            if key not in self.children:  # a solved position or the end of a game
                record["leaf"] = True
                record["move"] = self.best_move.get(key, 64)
                continue
            follow = lambda e: (e.child, kind if e.sign > 0 else 1 - kind, t * e.sign)
            if kind == GE:
                def proves(e: Edge) -> bool:
                    a, b = self._interval(e.child, proved)
                    return (-b if e.sign < 0 else a) >= t
                edge = next(e for e in self.children[key] if proves(e))
                record["move"] = edge.square
                stack.append(follow(edge))
            else:
                stack.extend(follow(e) for e in self.children[key])
        return list(out.values())

    # ---- state on disk -------------------------------------------------------------------
    def _save(self) -> None:
        if self.state_path is None:
            return
        pack = lambda keys: np.asarray(list(keys), np.uint64).reshape(-1, 2)
        bounds = list(self.bounds.items())
        pred = list(self.pred.items())
        stats = dict(self.stats.__dict__)
        stats["wall_seconds"] += time.monotonic() - self._started
        stats["cpu_seconds"] += time.process_time() - self._cpu_started
        meta = dict(format=STATE_FORMAT, size=self.size, pivot1=self.pivot1, pivot2=self.pivot2, stats=stats,
                    target=self.target)
        tmp = self.state_path.with_name(self.state_path.name + ".tmp.npz")
        np.savez_compressed(tmp, meta=np.asarray(json.dumps(meta)),
                            expanded=pack(self.expanded),
                            bound_keys=pack(k for k, _ in bounds),
                            bound_values=np.asarray([v for _, v in bounds], np.int8).reshape(-1, 2),
                            pred_keys=pack(k for k, _ in pred),
                            pred_values=np.asarray([v for _, v in pred], np.int8),
                            move_keys=pack(self.best_move.keys()),
                            move_values=np.asarray(list(self.best_move.values()), np.int8))
        os.replace(tmp, self.state_path)

    def _load(self) -> bool:
        if self.state_path is None or not self.state_path.is_file():
            return False
        try:
            data = np.load(self.state_path)
            meta = json.loads(str(data["meta"]))
        except Exception as error:  # zip, npz or JSON errors: not a state file (or a cut-short one)
            raise StateMismatch(f"{self.state_path} is not a proof search's state ({type(error).__name__}); "
                                f"use another --state or delete it") from None
        with data:
            if (meta.get("format"), meta.get("size"), meta.get("pivot1"), meta.get("pivot2")) != (
                    STATE_FORMAT, self.size, self.pivot1, self.pivot2):
                raise StateMismatch(f"{self.state_path} holds another search ({meta.get('size')}x{meta.get('size')}, "
                                    f"pivots {meta.get('pivot1')}/{meta.get('pivot2')}); use another --state or "
                                    f"delete it")
            unpack = lambda name: [(int(a), int(b)) for a, b in data[name]]
            for key, value in zip(unpack("pred_keys"), data["pred_values"].tolist(), strict=True):
                self.pred[key] = value
            for key, (lo, hi) in zip(unpack("bound_keys"), data["bound_values"].tolist(), strict=True):
                self.bounds[key] = (lo, hi)
            for key, move in zip(unpack("move_keys"), data["move_values"].tolist(), strict=True):
                self.best_move[key] = move
            for key in unpack("expanded"):
                self._expand(key)  # children of an expanded node are predicted (kept in pred)
                self.expanded.append(key)
            self.stats = SearchStats(**meta["stats"])
            self.target = meta.get("target", self.target)
        return True


class StateMismatch(InputError):
    """A state file of another search (size or pivots): the user named the wrong file."""

