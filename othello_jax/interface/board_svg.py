"""An Othello position as an SVG picture, for notebooks (``IPython.display.SVG``) and files.

Draws the green board with coordinates, the discs, small dots on the legal moves, a marker on
the last move, and optional short labels per square (e.g. the search's visit counts).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

BOARD_GREEN = "#2e7d32"
GRID = "#1b4d1e"


def _text(x: float, y: float, text: str, size: float, fill: str, weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:.1f}" font-family="sans-serif" '
            f'font-weight="{weight}" fill="{fill}" text-anchor="middle" dominant-baseline="central">'
            f"{text}</text>")


def board_svg(state: State, game: Othello = Othello(8), last_move: int | None = None,
              labels: Mapping[int, str] | None = None, show_legal: bool = True, cell: int = 44) -> str:
    """SVG markup of one (unbatched) position.

    ``last_move``: action to mark with a red dot (passes are ignored). ``labels``: text to
    print on squares, keyed by action (drawn in the disc's contrasting colour).
    """
    size, margin = game.size, cell // 2
    black, white = (np.asarray(bb.to_grid(x, size)) for x in game.black_white(state))
    legal = np.asarray(bb.to_grid(state.legal, size)) & show_legal
    width = 2 * margin + size * cell
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{width}" '
             f'viewBox="0 0 {width} {width}">',
             f'<rect x="0" y="0" width="{width}" height="{width}" fill="#f5f5f0"/>',
             f'<rect x="{margin}" y="{margin}" width="{size * cell}" height="{size * cell}" fill="{BOARD_GREEN}"/>']
    for i in range(size + 1):
        at = margin + i * cell
        parts.append(f'<line x1="{margin}" y1="{at}" x2="{margin + size * cell}" y2="{at}" stroke="{GRID}"/>')
        parts.append(f'<line x1="{at}" y1="{margin}" x2="{at}" y2="{margin + size * cell}" stroke="{GRID}"/>')
    for i in range(size):
        centre = margin + (i + 0.5) * cell
        parts.append(_text(centre, margin / 2, chr(ord("a") + i), cell * 0.3, "#333"))
        parts.append(_text(margin / 2, centre, str(i + 1), cell * 0.3, "#333"))
    labels = labels or {}
    for row in range(size):
        for col in range(size):
            action = row * size + col
            x, y = margin + (col + 0.5) * cell, margin + (row + 0.5) * cell
            ink = "#fff"
            if black[row, col] or white[row, col]:
                fill, ink = ("#111", "#fff") if black[row, col] else ("#fafafa", "#111")
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{cell * 0.42:.1f}" fill="{fill}" stroke="#000"/>')
            elif legal[row, col] and action not in labels:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{cell * 0.08:.1f}" fill="#0009"/>')
            if action == last_move:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{cell * 0.1:.1f}" fill="#e53935"/>')
            if action in labels:
                parts.append(_text(x, y, _escape(labels[action]), cell * 0.28, ink, "bold"))
    parts.append("</svg>")
    return "\n".join(parts)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
