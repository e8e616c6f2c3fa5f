"""A/B screen of training settings at equal wall-clock time (issue 16, item 1).

Every (arm, seed) trains ``othello6_cpu`` plus the arm's ``--config`` overrides for the same
``--minutes`` of wall clock (compilation included, no evaluation inside the budget), each run
pinned to one CPU core, as many runs at a time as there are cores, so every arm trains under
the same conditions. Then every run's final network is scored with 128 simulations (Gumbel, no
noise) on the perfect-play test set and in ``--games`` games against alpha-beta depth 3 (varied
near-even openings, both colours). The table gives, per arm: seeds, minutes, self-play
positions/s, iterations, test-set optimal share and disc loss per move (mean over seeds with a
95% interval from the pooled positions, and the seeds' spread), and the alpha-beta score.

    python -m experiments.ab_screen --minutes 8 --seeds 0 1 2 --root runs/ab
    python -m experiments.ab_screen --arms baseline wdl --seeds 0 --minutes 2 --games 8   # smoke run

``--board 8`` screens ``othello8_cpu`` instead (the issue's 8x8 screens: 6-12 minutes, 3 seeds);
8x8 has no perfect-play test set, so its networks are scored in ``--games`` games against greedy
(counting the losses by wipeout, the network left with no disc) and against alpha-beta depth 4.

Finished runs are kept (``trained.json`` / ``scores.json`` in each workdir), so the command
resumes where it stopped and re-prints the table. Arms are listed in ``ARMS`` (and in
``experiments/ab_arms.md``); ``--set KEY=VALUE`` adds an override to every arm.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from experiments import label_then_learn

CONFIGS = {6: "experiments/configs/othello6_cpu.py", 8: "experiments/configs/othello8_cpu.py"}
ARMS: dict[str, list[str]] = {
    "baseline": [],
    "wdl": ["network.value_head=wdl"],
    "score_own": ["network.score_head=True", "network.ownership_head=True"],
    "gpool": ["network.global_pool=True"],
    "exact10": ["selfplay.exact_endgame_empties=10"],
    "sims8": ["search.num_simulations=8"],
    "steps30": ["train.steps_per_iteration=30"],  # 3x the gradient steps per self-play position
    # the two arms ahead of the baseline in the screens: WDL value head and global pooling together
    "wdl_gpool": ["network.value_head=wdl", "network.global_pool=True"],
    # self-play's search values game-ending moves exactly, as the players' searches do: its policy
    # and value targets see the wipeouts the network's prior hides (issue 30's item 4)
    "endings": ["search.exact_endings=True"],
    # start from a trained network (--init-network, e.g. one pretrained on exact labels); the
    # minutes that made it (--init-minutes) come off this arm's budget
    "pretrained": ["init_network={init_network}"],
    "all_heads": ["network.value_head=wdl", "network.score_head=True", "network.ownership_head=True",
                  "network.global_pool=True"],
}
# arms that learn from exact labels instead of self-play (experiments/label_then_learn.py: labels made
# inside the budget, then supervised learning for the rest); the value is make-labels' --per-band
LABEL_ARMS: dict[str, str] = {
    "supervised": label_then_learn.DEFAULT_BANDS,
}
ARM_NAMES = [*ARMS, *LABEL_ARMS]


def uses_init_network(arm: str) -> bool:
    """Whether ``arm`` starts from ``--init-network`` (and so trains ``--init-minutes`` less)."""
    return any(item.startswith("init_network=") for item in ARMS.get(arm, []))


def train_command(arm: str, seed: int, minutes: float, workdir: Path, extra: list[str],
                  init_network: str = "", init_minutes: float = 0.0, board: int = 6) -> list[str]:
    """The training command line of one run (also printed in the table): ``{seed}`` in
    ``init_network`` becomes the run's seed, and an arm starting from it trains ``init_minutes``
    less, so every arm spends the same wall clock. A label arm's command makes its labels and
    learns from them within ``minutes`` (``extra`` overrides are for self-play's config only)."""
    if arm in LABEL_ARMS:  # 6x6 only (main refuses them with --board 8)
        return [sys.executable, "-m", "experiments.label_then_learn", f"--minutes={minutes:g}", f"--seed={seed}",
                f"--workdir={workdir}", f"--per-band={LABEL_ARMS[arm]}"]
    if uses_init_network(arm):  # main() refuses such an arm without --init-network
        minutes = minutes - init_minutes
    start = init_network.replace("{seed}", str(seed))
    overrides = [f"--config.{item.replace('{init_network}', start)}" for item in [*ARMS[arm], *extra]]
    return [sys.executable, "-m", "othello_jax.cli", "train", f"--config={CONFIGS[board]}", f"--workdir={workdir}",
            f"--config.seed={seed}", f"--config.max_minutes={minutes:g}", "--config.eval.every=0", *overrides]


def run_pinned(jobs: list[tuple[list[str], Path]], cores: list[int]) -> None:
    """Run each (command, log file) pinned to one core, ``len(cores)`` at a time."""
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="1")
    pending, running = list(jobs), {}
    while pending or running:
        for core in cores:
            if core not in running and pending:
                command, log = pending.pop(0)
                log.parent.mkdir(parents=True, exist_ok=True)
                pin = (lambda c=core: os.sched_setaffinity(0, {c})) if hasattr(os, "sched_setaffinity") else None
                print(f"[core {core}] {' '.join(command[1:])}", flush=True)
                running[core] = (subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                                  env=env, preexec_fn=pin), log)
        time.sleep(2)
        for core, (process, log) in list(running.items()):
            if process.poll() is not None:
                if process.returncode:
                    print(f"[core {core}] exit {process.returncode}; see {log}", flush=True)
                del running[core]


