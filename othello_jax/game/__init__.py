"""Pure-functional, jittable Othello on uint32-pair bitboards (board sizes 4, 6, 8)."""

from othello_jax.game.notation import (
    NotationError,
    board_string,
    format_transcript,
    parse_board,
    parse_square,
    parse_transcript,
    play_transcript,
    render,
    square_name,
)
from othello_jax.game.perft import perft
from othello_jax.game.rules import BLACK, SIZES, WHITE, ActFn, Othello, State, batch_of_one, state_nbytes
from othello_jax.game.symmetry import (
    NUM_SYMMETRIES,
    compose,
    inverse,
    transform_action,
    transform_bitboard,
    transform_grid,
    transform_policy,
    transform_state,
)

__all__ = [
    "ActFn", "BLACK", "WHITE", "SIZES", "NUM_SYMMETRIES", "NotationError", "Othello", "State",
    "batch_of_one", "board_string", "compose", "format_transcript", "inverse", "parse_board", "parse_square",
    "parse_transcript", "perft", "play_transcript", "render", "square_name", "state_nbytes",
    "transform_action", "transform_bitboard", "transform_grid", "transform_policy", "transform_state",
]
