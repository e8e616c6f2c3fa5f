"""Kill a small training run with SIGKILL at N random moments, resume it each time, and check it.

    python -m experiments.chaos_resume --kills=20 [--seed=0] [--devices=N] [--workdir=DIR] [--keep]

Each start of ``othello-jax train`` (the tiny 4x4 config, a checkpoint every 2 iterations, the
last 3 kept; on one CPU host device per core, as the command picks, or ``--devices``) is
killed at a moment picked at random among:

- ``compile``: during start-up and compilation (the first kill always hits the real XLA
  compile; later starts load the executable from a persistent compilation cache);
- ``selfplay``: while iterations run (self-play, gradient steps, metrics);
- ``saving``: as soon as a checkpoint's temporary directory appears (orbax is writing it).

Then the run is resumed to the end and compared with an uninterrupted run of the same config
and seed (schedules are by iteration, so the two must agree bit for bit): the final training
state (parameters, optimizer, replay buffer, counters, rng), every checkpoint left on disk
(each must restore, and equal the uninterrupted run's at that iteration), and the metrics log
(every iteration once, the same losses). Prints one summary line; exits 0 when all holds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = ["--config=experiments/configs/tiny_test.py", "--config.checkpoint.every=2",
          "--config.checkpoint.every_minutes=0"]
MOMENTS = ("compile", "selfplay", "saving")


def user_env(cache: Path, devices: int = 0) -> dict[str, str]:
    """The environment of a training process as a user's shell gives it: ``devices`` CPU host
    devices (0: none named, so ``othello-jax train`` picks one per core), the XLA cache at ``cache``."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env.update(PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1", JAX_COMPILATION_CACHE_DIR=str(cache),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    if devices:
        env["JAX_NUM_CPU_DEVICES"] = str(devices)
    return env


class Start:
    """One ``othello-jax train`` process (``args`` after ``--workdir``) with its output collected by a reader thread.

    ``cores`` pretends the process may use that many cores (what ``othello-jax train`` counts to
    pick its devices); 0 leaves the machine's own count.
    """

    def __init__(self, workdir: Path, cache: Path, args: list[str], devices: int = 0, cores: int = 0):
        pretend = f"os.sched_getaffinity = lambda pid: set(range({cores}))\n" if cores else ""
        code = f"import os, sys\n{pretend}from othello_jax.cli import main\nsys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen([sys.executable, "-c", code, "train", f"--workdir={workdir}", *args], cwd=REPO,
                                     env=user_env(cache, devices), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def saw(self, prefix: str) -> bool:
        return any(line.startswith(prefix) for line in list(self.lines))

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float = 900) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code


def wait_for(condition, start: Start, timeout: float) -> bool:
    """Poll ``condition()`` every millisecond while the process runs; False if it ended or timed out."""
    deadline = time.monotonic() + timeout
    while start.running() and time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.001)
    return False


def saving_now(checkpoints: Path) -> bool:
    try:
        return any("tmp" in entry.name for entry in os.scandir(checkpoints))
    except FileNotFoundError:
        return False


def run_args(iterations: int, keep: int) -> list[str]:
    """The chaos run's arguments after ``--workdir``."""
    return [*CONFIG, f"--config.iterations={iterations}", f"--config.checkpoint.keep={keep}"]


def kill_once(workdir: Path, cache: Path, iterations: int, moment: str, rng: random.Random, devices: int) -> str:
    """Start the run, SIGKILL it at ``moment``; returns what was hit ('finished' if it ended first)."""
    start = Start(workdir, cache, run_args(iterations, keep=3), devices)
    if moment == "compile":
        wait_for(lambda: start.saw("training "), start, 600)  # set up; compiling now
        time.sleep(rng.uniform(0.0, 2.0))
        hit = "compile" if not start.saw("compiled") else "selfplay"
    elif moment == "selfplay":
        wait_for(lambda: start.saw("["), start, 600)  # iterations are running
        time.sleep(rng.uniform(0.0, 0.3))
        hit = "selfplay"
    else:
        wait_for(lambda: start.saw("["), start, 600)
        hit = "saving" if wait_for(lambda: saving_now(workdir / "checkpoints"), start, 60) else "selfplay"
        time.sleep(rng.uniform(0.0, 0.005))
    if not start.running():
        start.finish()
        return "finished"
    start.proc.send_signal(signal.SIGKILL)
    start.finish()
    return hit