def training_summary(workdir: Path) -> dict:
    """Iterations, positions, positions/s (after compilation) and wall seconds of a finished run."""
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    played = [r for r in rows if "positions_per_s" in r]
    if not played:  # a label arm: gradient steps instead of iterations, no self-play
        steps = [r["step"] for r in rows if "step" in r]
        return dict(iterations=max(steps, default=0), positions=0.0, positions_per_s=float("nan"),
                    elapsed_s=float("nan"))
    rates = [r["positions_per_s"] for r in played if not r.get("compile_s")]
    return dict(iterations=len(played), positions=float(sum(r.get("positions", 0) for r in played)),
                positions_per_s=float(np.median(rates)) if rates else float("nan"),
                elapsed_s=float(played[-1]["elapsed_s"]) if played and "elapsed_s" in played[-1] else float("nan"))


def score_run(workdir: Path, games: int, sims: int, seed: int) -> dict:
    """Test-set score and alpha-beta depth-3 match of the run's final network (one process)."""
    import jax

    from othello_jax.agents.specs import parse_agent
    from othello_jax.evaluation import arena
    from othello_jax.evaluation.perfect_set import score_agent
    from othello_jax.game import Othello
    from othello_jax.solver.solved_moves import load as load_testset

    game = Othello(6)
    player = parse_agent(f"net:ckpt={workdir},sims={sims}", game)
    report = score_agent(jax.jit(player.act), load_testset(), jax.random.key(seed)).total
    opponent = parse_agent("alphabeta:depth=3", game)
    open_key, play_key = jax.random.split(jax.random.key(1000 + seed))
    lines = arena.match_openings(game, games, open_key)
    summary = arena.play_match(game, player, opponent, lines, play_key).summary()
    return dict(moves=report.moves, optimal=report.optimal, optimal_interval=list(report.optimal_interval),
                disc_loss=report.disc_loss, disc_loss_interval=list(report.disc_loss_interval),
                ab3=summary.score, ab3_ci=summary.score_ci, ab3_games=summary.games,
                ab3_as_black=summary.score_as_black, ab3_as_white=summary.score_as_white)


