"""Training positions/s on one core vs all cores (the quickstart config), one command, side by side.

``--workload supervised:6x64`` times supervised learning's gradient step instead (examples/s;
``--iterations`` steps of 256): its batch is split over the host devices the same way.

Each leg runs in its own subprocess (the host device count is fixed when JAX starts): the
quickstart config (``experiments/configs/othello6_cpu.py``) is compiled, one iteration warms up,
then ``--iterations`` compiled iterations (self-play + SGD) are timed; compile time is excluded.
Legs:

- ``one``: pinned to core 0 (``taskset -c 0``), one host device;
- ``--mode`` (all cores, no pinning), one of
  - ``devices``: host devices = cores, the self-play games and the training batch split over them
    (lanes = cores; what ``othello-jax train`` now does on CPU by default);
  - ``threads``: one host device, every XLA:CPU threading flag on (``--xla_cpu_multi_thread_eigen``,
    the concurrency-optimized scheduler);
  - ``plain``: one host device, default flags (what training did before: JAX's own threads only).

Both legs use the same lanes (``--lanes``, default = cores), so they play the same games and
learn the same thing; only where the work runs differs. It prints positions/s, seconds per
iteration, CPU seconds per wall second (cores kept busy) and ``all cores vs one: N.NNx``.
Usage::

    python -m experiments.bench_cores [--mode devices threads plain] [--iterations 3] [--lanes 0]

Finding so far (2-core CPU, jax 0.10.2, NOT quiet: load average 1.3 rising to 8 from other
people's tests, 2 timed iterations, lanes 2 in every leg): one core 257 positions/s (16.1 s per
iteration, 0.67 CPU s per s); one device on both cores 257 (0.81 cores busy: the second core
idles, XLA:CPU runs the search's many small ops on one thread); every XLA threading flag on 275
(1.07x, 0.81 cores busy); two host devices 126 (0.49x, 0.38 cores busy, the leg starved by the
load). These wall-clock figures are unusable; the per-thread ``parallelism`` column (CPU seconds
of all threads / of the busiest thread; added after that run) is the load-robust profile to read
on the quiet rerun. The issue's earlier quick trial: two host devices ~1.15x.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=true --xla_cpu_enable_concurrency_optimized_scheduler=true"


def thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every thread of this process: {tid: (name, seconds)}."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return out


def thread_profile(before: dict, after: dict) -> dict:
    """Where the CPU time went: the busiest threads' seconds and total / busiest (the parallelism).

    Unlike wall-clock ratios this holds on a loaded machine: if one thread did nearly all the
    work, a second core cannot have helped, whatever the load.
    """
    used = sorted(((after[t][1] - before.get(t, (None, 0.0))[1], after[t][0]) for t in after), reverse=True)
    total = sum(s for s, _ in used)
    return {"cpu_s": total, "busiest": [[name, round(s, 2)] for s, name in used[:4]],
            "parallelism": total / max(used[0][0], 1e-9) if used else 0.0}


def worker(devices: int, lanes: int, iterations: int) -> dict:
    """Time ``iterations`` compiled iterations of the quickstart config in this process."""
    import jax
    import jax.numpy as jnp

    from experiments.configs import othello6_cpu
    from experiments.timing import Stopwatch
    from othello_jax.training.compiled.iteration import make_mesh
    from othello_jax.training.runner.program import make_train

    assert jax.device_count() == devices, (jax.devices(), devices)
    config = othello6_cpu.get_config()
    config.replay.lanes = lanes
    program = make_train(config, make_mesh(devices))
    state = program.init_state(jax.random.PRNGKey(0))
    with Stopwatch() as compiling:
        step = program.compile(0, state, jax.random.PRNGKey(1))
    compile_s = compiling.wall
    # schedule inputs of the iteration (elapsed minutes, schedule position), where it takes them
    extra = tuple(jnp.asarray(a) for a in getattr(program, "schedule_args", lambda *_: ())(0.0, 0.0))
    state, metrics = step(state, jax.random.PRNGKey(2), *extra)  # warm-up
    jax.block_until_ready(metrics)
    threads0 = thread_cpu()
    positions = 0
    with Stopwatch() as training:
        for i in range(iterations):
            state, metrics = step(state, jax.random.PRNGKey(3 + i), *extra)
            positions += int(metrics["positions"])
    wall, cpu = training.wall, training.cpu
    profile = thread_profile(threads0, thread_cpu())
    return {"positions_per_s": positions / wall, "s_per_iteration": wall / iterations,
            "cores_busy": cpu / wall, "compile_s": compile_s, "lanes": program.lanes, "devices": devices,
            "loss": float(metrics["loss"]), **profile}


def supervised_worker(devices: int, steps: int, network: str) -> dict:
    """Time ``steps`` supervised gradient steps (``supervised.py:labels6``, batch 256, the
    ``network`` "BLOCKSxCHANNELS") on the shipped 6x6 test set's positions as labelled rows."""
    import jax
    import numpy as np

    from experiments.configs.supervised import get_config
    from experiments.timing import Stopwatch
    from othello_jax.evaluation import labels as labels_lib
    from othello_jax.game import Othello
    from othello_jax.model import init_variables, make_network
    from othello_jax.solver import solved_moves
    from othello_jax.training.compiled.optimizers import make_optimizer
    from othello_jax.training.supervised import label_targets as label_data
    from othello_jax.training.supervised import trainer as supervised

    assert jax.device_count() == devices, (jax.devices(), devices)
    config = get_config("labels6")  # num_devices 0: train_supervised's split over these devices
    blocks, channels = (int(x) for x in network.split("x"))
    config.network.update(blocks=blocks, channels=channels, value_hidden=channels)
    config.schedule_clock = "iterations"
    settings = supervised.resolve(config)
    positions = solved_moves.load()
    n = len(positions)
    rows = label_data.to_device(labels_lib.LabelSet(positions, np.arange(n, dtype=np.int32), np.zeros(n, np.int8),
                                                    np.full(n, "train"), np.full(n, "shipped")))
    net, optimizer = make_network(6, settings.network), make_optimizer(settings.optimizer)
    variables = init_variables(net, jax.random.PRNGKey(0), board_size=6)
    chunk, mesh, params, batch_stats, opt_state, rows = supervised.place_training(
        net, optimizer, settings, Othello(6), rows, label_data.label_samples, variables)
    with Stopwatch() as compiling:
        params, batch_stats, opt_state, metrics = jax.block_until_ready(
            chunk(params, batch_stats, opt_state, rows, jax.random.PRNGKey(1)))
    threads0 = thread_cpu()
    with Stopwatch() as training:
        for i in range(steps):
            params, batch_stats, opt_state, metrics = chunk(params, batch_stats, opt_state, rows,
                                                            jax.random.PRNGKey(2 + i))
        jax.block_until_ready(metrics)
    profile = thread_profile(threads0, thread_cpu())
    return {"positions_per_s": steps * settings.batch_size / training.wall, "s_per_iteration": training.wall / steps,
            "cores_busy": training.cpu / training.wall, "compile_s": compiling.wall, "devices": mesh.size,
            "loss": float(metrics["loss"]), **profile}


