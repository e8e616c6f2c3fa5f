"""Opening lines for fair matches: read from a transcript file (such as the XOT list) or
generated as random lines of k plies filtered to the most balanced positions.

An opening is a list of actions from the initial position (passes included). Files hold one
transcript per line (``f5d6c3d3...``); anything after the first whitespace on a line, blank
lines and lines starting with ``#`` are ignored (the arena's saved games have this layout too).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents import alphabeta
from othello_jax.errors import InputError
from othello_jax.game import NotationError, Othello, State, format_transcript, parse_transcript
from othello_jax.game.lines import LINE_OK, pad_lines, replay_lines_jit


class OpeningError(InputError):
    """An unreadable or illegal opening (one-line message naming the line)."""


def read_transcripts(path: str | Path) -> list[tuple[int, str]]:
    """(line number, transcript) for every opening line of a file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise OpeningError(f"openings file {path} does not exist")
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.strip()
        if text and not text.startswith("#"):
            found.append((number, text.split()[0]))
    if not found:
        raise OpeningError(f"openings file {path} holds no transcripts")
    return found


def replay(lines: Sequence[Sequence[int]], game: Othello) -> tuple[State, list[list[int]]]:
    """Start positions of the lines (batched) and the lines with forced passes written out.

    Raises :class:`OpeningError` naming the first line with an illegal move or that ends the game.
    """
    if not lines:
        raise OpeningError("no openings given")
    out = replay_lines_jit(jnp.asarray(pad_lines(lines)), game)
    error, error_move = np.asarray(out.error), np.asarray(out.error_move)
    bad = np.flatnonzero(error != LINE_OK)
    if bad.size:
        row = int(bad[0])
        raise OpeningError(f"opening {row + 1} ({format_transcript(lines[row], game.size)}): move "
                           f"{error_move[row] + 1} is illegal")
    over = np.flatnonzero(np.asarray(out.final.terminal))
    if over.size:
        row = int(over[0])
        raise OpeningError(f"opening {row + 1} ({format_transcript(lines[row], game.size)}) ends the game")
    passed = np.asarray(out.passed)
    written = [[a for t, move in enumerate(line) for a in ([game.pass_action] if passed[row, t] else []) + [int(move)]]
               for row, line in enumerate(lines)]
    return out.final, written


def load_openings(path: str | Path, game: Othello) -> list[list[int]]:
    """Every opening of a transcript file, checked for legality (forced passes written out)."""
    numbered = read_transcripts(path)
    lines = []
    for number, text in numbered:
        try:
            lines.append(parse_transcript(text, game.size))
        except NotationError as error:
            raise OpeningError(f"{path}, line {number}: {error}") from None
    try:
        return replay(lines, game)[1]
    except OpeningError as error:
        raise OpeningError(f"{path}: {error}") from None


def sample_openings(lines: Sequence[Sequence[int]], count: int, key: jax.Array) -> list[list[int]]:
    """``count`` openings drawn without replacement (cycling through all of them when more are asked)."""
    order = np.asarray(jax.random.permutation(key, len(lines)))
    repeats = -(-count // len(lines))
    return [list(lines[i]) for i in np.tile(order, repeats)[:count]]


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _random_lines(key: jax.Array, game: Othello, count: int, plies: int) -> tuple[State, jax.Array]:
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())

    def body(states, key):
        action = game.random_legal_action(states, key)
        return game.step(states, action), action

    return jax.lax.scan(body, states, jax.random.split(key, plies))


def balanced_openings(game: Othello, count: int, plies: int, key: jax.Array, depth: int = 2,
                      candidates: int = 8) -> list[list[int]]:
    """``count`` random ``plies``-ply lines whose positions look most even.

    Draws ``candidates * count`` random lines, drops finished games and repeated positions, and
    keeps those with the smallest alpha-beta (``depth``) value. Repeats lines only when the board
    has fewer distinct positions at that depth than asked for.
    """
    if count < 1 or plies < 0:
        raise OpeningError(f"need at least one opening of >= 0 plies, got count={count}, plies={plies}")
    draw_key, order_key = jax.random.split(key)
    total = max(candidates * count, 256)  # a common floor: small requests share one compiled draw
    states, actions = _random_lines(draw_key, game, total, plies)
    _, value, _ = jax.jit(alphabeta.negamax, static_argnums=(1, 2))(states, game, depth)
    black, white = game.black_white(states)
    keys = np.stack([np.asarray(x) for x in (black.lo, black.hi, white.lo, white.hi, states.color)], axis=1)
    value, finished = np.abs(np.asarray(value)), np.asarray(states.terminal)
    shuffle = np.asarray(jax.random.permutation(order_key, total))  # random order among equal values
    order = shuffle[np.argsort(value[shuffle], kind="stable")]
    chosen, seen = [], set()
    for row in order:
        position = keys[row].tobytes()
        if finished[row] or position in seen:
            continue
        seen.add(position)
        chosen.append(row)
        if len(chosen) == count:
            break
    if not chosen:
        raise OpeningError(f"no unfinished {plies}-ply opening found on the {game.size}x{game.size} board")
    actions = np.asarray(actions).T  # [total, plies]
    return [[int(a) for a in actions[row]] for row in np.resize(np.asarray(chosen), count)]
