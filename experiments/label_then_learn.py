"""Exact labels, then supervised learning, inside one wall-clock budget (issue 30).

The supervised arm of ``experiments/ab_screen``: make a labelled set of off-distribution 6x6
positions with the C solver (``othello-jax make-labels``, one worker unless ``--workers``, no solver
cache, so every solve is paid for), then train the quickstart's 4x32 network on it (``train_supervised
:labels6``) for whatever is left of ``--minutes``. The labels' cost is measured, not assumed, and
written to ``WORKDIR/labels.json``; the network lands in ``WORKDIR`` like any supervised run's, so
``net:ckpt=WORKDIR`` plays it.

    python -m experiments.label_then_learn --minutes 26 --seed 0 --workdir runs/sup26_s0

``--config.KEY=VALUE`` arguments go to the learning (``experiments/configs/supervised.py``), e.g.
``--config.network.channels=64``.

The learning splits each batch over one CPU device per usable core (``train_supervised``'s
default): pin the command (``taskset -c 0``, or ``JAX_NUM_CPU_DEVICES=1``) to measure one core.

A rerun reuses finished labels (their measured cost still comes off the budget) and learns again
from the start: supervised runs do not resume, so an interrupted one's outputs are replaced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

DEFAULT_BANDS = "8-12:50000,13-15:50000"  # only where a label costs milliseconds (RESULTS, label cost)


def label_command(out: Path, per_band: str, seed: int, workers: int = 1, train_solve: str = "every-move") -> list[str]:
    """``make-labels`` with no cache, so every solve is inside the budget (the same file whatever
    ``workers``)."""
    return [sys.executable, "-m", "othello_jax.cli", "make-labels", "--source=offdist", f"--per-band={per_band}",
            f"--out={out}", f"--workers={workers}", "--cache=", f"--seed={seed}", "--test-share=0.05",
            f"--train-solve={train_solve}"]


def learn_command(labels: Path, workdir: Path, seed: int, minutes: float, overrides: Sequence[str] = ()) -> list[str]:
    """``train_supervised :labels6`` on ``labels`` for ``minutes`` (its cosine runs over them), with
    any ``--config.KEY=VALUE`` ``overrides`` after."""
    return [sys.executable, "-m", "experiments.train_supervised", "--config=experiments/configs/supervised.py:labels6",
            f"--config.data.labels={labels}", f"--config.max_minutes={minutes:.3f}", f"--config.seed={seed}",
            f"--workdir={workdir}", *overrides]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, required=True, help="wall clock for labels and learning together")
    parser.add_argument("--seed", type=int, default=0, help="seed of the labels' games and of the training")
    parser.add_argument("--workdir", required=True, help="where the labels, the checkpoints and labels.json go")
    parser.add_argument("--per-band", default=DEFAULT_BANDS, help=f"make-labels' --per-band (default {DEFAULT_BANDS})")
    parser.add_argument("--workers", type=int, default=1,
                        help="solver processes for the labels (default 1: the A/B's one core per run)")
    parser.add_argument("--train-solve", default="every-move", choices=("every-move", "targets"),
                        help="make-labels' --train-solve: 'targets' solves training rows only for the value and "
                             "optimal moves learning uses (cheaper; default every-move, as the earlier entries ran)")
    args, overrides = parser.parse_known_args(argv)
    unknown = [item for item in overrides if not item.startswith("--config.")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)} (only --config.KEY=VALUE goes to the learning)")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    labels, record = workdir / "labels.npz", workdir / "labels.json"
    if not record.exists():
        start = time.perf_counter()
        made = subprocess.run(label_command(labels, args.per_band, args.seed, args.workers, args.train_solve))
        if made.returncode:  # make-labels said why in one line (bad input: exit 2)
            return made.returncode
        record.write_text(json.dumps(dict(per_band=args.per_band, train_solve=args.train_solve,
                                          seconds=time.perf_counter() - start)))
    spent = json.loads(record.read_text())["seconds"] / 60
    left = args.minutes - spent
    if left <= 0:
        print(f"labels took {spent:.2f} of {args.minutes:g} minutes: no time left to learn (they are kept; "
              "rerun with more --minutes)", file=sys.stderr)
        return 2
    print(f"labels: {spent:.2f} minutes; learning for the {left:.2f} left", flush=True)
    for stale in ("checkpoints", "best"):  # an interrupted learning run's networks: it starts again
        shutil.rmtree(workdir / stale, ignore_errors=True)
    (workdir / "metrics.jsonl").unlink(missing_ok=True)
    return subprocess.run(learn_command(labels, workdir, args.seed, left, overrides)).returncode


if __name__ == "__main__":
    sys.exit(main())
