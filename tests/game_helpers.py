"""Test helpers: random batched games recorded ply by ply, and a plain reference Othello."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import Othello
from othello_jax.game import bitboard as bb


def to_int(b: bb.Bitboard) -> int:
    """An unbatched bitboard as a Python integer (host side)."""
    return int(np.asarray(b.lo)) | (int(np.asarray(b.hi)) << 32)


DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


@functools.partial(jax.jit, static_argnums=(0, 1))
def _play_random(game: Othello, num_games: int, key: jax.Array):
    plies = 2 * game.num_squares

    def one_ply(state, key):
        legal = game.legal_moves(state)
        logits = jnp.where(legal, 0.0, -jnp.inf)
        logits = jnp.where(state.terminal[:, None], 0.0, logits)
        action = jax.random.categorical(key, logits).astype(jnp.int32)
        black, white = game.black_white(state)
        record = dict(
            black=bb.to_grid(black, game.size), white=bb.to_grid(white, game.size), color=state.color,
            legal=legal, terminal=state.terminal, action=action, passed=state.passed, ply=state.ply,
            diff=game.disc_difference(state),
        )
        return game.step(state, action), record

    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (num_games,) + x.shape), game.init())
    _, records = jax.lax.scan(one_ply, start, jax.random.split(key, plies))
    return records


def random_games(game: Othello, num_games: int, seed: int) -> dict[str, np.ndarray]:
    """Uniformly random legal games, as arrays [game, ply, ...] (plies past the end repeat it)."""
    records = _play_random(game, num_games, jax.random.key(seed))
    return {k: np.swapaxes(np.asarray(v), 0, 1) for k, v in records.items()}


class ReferenceOthello:
    """A deliberately plain, independent Othello on a 2-D list (1 black, -1 white, 0 empty)."""

    def __init__(self, size: int):
        self.n = size
        self.board = [[0] * size for _ in range(size)]
        h = size // 2
        self.board[h - 1][h - 1] = self.board[h][h] = -1
        self.board[h - 1][h] = self.board[h][h - 1] = 1
        self.to_move = 1

    def flips(self, r: int, c: int, player: int) -> list[tuple[int, int]]:
        if self.board[r][c] != 0:
            return []
        out = []
        for dr, dc in DIRS:
            line, rr, cc = [], r + dr, c + dc
            while 0 <= rr < self.n and 0 <= cc < self.n and self.board[rr][cc] == -player:
                line.append((rr, cc))
                rr, cc = rr + dr, cc + dc
            if line and 0 <= rr < self.n and 0 <= cc < self.n and self.board[rr][cc] == player:
                out += line
        return out

    def moves(self, player: int) -> list[int]:
        return [r * self.n + c for r in range(self.n) for c in range(self.n) if self.flips(r, c, player)]

    def game_over(self) -> bool:
        return not self.moves(1) and not self.moves(-1)

    def play(self, action: int) -> None:
        if action == self.n * self.n:
            assert not self.moves(self.to_move), "pass while a placement is legal"
        else:
            r, c = divmod(action, self.n)
            flipped = self.flips(r, c, self.to_move)
            assert flipped, "illegal placement"
            self.board[r][c] = self.to_move
            for rr, cc in flipped:
                self.board[rr][cc] = self.to_move
        self.to_move = -self.to_move

    def final_diff_for(self, player: int) -> int:
        mine = sum(row.count(player) for row in self.board)
        theirs = sum(row.count(-player) for row in self.board)
        empties = self.n * self.n - mine - theirs
        diff = mine - theirs
        return diff + (empties if diff > 0 else -empties if diff < 0 else 0)
