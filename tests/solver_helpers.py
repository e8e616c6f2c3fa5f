"""Test helpers for the endgame solver: an independent brute-force minimax, random late
positions, and simple batched act functions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

CHUNK = 512  # random games are played in batches of one size, compiled once
DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


class BruteForce:
    """Plain minimax over the whole game tree (memoized, no pruning), on Python-int boards.

    Written from the rules, sharing nothing with the solver: the exact final disc difference
    for the side to move, empty squares to the winner.
    """

    def __init__(self, size: int):
        self.size = size
        self.squares = [r * 8 + c for r in range(size) for c in range(size)]
        self.rays = {sq: self._rays(sq) for sq in self.squares}
        self.memo: dict[tuple[int, int], int] = {}

    def _rays(self, sq: int) -> list[list[int]]:
        r0, c0 = divmod(sq, 8)
        rays = []
        for dr, dc in DIRS:
            ray, r, c = [], r0 + dr, c0 + dc
            while 0 <= r < self.size and 0 <= c < self.size:
                ray.append(1 << (r * 8 + c))
                r, c = r + dr, c + dc
            rays.append(ray)
        return rays

    def flips(self, me: int, you: int, sq: int) -> int:
        if (me | you) >> sq & 1:
            return 0
        out = 0
        for ray in self.rays[sq]:
            line = 0
            for bit in ray:
                if you & bit:
                    line |= bit
                    continue
                if me & bit:
                    out |= line
                break
        return out

    def moves(self, me: int, you: int) -> list[int]:
        return [sq for sq in self.squares if self.flips(me, you, sq)]

    def final(self, me: int, you: int) -> int:
        mine, theirs = bin(me).count("1"), bin(you).count("1")
        diff, empties = mine - theirs, self.size * self.size - mine - theirs
        return diff + (empties if diff > 0 else -empties if diff < 0 else 0)

    def child(self, me: int, you: int, sq: int) -> tuple[int, int]:
        """The position after the mover plays ``sq`` (64 = pass), from the next mover's view."""
        if sq == 64:
            return you, me
        f = self.flips(me, you, sq)
        return you & ~f, me | f | (1 << sq)

    def value(self, me: int, you: int) -> int:
        key = (me, you)
        if key not in self.memo:
            moves = self.moves(me, you)
            if moves:
                best = max(-self.value(*self.child(me, you, sq)) for sq in moves)
            elif self.moves(you, me):
                best = -self.value(you, me)
            else:
                best = self.final(me, you)
            self.memo[key] = best
        return self.memo[key]


def random_games_6x6(games: int, plies: int, seed: int) -> list[tuple[int, int]]:
    """``(mover, opponent)`` Python-int boards (bit ``row * 8 + column``) of every position of
    ``games`` uniformly random 6x6 games before their end, at most ``plies`` a game: played with
    :class:`BruteForce`'s rules in Python (no compile)."""
    brute, rng = BruteForce(6), np.random.default_rng(seed)
    start = (1 << 19 | 1 << 26, 1 << 18 | 1 << 27)  # black to move on d3 and c4, white on c3 and d4
    positions = []
    for _ in range(games):
        me, you = start
        for _ in range(plies):
            moves = brute.moves(me, you)
            if not moves and not brute.moves(you, me):
                break
            positions.append((me, you))
            me, you = brute.child(me, you, int(rng.choice(moves)) if moves else 64)  # 64: a pass
    return positions


def to_ints(states: State) -> tuple[list[int], list[int]]:
    """Batched states -> (mover ints, opponent ints)."""
    def ints(b):
        return [int(lo) | (int(hi) << 32)
                for lo, hi in zip(np.asarray(b.lo).tolist(), np.asarray(b.hi).tolist(), strict=False)]
    return ints(states.mover), ints(states.opponent)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _random_game_states(game: Othello, count: int, key: jax.Array) -> State:
    """Every position [ply, game] of ``count`` uniformly random games (finished games repeat)."""
    def ply(states, key):
        logits = jnp.where(game.legal_moves(states) | states.terminal[:, None], 0.0, -jnp.inf)
        return game.step(states, jax.random.categorical(key, logits).astype(jnp.int32)), states

    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
    _, states = jax.lax.scan(ply, start, jax.random.split(key, 2 * game.num_squares))
    return states


def random_positions(game: Othello, empties: list[int], seed: int) -> State:
    """One position per entry of ``empties`` with that many empty squares (or the end of a game
    finished with fewer), each from its own uniformly random game."""
    needed = -(-(2 * len(empties) + 16) // CHUNK)
    chunks = [_random_game_states(game, CHUNK, jax.random.key(seed * 1000 + i)) for i in range(needed)]
    states = jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs], axis=1), *chunks)
    left = game.num_squares - np.asarray(bb.popcount(states.mover) + bb.popcount(states.opponent)).T  # [game, ply]
    rows, plies, next_game = [], [], 0
    for wanted in empties:
        while left[next_game].min() > wanted:  # this game ended with more empty squares
            next_game += 1
        rows.append(next_game)
        plies.append(int(np.argmax(left[next_game] <= wanted)))
        next_game += 1
    return jax.tree.map(lambda x: jnp.asarray(x[np.asarray(plies), np.asarray(rows)]), states)


def greedy_act(game: Othello):
    """Batched act: the placement flipping the most discs (lowest action on ties), else pass."""
    def act(states: State, key: jax.Array) -> jax.Array:
        actions = jnp.arange(game.num_actions, dtype=jnp.int32)
        tiled = jax.tree.map(lambda x: jnp.repeat(x[:, None], game.num_actions, axis=1), states)
        children = game.step(tiled, jnp.broadcast_to(actions, tiled.ply.shape))
        gained = bb.popcount(children.opponent) - bb.popcount(tiled.mover)
        legal = game.legal_moves(states)
        return jnp.argmax(jnp.where(legal, gained, -1), axis=1).astype(jnp.int32)
    return act


def random_act(game: Othello):
    """Batched act: a uniformly random legal action."""
    def act(states: State, key: jax.Array) -> jax.Array:
        legal = game.legal_moves(states)
        logits = jnp.where(legal | states.terminal[:, None], 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32)
    return act