def score_run_8x8(workdir: Path, games: int, sims: int, seed: int) -> dict:
    """Matches of the run's final 8x8 network against greedy and alpha-beta depth 4 (one process);
    a loss by wipeout leaves the network no disc of its own."""
    import jax

    from othello_jax.agents.specs import parse_agent
    from othello_jax.evaluation import arena
    from othello_jax.game import Othello

    game = Othello(8)
    player = parse_agent(f"net:ckpt={workdir},sims={sims}", game)
    scores = {}
    for i, (name, spec) in enumerate((("greedy", "greedy"), ("ab4", "alphabeta:depth=4"))):
        open_key, play_key = jax.random.split(jax.random.key(1000 * (i + 1) + seed))
        lines = arena.match_openings(game, games, open_key)
        result = arena.play_match(game, player, parse_agent(spec, game), lines, play_key)
        summary = result.summary()
        scores.update({name: summary.score, f"{name}_ci": summary.score_ci, f"{name}_games": summary.games,
                       f"{name}_wipeouts": int(result.first_wiped_out.sum())})
    return scores


def pooled_half_width(half_widths: list[float]) -> float:
    """Half-width of the mean of independent seeds' estimates, from each seed's own half-width."""
    return math.sqrt(sum(h * h for h in half_widths)) / len(half_widths)


def run_cells(arm: str, runs: list[tuple[dict, dict]], minutes: float) -> str:
    """A table row's first cells: arm, seeds, minutes, mean positions/s and mean iterations."""
    trained = [t for t, _ in runs]
    return (f"| {arm} | {len(runs)} | {minutes:g} | {np.mean([t['positions_per_s'] for t in trained]):.0f} | "
            f"{np.mean([t['iterations'] for t in trained]):.1f} |")


def arm_row_8x8(arm: str, runs: list[tuple[dict, dict]], minutes: float) -> str:
    """One markdown table row of an 8x8 arm: greedy (and wipeouts lost) and alpha-beta 4 per seed."""
    scores = [s for _, s in runs]
    cells = []
    for name in ("greedy", "ab4"):
        values = np.array([s[name] for s in scores])
        ci = pooled_half_width([s[f"{name}_ci"] for s in scores])
        cells.append(f"{values.mean():.3f} +- {ci:.3f} ({', '.join(f'{v:.3f}' for v in values)}; "
                     f"{sum(s[f'{name}_games'] for s in scores)} games)")
    wipeouts = sum(s["greedy_wipeouts"] for s in scores)
    return f"{run_cells(arm, runs, minutes)} {cells[0]} | {wipeouts} | {cells[1]} |"


