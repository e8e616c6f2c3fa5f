"""experiments/bench_time_strength.py: a cell played in parts adds up to the match of all its games,
and a stopped cell resumes at its first unplayed part (the table takes ~26 hours of a 2-core CPU)."""

from __future__ import annotations

import json
import types

import jax
import numpy as np
import pytest

from experiments import bench_time_strength as bench
from othello_jax.evaluation import arena
from othello_jax.game import Othello

GAME = Othello(8)


def fake_part(seconds, sims, lines, key):
    """A part's record without playing: disc differences from the key, one searched move a game."""
    diffs = np.asarray(jax.random.randint(key, (2, len(lines)), -64, 65), np.int32)
    return {"black_disc_diff": diffs.tolist(), "wall_s": 1.0, "searched_moves": 2 * len(lines),
            "simulations": 300 * 2 * len(lines), "move_s": 0.9 * 2 * len(lines), "max_move_s": 1.1,
            "opponent_searched_moves": 2 * len(lines), "opponent_move_s": 0.8 * 2 * len(lines)}


@pytest.fixture
def played(monkeypatch):
    """play_part replaced by fake_part; the parts it was asked to play, in order."""
    calls = []

    def play_part(timed, seconds, sims, lines, key):
        calls.append(len(lines))
        return fake_part(seconds, sims, lines, key)

    monkeypatch.setattr(bench, "play_part", play_part)
    return calls


def test_a_cell_in_parts_scores_as_one_match_of_its_games(played):
    timed = types.SimpleNamespace(game=GAME)
    lines = [[19]] * 7  # 7 openings, 14 games, in parts of 3, 3 and 1 openings
    saved = {}
    record = bench.play_cell(timed, 1.0, 256, lines, jax.random.PRNGKey(0), 3, {}, saved.__setitem__)
    assert played == [3, 3, 1] and sorted(saved) == [0, 1, 2]
    diffs = np.concatenate([np.asarray(saved[i]["black_disc_diff"]) for i in range(3)], axis=1)
    whole = arena.MatchResult(GAME, "a", "b", [[]] * 7, np.zeros((2, 7, 0), np.int32), diffs, 0.0).summary()
    assert record["games"] == 14 and record["score"] == whole.score and record["ci95"] == whole.score_ci
    assert record["mean_simulations"] == 300 and record["max_move_s"] == 1.1
    assert record["mean_move_s"] == pytest.approx(0.9) and record["opponent_mean_move_s"] == pytest.approx(0.8)


def test_a_stopped_cell_resumes_at_its_first_unplayed_part(played, tmp_path, monkeypatch, capsys):
    """main with --cells: a run stopped after its first part plays only the rest when started
    again, and ends with the same cell as a run never stopped."""

    class Timed:  # the search is not needed: the parts are fakes
        def __init__(self, game, *args, **kwargs):
            self.game = game

        def prepare(self):
            pass

    monkeypatch.setattr(bench, "TimedSearch", Timed)
    monkeypatch.setattr(bench, "load_network", lambda checkpoint: (GAME, types.SimpleNamespace(value_margin=0.0), {}))
    monkeypatch.setattr(bench, "network_apply_fn", lambda game, network: None)
    argv = ["--seconds", "1", "--games=8", "--part=2"]
    straight, stopped = tmp_path / "straight.jsonl", tmp_path / "stopped.jsonl"
    assert bench.main([*argv, f"--cells={straight}"]) == 0 and played == [2, 2]
    lines = straight.read_text().splitlines()
    assert [json.loads(line).get("part") for line in lines] == [0, 1, None]
    stopped.write_text(lines[0] + "\n")  # the first part, then a stop
    played.clear()
    assert bench.main([*argv, f"--cells={stopped}"]) == 0 and played == [2]
    assert json.loads(stopped.read_text().splitlines()[-1]) == json.loads(lines[-1])  # the same cell
    played.clear()
    assert bench.main([*argv, f"--cells={stopped}"]) == 0 and played == []  # the finished cell is not replayed
    assert "score" in capsys.readouterr().out
    assert bench.main([*argv, "--part=0"]) == 2
