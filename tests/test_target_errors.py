"""experiments/target_errors.py: value targets and policy targets of self-play positions against
exact results (the strength issue's "targets" measurement)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments import target_errors
from othello_jax.solver import exact_values

MAX_EMPTIES = 8


@pytest.fixture(scope="module")
def measured():
    out, game, apply_fn, variables = target_errors.play("builtin:6x6", games=8, sims=2, temperature_plies=4, seed=0)
    return game, out, target_errors.measure(out, game, apply_fn, variables, MAX_EMPTIES, td_lambda=0.98, workers=1)


def test_exact_results_agree_with_the_jax_solver(measured):
    game, _, m = measured
    assert len(m["exact"]) >= 8 and set(np.unique(m["empties"])) <= set(range(1, MAX_EMPTIES + 1))
    value, solved = exact_values(m["states"], game, MAX_EMPTIES)  # an independent solver (C vs JAX)
    assert np.asarray(solved).all()
    np.testing.assert_array_equal(np.sign(np.asarray(value)), m["exact"])


def test_targets_are_the_games_values_and_the_exact_one_replaces_zq_late(measured):
    _, out, m = measured
    values = m["values"]
    assert set(np.unique(values["target z"])) <= {-1.0, 0.0, 1.0}
    np.testing.assert_allclose(values["target zq"], 0.5 * (values["target z"] + values["target q"]), rtol=1e-6)
    late = m["empties"] <= target_errors.EXACT_EMPTIES
    exact_zq = values[f"target zq, exact <= {target_errors.EXACT_EMPTIES}"]
    np.testing.assert_array_equal(exact_zq[late], m["exact"][late])
    np.testing.assert_array_equal(exact_zq[~late], values["target zq"][~late])
    assert 0 < out.samples.mask.sum() and m["policy_optimal"].dtype == bool


def test_the_report_has_a_row_per_target_and_bands_with_positions(measured):
    _, _, m = measured
    text = target_errors.report(m)
    for name in m["values"]:
        assert name + " (MSE / sign)" in text
    assert "1-6 empties" in text and "7-12 empties" in text and "17-20" not in text
    assert "search's policy target optimal" in text

