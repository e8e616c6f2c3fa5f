"""Elo: the fit recovers known ratings, intervals cover them, tournaments and the plot work."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from othello_jax.agents import parse_agent
from othello_jax.evaluation import elo
from othello_jax.evaluation.elo import EloError, Pairing
from othello_jax.game import Othello

TRUE = {"random": 0.0, "greedy": 150.0, "net-10": 420.0, "alphabeta": 600.0, "net-20": 810.0}


def expected_score(elo_a: float, elo_b: float) -> float:
    """Bradley-Terry expected score of a against b."""
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


def synthetic(games: int, draw_rate: float, rng: np.random.Generator | None) -> list[Pairing]:
    """Round-robin results for TRUE: expected counts (rng None) or sampled ones."""
    pairs = []
    for a, b in elo.round_robin_pairs(list(TRUE)):
        p = expected_score(TRUE[a], TRUE[b])
        draw = min(draw_rate, 2 * min(p, 1 - p))
        probabilities = [p - draw / 2, draw, 1 - p - draw / 2]
        if rng is None:
            counts = [games * q for q in probabilities]
        else:
            counts = rng.multinomial(games, probabilities)
        pairs.append(Pairing(a, b, *map(float, counts)))
    return pairs


def test_fit_recovers_ratings_from_expected_results():
    ratings = elo.fit_elo(synthetic(1000, 0.1, None), anchor="random", prior_draws=0)
    for name, value in TRUE.items():
        assert ratings[name] == pytest.approx(value, abs=1e-6)
    assert ratings.stderr[ratings.players.index("random")] == 0


def test_intervals_cover_the_truth_on_sampled_results():
    rng = np.random.default_rng(0)
    covered, total = 0, 0
    for _ in range(20):
        ratings = elo.fit_elo(synthetic(300, 0.1, rng), anchor="random")
        for name, value in TRUE.items():
            if name != "random":
                low, high = ratings.interval(name)
                covered += low <= value <= high
                total += 1
    assert covered / total > 0.85  # nominal 95%, allowing for the small prior and sampling


def test_draws_count_half():
    ratings = elo.fit_elo([Pairing("a", "b", 0, 10, 0)], anchor="a", prior_draws=0)
    assert ratings["b"] == pytest.approx(0.0, abs=1e-9)
    ratings = elo.fit_elo([Pairing("a", "b", 5, 10, 5), Pairing("b", "c", 15, 10, 5)], anchor="a", prior_draws=0)
    assert ratings["b"] == pytest.approx(0.0, abs=1e-9)
    assert ratings["c"] == pytest.approx(-400 * np.log10(20 / 10), abs=1e-6)  # score 0.667 -> 2:1 odds


def test_a_clean_sweep_stays_finite_with_the_prior():
    ratings = elo.fit_elo([Pairing("random", "strong", 0, 0, 50)], anchor="random")
    assert 400 < ratings["strong"] < 2000 and np.isfinite(ratings.stderr).all()


def test_unrateable_results_give_clear_errors():
    with pytest.raises(EloError, match="anchor 'x'"):
        elo.fit_elo([Pairing("a", "b", 1, 0, 1)], anchor="x")
    with pytest.raises(EloError, match="not connected to the anchor 'a'.*c, d"):
        elo.fit_elo([Pairing("a", "b", 1, 0, 1), Pairing("c", "d", 1, 0, 1)], anchor="a")


def test_ladder_pairs_are_connected_and_cheaper_than_a_round_robin():
    series = [f"ckpt-{i}" for i in range(10)]
    baselines = ["random", "greedy"]
    pairs = elo.ladder_pairs(series, baselines)
    assert ("random", "greedy") in pairs and ("ckpt-3", "ckpt-4") in pairs and ("ckpt-3", "greedy") in pairs
    assert len(pairs) < len(elo.round_robin_pairs(series + baselines))
    fake = [Pairing(a, b, 5, 0, 5) for a, b in pairs]
    assert set(elo.fit_elo(fake, anchor="random").players) == set(series + baselines)


def test_rate_agents_and_plot(tmp_path):
    game = Othello(8)
    agents = {name: parse_agent(name, game) for name in ("greedy", "random")}  # as in test_arena: compiled once
    ratings, pairings = elo.rate_agents(agents, game, games=1000, key=jax.random.PRNGKey(0), anchor="random",
                                        lines=[[] for _ in range(500)])
    assert [p.games for p in pairings] == [1000]
    assert ratings["random"] == 0 and ratings["greedy"] > 0
    # an Elo curve: pretend the two baselines were checkpoints 1 and 2 of a run, plus a reference line
    extended = elo.fit_elo(pairings + [Pairing("greedy", "ab", 10, 0, 90)], anchor="random")
    path = elo.plot_elo(extended, {"random": 1, "greedy": 2}, tmp_path / "elo.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "greedy" in extended.table()


def test_ladder_script_rates_checkpoints(tmp_path, capsys):
    from experiments import eval_ladder
    from tests.tiny_checkpoint import save_tiny_checkpoint

    checkpoint = save_tiny_checkpoint(tmp_path / "run", board_size=4)  # (each network compiles its own match)
    out = tmp_path / "elo.png"
    code = eval_ladder.main([f"--checkpoint=10={checkpoint}", "--baselines=random", "--games=8", f"--out={out}"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "iteration 10 vs random" in printed
    assert re.search(r"^iteration 10 +-?\d+ +\[", printed, re.MULTILINE)  # its row in the ratings table
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert eval_ladder.main(["--baselines=random"]) == 2
    assert "give --workdir" in capsys.readouterr().err
