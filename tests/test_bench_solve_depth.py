"""The solve-depth benchmark finds positions at each asked empties in the network's own games,
times a solve and a searched move on each, and names a candidate depth: run on 4x4 with an
untrained tiny network, so it is quick."""

from __future__ import annotations

from experiments import bench_solve_depth


def test_main_times_solves_and_searches_per_empties(tmp_path, capsys):
    openings = tmp_path / "openings.txt"
    openings.write_text("b1\na2\nd3\nc4\n")  # the four legal first moves on 4x4
    assert bench_solve_depth.main(["--size=4", "--network=net:preset=tiny", "--openings", str(openings),
                                   "--empties=6,8", "--count=1", "--games=4", "--sims=2"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in (["6"], ["8"])}
    assert set(rows) == {"6", "8"}
    for fields in rows.values():
        assert int(fields[1]) >= 1  # positions found and timed
        assert all(float(value) >= 0 for value in fields[2:5] + fields[6:])
    assert "candidate depth" in out
