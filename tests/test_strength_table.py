"""experiments/strength_table.py: a player x opponent table of matches that resumes from its cells file."""

from __future__ import annotations

import json

import pytest

from experiments import strength_table
from othello_jax.evaluation import arena


def test_every_cell_is_a_match_on_the_columns_openings_and_a_stopped_table_resumes(tmp_path, capsys, monkeypatch):
    cells = tmp_path / "cells.jsonl"
    argv = ["--size=6", "--games=6", f"--cells={cells}", "--player", "rand=random", "--player", "greedy=greedy",
            "--opponent", "ab1=alphabeta:depth=1", "--opponent", "rand=random"]
    played = []
    real = arena.play_match

    def recording(game, first, second, lines, key, **kwargs):
        played.append((first.name, second.name, [tuple(line) for line in lines]))
        return real(game, first, second, lines, key, **kwargs)

    monkeypatch.setattr(arena, "play_match", recording)
    assert strength_table.main(argv) == 0
    records = [json.loads(line) for line in cells.read_text().splitlines()]
    assert [(r["player"], r["opponent"]) for r in records] == [("rand", "ab1"), ("greedy", "ab1"),
                                                                 ("rand", "rand"), ("greedy", "rand")]
    for r in records:
        assert r["games"] == 6 and r["wins"] + r["draws"] + r["losses"] == 6
        assert r["score"] == pytest.approx((r["wins"] + r["draws"] / 2) / 6)
        assert r["score"] == pytest.approx((r["score_as_black"] + r["score_as_white"]) / 2)
    # both rows of a column meet the same openings; the columns differ
    assert played[0][2] == played[1][2] and played[2][2] == played[3][2] and played[0][2] != played[2][2]
    table = capsys.readouterr().out.strip().splitlines()[-4:]
    assert table[0] == "| player | ab1 | rand |"
    assert table[2].startswith(f"| rand | {records[0]['score']:.3f} +- ")

    # resumed: nothing is played again, the same table is printed; a new column is played alone
    played.clear()
    assert strength_table.main(argv) == 0
    assert played == [] and capsys.readouterr().out.strip().splitlines()[-4:] == table
    assert strength_table.main(argv + ["--opponent", "greedy=greedy"]) == 0
    assert [(first, second) for first, second, _ in played] == [("random", "greedy"), ("greedy", "greedy")]
    assert len(cells.read_text().splitlines()) == 6


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert strength_table.main(["--games=5", "--player", "a=random", "--opponent", "b=random"]) == 2
    assert strength_table.main(["--games=4", "--player", "a=nonsense", "--opponent", "b=random"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("strength_table: ") for line in err)
    with pytest.raises(SystemExit):
        strength_table.main(["--player", "no-label", "--opponent", "b=random"])
