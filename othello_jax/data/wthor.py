"""The WThor binary format of the Fédération Française d'Othello (host side, numpy).

Every file starts with a 16-byte header: creation date (century, year, month, day: 4 bytes),
N1 (uint32, number of game records), N2 (uint16, number of name records), the year of the
games (uint16), board size (1 byte: 0 or 8 means 8x8), game type (0 normal, 1 solitaire),
the depth at which the theoretical score was computed, one reserved byte. All integers are
little-endian.

- ``.wtb`` game files: N1 records of 68 bytes: tournament number (uint16), black player
  number (uint16), white player number (uint16), black's actual disc count (uint8), black's
  theoretical disc count under perfect play (uint8), then 60 move bytes ``10 * row + column``
  (11 = a1, 18 = h1, 88 = h8); 0 ends the list early (resignation, timeout, or a game that
  ended with empty squares). Passes are not recorded.
- ``WTHOR.JOU``: N2 player names, 20 bytes each; ``WTHOR.TRN``: N2 tournament names, 26 bytes
  each (NUL-padded, Latin-1).

Malformed files raise :class:`WthorError` with a one-line message naming the file and the
problem. Malformed *moves* inside well-formed records are the replay's business (see
``othello_jax.data.replay``).

Where the database is: :func:`default_directory` (``$OTHELLO_JAX_WTHOR``, else the user cache that
``othello-jax wthor download`` fills, ``othello_jax.data.wthor_download``); every reader resolves an
unset directory there (:func:`resolve_directory`) and says how to get it when it is missing
(:func:`require_database`).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from othello_jax.errors import InputError

HEADER_BYTES = 16
GAME_BYTES = 68
MOVES_PER_GAME = 60
PLAYER_NAME_BYTES = 20
TOURNAMENT_NAME_BYTES = 26
PLAYERS_FILE = "WTHOR.JOU"
TOURNAMENTS_FILE = "WTHOR.TRN"
DIRECTORY_ENV = "OTHELLO_JAX_WTHOR"  # a WThor directory every reader uses by default
DOWNLOAD_COMMAND = "othello-jax wthor download"
DATABASE_SIZE = "~9 MB"  # the yearly game files 1977-2025 and the two names files
NO_MOVE = -1  # decoded action for "no move recorded" (a 0 byte)
BAD_CODE = -2  # decoded action for a byte that is neither 0 nor a square

_HEADER = np.dtype([
    ("century", "u1"), ("year_in_century", "u1"), ("month", "u1"), ("day", "u1"),
    ("num_games", "<u4"), ("num_names", "<u2"), ("game_year", "<u2"),
    ("board_size", "u1"), ("game_type", "u1"), ("depth", "u1"), ("reserved", "u1"),
])
_RECORD = np.dtype([
    ("tournament", "<u2"), ("black", "<u2"), ("white", "<u2"),
    ("black_score", "u1"), ("theoretical_score", "u1"), ("moves", "u1", (MOVES_PER_GAME,)),
])
assert _HEADER.itemsize == HEADER_BYTES and _RECORD.itemsize == GAME_BYTES


class WthorError(InputError):
    """A WThor file that cannot be read (the message names the file and the problem)."""


@dataclasses.dataclass(frozen=True)
class Header:
    """The 16-byte file header."""

    created: datetime.date | None  # None when the stored date is not a valid date
    num_games: int
    num_names: int
    game_year: int
    board_size: int = 8
    game_type: int = 0
    depth: int = 0


class Games(NamedTuple):
    """A batch of game records as parallel numpy arrays (leading axis = games)."""

    tournament: np.ndarray  # uint16 index into the tournament names
    black: np.ndarray  # uint16 index into the player names
    white: np.ndarray  # uint16
    black_score: np.ndarray  # uint8 black's discs at the end as recorded
    theoretical_score: np.ndarray  # uint8
    moves: np.ndarray  # uint8 [G, 60] raw move codes (10 * row + column, 0 = none)
    year: np.ndarray  # uint16 year of the game (from the file header)

    @property
    def num_games(self) -> int:
        return int(self.moves.shape[0])


def _read_bytes(path: str | os.PathLike) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise WthorError(f"{path}: no such WThor file")
    return path.read_bytes()


def _parse_header(data: bytes, path: Path) -> Header:
    if len(data) < HEADER_BYTES:
        raise WthorError(f"{path}: {len(data)} bytes is too short for the {HEADER_BYTES}-byte WThor header")
    h = np.frombuffer(data[:HEADER_BYTES], _HEADER)[0]
    try:
        created = datetime.date(int(h["century"]) * 100 + int(h["year_in_century"]), int(h["month"]), int(h["day"]))
    except ValueError:
        created = None
    return Header(created=created, num_games=int(h["num_games"]), num_names=int(h["num_names"]),
                  game_year=int(h["game_year"]), board_size=int(h["board_size"]) or 8,
                  game_type=int(h["game_type"]), depth=int(h["depth"]))


def _check_length(size: int, count: int, record_bytes: int, what: str, path: Path) -> None:
    expected = HEADER_BYTES + count * record_bytes
    if size != expected:
        problem = "truncated" if size < expected else "has trailing bytes"
        raise WthorError(f"{path}: {problem}: the header announces {count} {what} of {record_bytes} bytes "
                         f"({expected} bytes in all) but the file has {size} bytes")


def read_games(path: str | os.PathLike) -> tuple[Header, Games]:
    """Read a ``.wtb`` file: its header and all its game records."""
    path = Path(path)
    data = _read_bytes(path)
    header = _parse_header(data, path)
    if header.board_size != 8:
        raise WthorError(f"{path}: board size {header.board_size} is not supported (only 8x8 games)")
    _check_length(len(data), header.num_games, GAME_BYTES, "games", path)
    rec = np.frombuffer(data, _RECORD, count=header.num_games, offset=HEADER_BYTES)
    games = Games(
        tournament=rec["tournament"].copy(), black=rec["black"].copy(), white=rec["white"].copy(),
        black_score=rec["black_score"].copy(), theoretical_score=rec["theoretical_score"].copy(),
        moves=rec["moves"].copy(), year=np.full(header.num_games, header.game_year, np.uint16))
    return header, games


def _read_names(path: str | os.PathLike, record_bytes: int, what: str) -> list[str]:
    path = Path(path)
    data = _read_bytes(path)
    header = _parse_header(data, path)
    _check_length(len(data), header.num_names, record_bytes, what, path)
    body = data[HEADER_BYTES:]
    return [body[i * record_bytes:(i + 1) * record_bytes].split(b"\0", 1)[0].decode("latin-1").strip()
            for i in range(header.num_names)]


def read_players(path: str | os.PathLike) -> list[str]:
    """Player names from ``WTHOR.JOU`` (index = player number in the game records)."""
    return _read_names(path, PLAYER_NAME_BYTES, "player names")


def read_tournaments(path: str | os.PathLike) -> list[str]:
    """Tournament names from ``WTHOR.TRN`` (index = tournament number in the game records)."""
    return _read_names(path, TOURNAMENT_NAME_BYTES, "tournament names")


def check_file(path: str | os.PathLike, name: str | None = None) -> Header:
    """The header of a whole, well-formed WThor file: a ``WTH_YYYY.wtb`` game file (8x8, 68 bytes a
    game) or a ``WTHOR.JOU`` / ``WTHOR.TRN`` names file (20 / 26 bytes a name), the kind told by
    ``name`` (default: the file's own name), its size what the header announces; else
    :class:`WthorError`. Reads only the header, so a download can be checked before it is kept."""
    path = Path(path)
    name = (name or path.name).upper()
    if not path.is_file():
        raise WthorError(f"{path}: no such WThor file")
    with path.open("rb") as file:
        header = _parse_header(file.read(HEADER_BYTES), path)
    size = path.stat().st_size
    if _GAME_FILE.fullmatch(name):
        if header.board_size != 8:
            raise WthorError(f"{path}: board size {header.board_size} is not supported (only 8x8 games)")
        _check_length(size, header.num_games, GAME_BYTES, "games", path)
    elif name == PLAYERS_FILE:
        _check_length(size, header.num_names, PLAYER_NAME_BYTES, "player names", path)
    elif name == TOURNAMENTS_FILE:
        _check_length(size, header.num_names, TOURNAMENT_NAME_BYTES, "tournament names", path)
    else:
        raise WthorError(f"{path}: not a WThor file name (WTH_YYYY.wtb, {PLAYERS_FILE} or {TOURNAMENTS_FILE})")
    return header


def decode_moves(codes: np.ndarray) -> np.ndarray:
    """Raw move bytes -> int32 action indices (row * 8 + column); 0 -> ``NO_MOVE``.

    Codes that are neither 0 nor a square (11..88 with both digits 1..8) map to ``BAD_CODE``,
    so the replay can report them as corrupt.
    """
    codes = np.asarray(codes, np.int32)
    row, col = codes // 10 - 1, codes % 10 - 1
    on_board = (row >= 0) & (row < 8) & (col >= 0) & (col < 8)
    return np.where(codes == 0, NO_MOVE, np.where(on_board, row * 8 + col, BAD_CODE)).astype(np.int32)


def encode_moves(actions: np.ndarray) -> np.ndarray:
    """Inverse of :func:`decode_moves` for squares and ``NO_MOVE`` (passes must be removed first)."""
    actions = np.asarray(actions, np.int32)
    codes = (actions // 8 + 1) * 10 + actions % 8 + 1
    return np.where(actions < 0, 0, codes).astype(np.uint8)


@dataclasses.dataclass(frozen=True)
class Database:
    """All game files of a WThor directory, concatenated in year order, with the name tables."""

    games: Games
    players: list[str]
    tournaments: list[str]
    files: tuple[str, ...]

    def player(self, number: int) -> str:
        return self.players[number] if 0 <= number < len(self.players) else f"#{number}"

    def tournament(self, number: int) -> str:
        return self.tournaments[number] if 0 <= number < len(self.tournaments) else f"#{number}"


_GAME_FILE = re.compile(r"WTH_(\d{4})\.wtb", re.IGNORECASE)


def default_directory(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the readers look for the database unless told: ``$OTHELLO_JAX_WTHOR``, else
    ``$XDG_CACHE_HOME/othello-jax/wthor``, else ``~/.cache/othello-jax/wthor`` (where ``othello-jax
    wthor download`` puts it), so a fresh clone needs no flag once the database is fetched."""
    if environ.get(DIRECTORY_ENV):
        return Path(environ[DIRECTORY_ENV]).expanduser()
    cache = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(cache).expanduser() / "othello-jax" / "wthor"


def resolve_directory(directory: str | os.PathLike | None, environ: Mapping[str, str] = os.environ) -> Path:
    """A directory given (``~`` expanded), or :func:`default_directory` when it is None or empty."""
    return Path(directory).expanduser() if directory else default_directory(environ)


def require_database(directory: str | os.PathLike | None, option: str,
                     environ: Mapping[str, str] = os.environ) -> Path:
    """The resolved directory if it holds ``WTH_YYYY.wtb`` files; else :class:`WthorError` in one line
    saying how to get the database, or ``option`` (e.g. ``pass --wthor=DIR``) to point at a copy."""
    path = resolve_directory(directory, environ)
    if not (path.is_dir() and any(_GAME_FILE.fullmatch(p.name) for p in path.iterdir())):
        raise WthorError(f"WThor database not found at {path}; run `{DOWNLOAD_COMMAND}` to fetch the "
                         f"Fédération Française d'Othello's expert games ({DATABASE_SIZE}), or {option}")
    return path


def game_files(directory: str | os.PathLike) -> list[Path]:
    """The ``WTH_YYYY.wtb`` files of a directory, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        raise WthorError(f"{directory}: not a directory (expected a WThor database with WTH_YYYY.wtb files)")
    files = sorted((p for p in directory.iterdir() if _GAME_FILE.fullmatch(p.name)), key=lambda p: p.name.lower())
    if not files:
        raise WthorError(f"{directory}: no WTH_YYYY.wtb game files found")
    return files


def theory_depths(directory: str | os.PathLike) -> dict[str, int]:
    """Each game file's header depth: the empty squares its theoretical scores were computed at."""
    return {path.name: _parse_header(_read_bytes(path)[:HEADER_BYTES], path).depth for path in game_files(directory)}


def concatenate(parts: list[Games]) -> Games:
    """Join game batches along the game axis."""
    return Games(*(np.concatenate(fields) for fields in zip(*parts, strict=False)))


def _find(directory: Path, name: str) -> Path | None:
    matches = [p for p in directory.iterdir() if p.name.lower() == name.lower()]
    return matches[0] if matches else None


def load_database(directory: str | os.PathLike) -> Database:
    """Read every ``WTH_YYYY.wtb`` of a directory plus ``WTHOR.JOU``/``WTHOR.TRN`` if present."""
    files = game_files(directory)
    parts = [read_games(p)[1] for p in files]
    directory = Path(directory)
    jou, trn = _find(directory, PLAYERS_FILE), _find(directory, TOURNAMENTS_FILE)
    return Database(games=concatenate(parts),
                    players=read_players(jou) if jou else [],
                    tournaments=read_tournaments(trn) if trn else [],
                    files=tuple(p.name for p in files))
