"""The search benchmark runs end to end on a small setting and prints the lines scripts read."""

from __future__ import annotations

import re

import pytest

from experiments import bench_selfplay


@pytest.mark.slow  # ~1 minute (five search variants compiled); the trees are checked in CI by test_search_engine
def test_the_search_benchmark_prints_its_ratios_after_checking_equal_trees(capsys):
    """A tiny run (B=16, 4 simulations, 10-ply roots): (a), (b) and (e) built equal trees (the
    script asserts it) and every ratio line parses as a positive number."""
    assert bench_selfplay.main(["--network", "tiny", "--batch", "16", "--simulations", "4", "--repeats", "1",
                                "--plies", "10"]) == 0
    out = capsys.readouterr().out
    assert "(a), (b) and (e) built equal trees" in out
    share = re.search(r"^network share: (\d+)%$", out, re.M)
    assert share and 0 < int(share.group(1)) <= 100
    for name in ("plain mctx", "pgx setting", "uncompacted", "no exact endings"):
        ratio = re.search(rf"^vs {name}: (\d+\.\d\d)x$", out, re.M)
        assert ratio and float(ratio.group(1)) > 0, name


def test_bad_benchmark_settings_get_one_line_errors(capsys):
    assert bench_selfplay.main(["--network", "huge"]) == 2
    assert capsys.readouterr().err.strip() == "bench_selfplay: unknown network 'huge'; choose from " + ", ".join(
        bench_selfplay.PRESETS)