def checkpoint_loader(args: list[str], workdir: Path):
    """``load(workdir, step) -> (train state, key)`` as host arrays, for the run of ``args`` (its
    config and overrides) whose checkpoints are in ``workdir``, restored in this process on
    whatever devices it has (the lanes are the checkpoint's)."""
    import jax

    from othello_jax import checkpoint
    from othello_jax.commands.train import checkpoint_lanes, parse
    from othello_jax.training.compiled.iteration import make_mesh
    from othello_jax.training.runner.program import make_train

    config, _ = parse([*args, "--workdir=unused"])
    config.replay.lanes = checkpoint_lanes(workdir) or 0
    program = make_train(config, make_mesh(1))
    template, key_template = program.start(0)

    def load(workdir: Path, step: int):
        ckpts = checkpoint.Checkpoints(workdir, keep=10**6)
        try:
            state, key, _ = ckpts.restore(template, key_template, program.meta(), step=step)
            return jax.device_get((state, key))
        finally:
            ckpts.close()

    return load


def same_arrays(a, b) -> bool:
    """Whether two pytrees hold bit-identical arrays."""
    import jax
    import numpy as np

    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def compare(chaos: Path, reference: Path, iterations: int) -> list[str]:
    """What differs between the chaos run and the reference run (empty: identical, nothing corrupt)."""
    load = checkpoint_loader(run_args(iterations, keep=3), chaos)
    problems = []

    on_disk = sorted(int(p.name) for p in (chaos / "checkpoints").iterdir() if p.name.isdigit())
    leftovers = [p.name for p in (chaos / "checkpoints").iterdir() if not p.name.isdigit()]
    if leftovers:
        problems.append(f"unfinished checkpoint directories left: {leftovers}")
    if not on_disk or on_disk[-1] != iterations:
        problems.append(f"the chaos run's checkpoints are {on_disk}, not ending at {iterations}")
    for step in on_disk:
        try:
            mine = load(chaos, step)
        except Exception as error:  # a corrupt checkpoint
            problems.append(f"checkpoint {step} does not restore: {str(error).splitlines()[0]}")
            continue
        if not same_arrays(mine, load(reference, step)):
            names = [name for name, x, y in zip(mine[0]._fields, mine[0], load(reference, step)[0], strict=True)
                     if not same_arrays(x, y)]
            problems.append(f"checkpoint {step} differs from the uninterrupted run's in {names or ['rng key']}")
    logged = [json.loads(line) for line in (chaos / "metrics.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (reference / "metrics.jsonl").read_text().splitlines()]
    if [r["iteration"] for r in logged] != list(range(1, iterations + 1)):
        problems.append(f"metrics log iterations are {[r['iteration'] for r in logged]}")
    elif [r["loss"] for r in logged] != [r["loss"] for r in expected]:
        problems.append("logged losses differ from the uninterrupted run's")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=3, help="SIGKILLs before the run may finish")
    parser.add_argument("--seed", type=int, default=0, help="picks the moments")
    parser.add_argument("--iterations", type=int, default=0, help="run length (0: 12 per kill + 8)")
    parser.add_argument("--workdir", default="", help="where the runs go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir afterwards")
    parser.add_argument("--devices", type=int, default=0,
                        help="CPU host devices of each training process (0: one per core, as the command picks)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    iterations = args.iterations or 12 * args.kills + 8
    root = Path(args.workdir or tempfile.mkdtemp(prefix="chaos-resume-"))
    chaos, reference, cache = root / "chaos", root / "reference", root / "jax-cache"
    for path in (chaos, reference):
        shutil.rmtree(path, ignore_errors=True)
    began = time.monotonic()
    try:
        hits: list[str] = []
        for k in range(args.kills):
            moment = "compile" if k == 0 else rng.choice(MOMENTS)  # the first hits the real compile
            hits.append(kill_once(chaos, cache, iterations, moment, rng, args.devices))
            if hits[-1] == "finished":
                break
        resumes = len([h for h in hits if h != "finished"])
        final = Start(chaos, cache, run_args(iterations, keep=3), args.devices)
        if final.finish() != 0:
            print("\n".join(final.lines[-20:]))
            print("chaos_resume: FAILED: the last resume did not finish")
            return 1
        straight = Start(reference, cache, run_args(iterations, keep=10**6), args.devices)
        if straight.finish() != 0:
            print("\n".join(straight.lines[-20:]))
            print("chaos_resume: FAILED: the uninterrupted run did not finish")
            return 1
        problems = compare(chaos, reference, iterations)
        counts = ", ".join(f"{m} {hits.count(m)}" for m in (*MOMENTS, "finished") if hits.count(m))
        verdict = "identical" if not problems else "DIFFERENT"
        layout = next((line.split(", ")[1] for line in final.lines if line.startswith("training ")), "? device(s)")
        print(f"chaos_resume: {len(hits) - hits.count('finished')} kills ({counts}), {resumes} resumes, {layout}, "
              f"{iterations} iterations; final state and checkpoints vs uninterrupted run: {verdict}; "
              f"{time.monotonic() - began:.0f}s")
        for problem in problems:
            print(f"  {problem}")
        return 0 if not problems and "finished" not in hits else 1
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
