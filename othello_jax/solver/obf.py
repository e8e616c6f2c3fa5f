"""Endgame problems in the .obf format (the FFO test positions): board, side to move, and the
exact score of the best moves.

A line reads ``<64 squares> <X|O>; A2:+38; C7:+36; ...``: each ``move:score`` gives the final
disc difference for the side to move after that move under perfect play.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from othello_jax.game import NotationError, Othello, State, parse_board, parse_square


class EndgameProblem(NamedTuple):
    """One test position and its known move scores (actions, best first)."""

    number: int | None  # position in the published series (FFO #40 ...), when the file name says
    board: str
    state: State
    move_scores: dict[int, int]

    @property
    def score(self) -> int:
        """The exact score of the position (its best move's score)."""
        return max(self.move_scores.values())

    @property
    def best_actions(self) -> list[int]:
        """Every listed move that reaches the exact score."""
        return [a for a, v in self.move_scores.items() if v == self.score]


def parse_obf_line(line: str, game: Othello = Othello(8), number: int | None = None) -> EndgameProblem:
    """One .obf line -> EndgameProblem (NotationError naming the problem if malformed)."""
    fields = [f.strip() for f in line.strip().split(";")]
    state, _ = parse_board(fields[0], game)
    scores: dict[int, int] = {}
    for field in filter(None, fields[1:]):
        match = re.fullmatch(r"([A-Za-z][0-9]|pa|PA|--)\s*:\s*([+-]?\d+)", field)
        if not match:
            raise NotationError(f"move score {field!r} is not of the form A2:+38")
        scores[parse_square(match.group(1), game.size)] = int(match.group(2))
    if not scores:
        raise NotationError("board line lists no move scores")
    return EndgameProblem(number, fields[0], state, scores)


def load_obf(path: str | Path, game: Othello = Othello(8)) -> list[EndgameProblem]:
    """Every problem in an .obf file; FFO numbers come from names like ``fforum-40-59.obf``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"endgame file not found: {path}")
    series = re.search(r"-(\d+)-\d+\.obf$", path.name)
    first = int(series.group(1)) if series else None
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("%")]
    problems = []
    for index, line in enumerate(lines):
        try:
            problems.append(parse_obf_line(line, game, None if first is None else first + index))
        except NotationError as err:
            raise NotationError(f"{path.name} line {index + 1}: {err}") from None
    return problems
