"""Move lines (openings, transcripts, recorded games) as padded action tables."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pad_lines(lines: Sequence[Sequence[int]]) -> np.ndarray:
    """Action lists -> int32[M, L] padded with -1."""
    width = max([len(line) for line in lines] + [1])
    table = np.full((len(lines), width), -1, np.int32)
    for row, line in enumerate(lines):
        table[row, : len(line)] = line
    return table
