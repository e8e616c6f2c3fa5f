"""``experiments/trap_census.py``: the game the shipped network lost to greedy by a six-ply trap,
counted move by move from a saved match file."""

from __future__ import annotations

from experiments import trap_census

LOST_GAME = "e6d6c7f3c5c6e3c4c3d3g3f6g7f5g5\tgreedy\tnet:ckpt=builtin:8x8,sims=128\t+64\n"


def test_the_census_finds_the_six_ply_trap_the_network_played(tmp_path, capsys):
    games = tmp_path / "lost.games"
    games.write_text("# header\n" + LOST_GAME)
    counts = trap_census.census([str(games)], "net", max_discs=10)
    assert sum(tally["moves"] for tally in counts.values()) == 7  # white's seven moves
    # d3 with 2 discs: lost in six plies, not four; then two positions where every move was lost
    assert counts[2]["played one lost in 6, not 4"] == 1
    assert sum(tally["played one lost in 6, not 4"] for tally in counts.values()) == 1
    assert counts[2]["every move lost in 6"] == 1 and counts[1]["every move lost in 6"] == 1
    # followed from greedy's side, nothing of the network's is counted
    greedy_side = trap_census.census([str(games)], "greedy", max_discs=10)
    assert sum(tally["played one lost in 6, not 4"] for tally in greedy_side.values()) == 0
    assert trap_census.main([str(games)]) == 0
    assert "| 2 |" in capsys.readouterr().out


def test_a_missing_file_is_a_one_line_error(tmp_path, capsys):
    assert trap_census.main([str(tmp_path / "none.games")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
