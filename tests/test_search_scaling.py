"""experiments/search_scaling.py: a network's test-set score by simulations, and split by how
decided the position is (the size of its exact value)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from experiments import search_scaling
from othello_jax.solver import solved_moves as ts


def _positions() -> ts.TestSet:
    """The shipped test set's informative positions, one from each size of exact value and more."""
    testset = ts.load()
    return testset.take(np.flatnonzero(ts.informative(testset)))


def test_by_margin_groups_positions_by_the_size_of_their_exact_value():
    testset = _positions()
    values = np.where(testset.values == ts.NO_VALUE, -127, testset.values.astype(np.int64))
    perfect, worst = values.argmax(axis=1), np.where(testset.values == ts.NO_VALUE, 127, values).argmin(axis=1)
    lines = search_scaling.by_margin(testset, {0: perfect, 1: worst})
    size = np.abs(testset.best.astype(np.int64))
    counts = [int(n) for n in re.findall(r": (\d+) positions$", "\n".join(lines), re.M)]
    assert counts == [int(((size >= lo) & (size <= hi)).sum()) for lo, hi, _ in search_scaling.MARGINS]
    assert sum(counts) == len(testset) and min(counts) > 0
    perfect_lines = [line for line in lines if line.strip().startswith("0 ")]
    assert len(perfect_lines) == 3 and all("optimal 100.0%" in line and "loss/move  0.00" in line
                                           for line in perfect_lines)
    decided = np.flatnonzero(size >= 13)
    loss = (testset.best[decided] - values[decided, worst[decided]]).mean()
    assert f"loss/move {loss:5.2f}" in [line for line in lines if line.strip().startswith("1 ")][-1]


@pytest.mark.slow  # an experiment's whole run (a search compiled per simulation count): a CI minute
def test_main_on_a_sample_of_a_test_set(capsys):
    assert search_scaling.main(["--checkpoint=builtin:6x6", "--sims", "0", "2", "--no-variants",
                                "--positions=60"]) == 0
    out = capsys.readouterr().out
    assert "test set 60 informative positions" in out
    counts = [int(n) for n in re.findall(r"^  .*: (\d+) positions$", out, re.M)]
    assert len(counts) == 3 and sum(counts) == 60, out
