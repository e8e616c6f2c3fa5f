"""Test helpers: write WThor files (the inverse of the readers in ``othello_jax.data.wthor``)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import numpy as np

from othello_jax.data import wthor


def _header_bytes(num_games: int, num_names: int, game_year: int, created: datetime.date, depth: int) -> bytes:
    h = np.zeros((), wthor._HEADER)
    h["century"], h["year_in_century"] = divmod(created.year, 100)
    h["month"], h["day"] = created.month, created.day
    h["num_games"], h["num_names"], h["game_year"] = num_games, num_names, game_year
    h["board_size"], h["depth"] = 8, depth
    return h.tobytes()


def write_games(path: str | os.PathLike, games: wthor.Games, game_year: int,
                created: datetime.date | None = None, depth: int = 0) -> None:
    """Write game records as a ``.wtb`` file (the inverse of :func:`othello_jax.data.wthor.read_games`)."""
    rec = np.zeros(games.num_games, wthor._RECORD)
    for field in ("tournament", "black", "white", "black_score", "theoretical_score", "moves"):
        rec[field] = getattr(games, field)
    created = created or datetime.date.today()
    Path(path).write_bytes(_header_bytes(games.num_games, 0, game_year, created, depth) + rec.tobytes())


def _write_names(path: str | os.PathLike, names: list[str], record_bytes: int) -> None:
    body = b"".join(name.encode("latin-1")[:record_bytes - 1].ljust(record_bytes, b"\0") for name in names)
    Path(path).write_bytes(_header_bytes(0, len(names), 0, datetime.date.today(), 0) + body)


def write_players(path: str | os.PathLike, names: list[str]) -> None:
    """Write a ``WTHOR.JOU``-style player file."""
    _write_names(path, names, wthor.PLAYER_NAME_BYTES)


def write_tournaments(path: str | os.PathLike, names: list[str]) -> None:
    """Write a ``WTHOR.TRN``-style tournament file."""
    _write_names(path, names, wthor.TOURNAMENT_NAME_BYTES)


def sample_games(count: int, seed: int = 0) -> wthor.Games:
    """``count`` records of random players and scores opening f5 d6 c3 (for tests of files, never replayed)."""
    rng = np.random.default_rng(seed)
    moves = np.zeros((count, wthor.MOVES_PER_GAME), np.uint8)
    moves[:, :3] = (56, 64, 33)  # f5 d6 c3 as 10 * row + column
    number = lambda high: rng.integers(0, high, count).astype(np.uint16)
    score = rng.integers(0, 65, count).astype(np.uint8)
    return wthor.Games(tournament=number(3), black=number(4), white=number(4), black_score=score,
                       theoretical_score=score, moves=moves, year=np.zeros(count, np.uint16))
