"""``experiments/ab_screen``: the command line of each arm's run, the pretrained arm's start and
budget, and its one-line refusals (argparse, exit 2) before anything trains."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import ab_screen


def _flags(command: list[str]) -> dict[str, str]:
    return dict(item[2:].split("=", 1) for item in command if item.startswith("--"))


def test_the_pretrained_arm_starts_from_its_seeds_network_and_trains_the_rest_of_the_budget():
    pretrained = _flags(ab_screen.train_command("pretrained", 2, 26.0, Path("runs/x"), ["train.batch_size=256"],
                                                init_network="runs/sl_s{seed}", init_minutes=5.0))
    assert pretrained["config.init_network"] == "runs/sl_s2"
    assert pretrained["config.max_minutes"] == "21" and pretrained["config.seed"] == "2"
    assert pretrained["config.train.batch_size"] == "256"
    baseline = _flags(ab_screen.train_command("baseline", 2, 26.0, Path("runs/y"), [],
                                              init_network="runs/sl_s{seed}", init_minutes=5.0))
    assert baseline["config.max_minutes"] == "26" and "config.init_network" not in baseline


@pytest.mark.parametrize("args, message", [
    (["--arms", "baseline", "pretrained"], "needs --init-network"),
    (["--arms", "baseline", "--minutes", "5", "--init-minutes", "5"], "--init-minutes must be in [0, --minutes)"),
    (["--arms", "nope"], "unknown arm(s) nope"),
])
def test_bad_arguments_are_refused_before_anything_trains(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        ab_screen.main([*args, "--root", str(tmp_path / "ab")])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "ab").exists()
