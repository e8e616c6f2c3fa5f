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


def test_the_8x8_screen_trains_othello8_cpu():
    flags = _flags(ab_screen.train_command("endings", 1, 12.0, Path("runs/e"), [], board=8))
    assert flags["config"] == "experiments/configs/othello8_cpu.py" and flags["config.max_minutes"] == "12"
    assert flags["config.search.exact_endings"] == "True"
    six = _flags(ab_screen.train_command("baseline", 1, 12.0, Path("runs/b"), []))
    assert six["config"] == "experiments/configs/othello6_cpu.py"


@pytest.mark.slow  # two 8x8 search matches to compile: 163 s of CI's 30 minutes (2026-12-02)
def test_the_8x8_screen_scores_against_greedy_and_alpha_beta_4(tmp_path):
    scores = ab_screen.score_run_8x8("builtin:8x8", games=2, sims=2, seed=0)
    for name in ("greedy", "ab4"):
        assert scores[f"{name}_games"] == 2 and 0 <= scores[name] <= 1
        assert 0 <= scores[f"{name}_wipeouts"] <= 2 - 2 * scores[name]  # a wipeout is a lost game
    row = ab_screen.arm_row_8x8("endings", [({"positions_per_s": 700.0, "iterations": 60}, scores)] * 2, 12.0)
    assert row.startswith("| endings | 2 | 12 | 700 | 60.0 | ") and row.count("; 4 games)") == 2
    assert f"| {2 * scores['greedy_wipeouts']} |" in row


def test_a_6x6_row_pools_the_seeds_moves_and_intervals():
    seed = {"moves": 400, "optimal": 0.75, "disc_loss": 12.0, "disc_loss_interval": [11.0, 13.0],
            "ab3": 0.9, "ab3_ci": 0.04, "ab3_games": 200}
    other = dict(seed, optimal=0.70, disc_loss=10.0, disc_loss_interval=[9.0, 11.0], ab3=0.8)
    row = ab_screen.arm_row("wdl", [({"positions_per_s": 500.0, "iterations": 30}, seed),
                                    ({"positions_per_s": 700.0, "iterations": 31}, other)], 26.0)
    # 580 optimal of 800 pooled moves: Wilson [69.3, 75.5]; two seeds' half-widths 1.0 and 0.04
    # pool to sqrt(2)/2 of each
    assert row == ("| wdl | 2 | 26 | 600 | 30.5 | 72.5% [69.3, 75.5] (75.0, 70.0) | 11.00 +- 0.71 (12.00, 10.00) | "
                   "0.850 +- 0.028 (400 games) |")


@pytest.mark.parametrize("args, message", [
    (["--arms", "baseline", "pretrained"], "needs --init-network"),
    (["--arms", "baseline", "--minutes", "5", "--init-minutes", "5"], "--init-minutes must be in [0, --minutes)"),
    (["--arms", "nope"], "unknown arm(s) nope"),
    (["--arms", "baseline", "supervised", "--board", "8"], "are 6x6 only"),
])
def test_bad_arguments_are_refused_before_anything_trains(args, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        ab_screen.main([*args, "--root", str(tmp_path / "ab")])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "ab").exists()


def test_the_supervised_arm_makes_its_labels_inside_the_budget_and_learns_for_the_rest():
    command = ab_screen.train_command("supervised", 1, 26.0, Path("runs/z"), ["train.batch_size=256"])
    assert command[1:3] == ["-m", "experiments.label_then_learn"]
    assert _flags(command) == {"minutes": "26", "seed": "1", "workdir": "runs/z",
                               "per-band": ab_screen.LABEL_ARMS["supervised"]}


@pytest.mark.slow  # an experiment's arm trained end to end: a CI minute (its bad input is checked below)
def test_label_then_learn_charges_the_labels_to_the_budget_and_reuses_them(tmp_path, capsys):
    import json

    from experiments import label_then_learn

    workdir = tmp_path / "sup"
    args = ["--seed", "3", "--workdir", str(workdir), "--per-band", "8-10:200"]
    # a budget the labels alone exceed: they are made and kept, and the run stops with exit 2
    assert label_then_learn.main(["--minutes", "0.01", *args]) == 2
    assert "no time left to learn" in capsys.readouterr().err
    record = json.loads((workdir / "labels.json").read_text())
    assert record["per_band"] == "8-10:200" and record["seconds"] > 0.6
    made = (workdir / "labels.npz").stat().st_mtime_ns
    # a rerun with room to learn reuses the labels and still charges their measured cost; the
    # --config overrides reach the learning (4 steps here)
    minutes = record["seconds"] / 60 + 3
    assert label_then_learn.main(["--minutes", f"{minutes:.4f}", *args, "--config.total_steps=4",
                                  "--config.eval_every=0"]) == 0
    assert (workdir / "labels.npz").stat().st_mtime_ns == made
    assert "learning for the 3.00 left" in capsys.readouterr().out
    steps = [json.loads(line)["step"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 4


def test_label_then_learn_refuses_bad_input_in_one_line(tmp_path, capsys):
    from experiments import label_then_learn

    with pytest.raises(SystemExit) as stop:
        label_then_learn.main(["--minutes", "5", "--workdir", str(tmp_path / "w"), "--network=big"])
    assert stop.value.code == 2 and "only --config.KEY=VALUE goes to the learning" in capsys.readouterr().err
    # make-labels' own refusal (a band beyond the board) passes through as exit 2, with no record
    assert label_then_learn.main(["--minutes", "5", "--workdir", str(tmp_path / "w"), "--per-band", "8-40:5"]) == 2
    assert not (tmp_path / "w" / "labels.json").exists()