def leg(name: str, cores: int, lanes: int, iterations: int, workload: str = "selfplay") -> dict:
    """Run one leg in a subprocess; returns the worker's JSON."""
    pin = name == "one"
    devices = 1 if name in ("one", "threads", "plain") else cores
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path("~/.cache/othello-jax/xla").expanduser()))
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    flags.append(f"--xla_force_host_platform_device_count={devices}")
    if name == "threads":
        flags += THREAD_FLAGS.split()
    env["XLA_FLAGS"] = " ".join(flags)
    command = [sys.executable, "-m", "experiments.bench_cores", "--worker", str(devices), "--lanes", str(lanes),
               "--iterations", str(iterations), "--workload", workload]
    if pin:
        command = ["taskset", "-c", "0"] + command
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench_cores: leg {name} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", nargs="+", default=["devices"], choices=["devices", "threads", "plain"],
                        help="how the all-cores leg uses the cores (several: one leg each)")
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per leg (after one warm-up)")
    parser.add_argument("--lanes", type=int, default=0, help="replay lanes in every leg (0: the core count)")
    parser.add_argument("--workload", default="selfplay",
                        help="selfplay (the quickstart's iteration), or supervised:BLOCKSxCHANNELS (a "
                             "supervised.py:labels6 gradient step, e.g. supervised:6x64; --iterations = steps)")
    parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    supervised_net = args.workload.removeprefix("supervised:") if args.workload.startswith("supervised:") else ""
    if args.workload != "selfplay" and not supervised_net:
        parser.error(f"--workload must be selfplay or supervised:BLOCKSxCHANNELS, got {args.workload!r}")
    if args.worker:
        result = (supervised_worker(args.worker, args.iterations, supervised_net) if supervised_net
                  else worker(args.worker, args.lanes, args.iterations))
        print(json.dumps(result))
        return 0
    cores = len(os.sched_getaffinity(0))
    lanes = args.lanes or cores
    load = os.getloadavg()[0]
    what = (f"supervised learning ({supervised_net}, batch 256), {args.iterations} timed steps" if supervised_net
            else f"quickstart config, {lanes} lane(s), {args.iterations} timed iterations")
    print(f"{what} per leg, {cores} cores, load average {load:.2f} at start")
    results = {"one": leg("one", cores, lanes, args.iterations, args.workload)}
    for mode in args.mode:
        results[mode] = leg(mode, cores, lanes, args.iterations, args.workload)
    rate = "examples/s" if supervised_net else "positions/s"
    print(f"{'leg':<8} {'devices':>7} {rate:>12} {'s/iter':>7} {'cores busy':>10} {'parallelism':>11} "
          f"{'compile s':>9}  busiest threads (CPU s)")
    for name, r in results.items():
        busiest = ", ".join(f"{n} {s}" for n, s in r["busiest"])
        print(f"{name:<8} {r['devices']:>7} {r['positions_per_s']:>12.0f} {r['s_per_iteration']:>7.2f} "
              f"{r['cores_busy']:>10.2f} {r['parallelism']:>11.2f} {r['compile_s']:>9.1f}  {busiest}")
    base = results["one"]["positions_per_s"]
    for mode in args.mode:
        label = "all cores vs one" if mode == args.mode[0] else f"{mode} vs one"
        print(f"{label}: {results[mode]['positions_per_s'] / base:.2f}x")
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