def arm_row(arm: str, runs: list[tuple[dict, dict]], minutes: float) -> str:
    """One markdown table row from an arm's (training summary, scores) per seed: optimal share with
    the Wilson interval of the pooled moves, disc loss and alpha-beta 3 with pooled intervals."""
    from othello_jax.solver.move_checks import wilson_interval

    scores = [s for _, s in runs]
    optimal = np.array([s["optimal"] for s in scores])
    low, high = wilson_interval(round(sum(s["optimal"] * s["moves"] for s in scores)),
                                sum(s["moves"] for s in scores))
    loss = np.array([s["disc_loss"] for s in scores])
    loss_half = pooled_half_width([(s["disc_loss_interval"][1] - s["disc_loss_interval"][0]) / 2 for s in scores])
    ab3 = np.array([s["ab3"] for s in scores])
    ab3_ci = pooled_half_width([s["ab3_ci"] for s in scores])
    games = sum(s["ab3_games"] for s in scores)
    return (f"{run_cells(arm, runs, minutes)} "
            f"{100 * optimal.mean():.1f}% [{100 * low:.1f}, {100 * high:.1f}] "
            f"({', '.join(f'{100 * o:.1f}' for o in optimal)}) | "
            f"{loss.mean():.2f} +- {loss_half:.2f} ({', '.join(f'{x:.2f}' for x in loss)}) | "
            f"{ab3.mean():.3f} +- {ab3_ci:.3f} ({games} games) |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs="+", default=["baseline", "wdl", "score_own", "gpool", "exact10"],
                        help=f"arms to run (of: {', '.join(ARM_NAMES)})")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget of every run")
    parser.add_argument("--root", default="runs/ab", help="one workdir per run below this folder")
    parser.add_argument("--board", type=int, default=6, choices=sorted(CONFIGS),
                        help="6: othello6_cpu, scored on the test set and against alpha-beta 3; 8: othello8_cpu, "
                             "scored against greedy and alpha-beta 4")
    parser.add_argument("--games", type=int, default=64,
                        help="games per match (6x6: against alpha-beta depth 3; 8x8: against each opponent)")
    parser.add_argument("--sims", type=int, default=128, help="simulations when scoring")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra config override for every arm (e.g. train.batch_size=256)")
    parser.add_argument("--cores", type=int, default=0, help="runs at a time, one core each (default: all cores)")
    parser.add_argument("--init-network", default="",
                        help="the network the 'pretrained' arm starts from ({seed} = the run's seed)")
    parser.add_argument("--init-minutes", type=float, default=0.0,
                        help="wall-clock minutes that made --init-network, taken off that arm's budget")
    parser.add_argument("--score-one", help=argparse.SUPPRESS)  # internal: score one workdir
    args = parser.parse_args(argv)
    if args.score_one:
        workdir = Path(args.score_one)
        scores = (score_run_8x8 if args.board == 8 else score_run)(workdir, args.games, args.sims, seed=0)
        (workdir / "scores.json").write_text(json.dumps(scores))
        return 0
    unknown = [arm for arm in args.arms if arm not in ARM_NAMES]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; choose from {', '.join(ARM_NAMES)}")
    pinning = hasattr(os, "sched_getaffinity")
    available = sorted(os.sched_getaffinity(0)) if pinning else list(range(os.cpu_count() or 1))
    cores = available[: args.cores or len(available)]
    root = Path(args.root)
    # seed-major: the arms of one seed train side by side, in the same window of the machine's speed
    runs = [(arm, seed, root / f"{arm}_s{seed}") for seed in args.seeds for arm in args.arms]

    if not 0 <= args.init_minutes < args.minutes:
        parser.error(f"--init-minutes must be in [0, --minutes), got {args.init_minutes:g}")
    if any(uses_init_network(arm) for arm in args.arms) and not args.init_network:
        parser.error("the 'pretrained' arm needs --init-network")
    if args.board != 6 and any(arm in LABEL_ARMS for arm in args.arms):
        parser.error(f"the exact-label arms ({', '.join(LABEL_ARMS)}) are 6x6 only")
    training = [(train_command(arm, seed, args.minutes, workdir, args.set, args.init_network, args.init_minutes,
                               args.board), workdir / "train.log")
                for arm, seed, workdir in runs if not (workdir / "trained.json").exists()]
    run_pinned(training, cores)
    for _, _, workdir in runs:
        if (workdir / "metrics.jsonl").exists() and not (workdir / "trained.json").exists():
            (workdir / "trained.json").write_text(json.dumps(training_summary(workdir)))
    scoring = [([sys.executable, "-m", "experiments.ab_screen", f"--score-one={workdir}", f"--games={args.games}",
                 f"--sims={args.sims}", f"--board={args.board}"], workdir / "score.log")
               for _, _, workdir in runs
               if (workdir / "trained.json").exists() and not (workdir / "scores.json").exists()]
    run_pinned(scoring, cores)

    print(f"\n{len(cores)} runs at a time, one core each; {args.minutes:g} minutes of wall clock per run; "
          f"scored with {args.sims} simulations; intervals 95%")
    if args.board == 8:
        print("| arm | seeds | minutes | positions/s | iterations | vs greedy (per seed) | lost by wipeout | "
              "vs alpha-beta depth 4 (per seed) |")
    else:
        print("| arm | seeds | minutes | positions/s | iterations | test set: optimal moves (per seed) | "
              "discs lost per move (per seed) | vs alpha-beta depth 3 |")
    print("|---|---|---|---|---|---|---|---|")
    row = arm_row_8x8 if args.board == 8 else arm_row
    for arm in args.arms:
        done = [(json.loads((w / "trained.json").read_text()), json.loads((w / "scores.json").read_text()))
                for a, _, w in runs if a == arm and (w / "scores.json").exists()]
        if done:
            print(row(arm, done, args.minutes))
    arm, seed = args.arms[0], args.seeds[0]
    example = train_command(arm, seed, args.minutes, root / f"{arm}_s{seed}", args.set, args.init_network,
                            args.init_minutes, args.board)
    shown = ["othello-jax", *example[3:]] if example[2] == "othello_jax.cli" else ["python", *example[1:]]
    print("\nreproduce one run: JAX_NUM_CPU_DEVICES=1 taskset -c 0 " + " ".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
