"""The host-side training loop: resume, schedule stages, the compiled iteration, metrics, checkpoints.

    from othello_jax.training.loop import run
    from othello_jax.training.config import default_config
    run(default_config(), "runs/othello8")

Everything heavy happens inside the jitted iteration (:mod:`othello_jax.training.iteration`); this loop only
fetches the scalar metrics once per iteration, writes them, prints progress, evaluates, gates
and saves checkpoints. Running it again on the same workdir resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from ml_collections import ConfigDict

from othello_jax import checkpoint
from othello_jax.game import Othello
from othello_jax.training import config as run_config
from othello_jax.training import iteration as train
from othello_jax.training.metrics import MetricsLog, Progress, format_duration

# an evaluation hook: (config, setup, variables, key) -> {"eval/<opponent>": score in [0, 1], ...}
Evaluator = Callable[[ConfigDict, train.Setup, dict, jax.Array], dict]
# a gate: (config, setup, challenger variables, champion variables, key) -> challenger's score in [0, 1]
Gate = Callable[[ConfigDict, train.Setup, dict, dict, jax.Array], float]


def run_meta(config: ConfigDict, setup: train.Setup) -> dict:
    """What must match for a checkpoint to resume this run (see ``checkpoint.COMPATIBILITY_KEYS``)."""
    return {
        "format_version": checkpoint.FORMAT_VERSION,
        "board_size": setup.game.size,
        "network": checkpoint.network_meta(train.network_config(config)),
        "lanes": setup.lanes,
        "capacity": setup.capacity,
        "max_window": setup.max_window,
    }


def _best_score(record: dict, metric: str) -> float | None:
    scores = {k: v for k, v in record.items() if k.startswith("eval/") and v is not None}
    if not scores:
        return None
    return float(np.mean(list(scores.values()))) if metric == "mean" else scores.get(f"eval/{metric}")


def run(config: ConfigDict, workdir: str | Path, *, evaluator: Evaluator | None = None,
        gate: Gate | None = None, print_fn: Callable[[str], None] = print) -> dict:
    """Train the run described by ``config`` in ``workdir`` (resuming if it has checkpoints).

    Returns the last iteration's metrics record. ``evaluator`` (called every ``eval.every``
    iterations) and ``gate`` (every ``gating.every`` iterations when gating is on) default to the
    arena-based ones in :mod:`othello_jax.training.arena_hooks`.
    """
    session_start = time.perf_counter()
    run_config.check_config(config)
    if config.distributed:
        jax.distributed.initialize()
    workdir = Path(workdir)
    primary = jax.process_index() == 0
    say = print_fn if primary else (lambda _: None)

    game = Othello(int(config.board_size))
    setup = train.Setup.from_config(config, game, train.make_mesh(int(config.num_devices)))
    stages = run_config.parse_stages(config.stages, config)
    init_key, key = jax.random.split(jax.random.PRNGKey(int(config.seed)))
    state = setup.init_state(init_key, train.initial_resign_state(config))

    ckpts = checkpoint.Checkpoints(workdir, keep=int(config.checkpoint.keep))
    expect = run_meta(config, setup)
    elapsed, evaluations, best = 0.0, [], None
    if ckpts.latest_step() is not None:
        state, key, meta = ckpts.restore(state, key, expect)
        elapsed = float(meta.get("elapsed_s", 0.0))
        evaluations = list(meta.get("evaluation", []))
        best = meta.get("best_score")
        say(f"resumed {workdir} at iteration {int(state.iteration)} ({format_duration(elapsed)} trained)")
    elif primary:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "config.json").write_text(config.to_json_best_effort(indent=2))
    log = MetricsLog(workdir)
    start = int(state.iteration)
    if primary:
        log.truncate_after(start)

    total = int(config.iterations)
    budget = float(config.max_minutes) * 60.0
    progress = Progress(total)
    compiled: dict[int, Callable] = {}
    record: dict = {}
    say(f"training {workdir}: {setup.game.size}x{setup.game.size}, {jax.device_count()} device(s), "
        f"{setup.lanes} lane(s), network {train.network_config(config)}")

    def save(iteration: int) -> None:
        meta = dict(expect, iteration=iteration, elapsed_s=elapsed, evaluation=evaluations, best_score=best,
                    config=json.loads(config.to_json_best_effort()))
        ckpts.save(iteration, state, key, meta, save_buffer=bool(config.checkpoint.save_buffer))

    elapsed += time.perf_counter() - session_start  # setup, compilation of nothing yet, restore
    try:
        for iteration in range(start, total):
            lap = time.perf_counter()
            index = run_config.stage_index(stages, iteration)
            stage = run_config.stage_config(config, stages, index)
            compile_s = 0.0
            if index not in compiled:
                t0 = time.perf_counter()
                compiled.clear()  # an earlier stage never comes back
                step_fn = setup.iteration(stage, train.make_selfplay_fn(stage, setup), state)
                compiled[index] = step_fn.lower(state, key).compile()
                compile_s = time.perf_counter() - t0
                say(f"compiled stage {index} (from iteration {stages[index][0]}, "
                    f"{int(stage.search.num_simulations)} simulations) in {compile_s:.1f}s")
            key, step_key = jax.random.split(key)
            t0 = time.perf_counter()
            state, metrics = compiled[index](state, step_key)
            metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
            seconds = time.perf_counter() - t0
            done = iteration + 1
            record = dict(metrics, iteration=done, iteration_s=seconds, compile_s=compile_s,
                          positions_per_s=metrics["positions"] / seconds,
                          games_per_s=float(stage.selfplay.num_games) / seconds,
                          evaluations_per_s=train.network_evaluations(stage, game) / seconds,
                          simulations=int(stage.search.num_simulations))

            out_of_time = budget > 0 and elapsed + (time.perf_counter() - lap) >= budget
            last = done == total or out_of_time  # the final iteration is always evaluated and saved
            if config.gating.enabled and done % int(config.gating.every) == 0:
                state, record["gate/score"] = _gate(config, setup, state, gate, jax.random.fold_in(key, 1))
            if int(config.eval.every) and (done % int(config.eval.every) == 0 or last):
                scores = _evaluate(config, setup, state, evaluator, jax.random.fold_in(key, 2))
                record.update(scores)
                evaluations.append(dict(scores, iteration=done))
                score = _best_score(record, str(config.eval.best_metric))
                if score is not None and (best is None or score > best):
                    best = score
                    ckpts.save_best(done, {"params": state.params, "batch_stats": state.batch_stats},
                                    dict(expect, iteration=done, score=score, evaluation=scores))
            elapsed += time.perf_counter() - lap  # everything: compile, play, train, evaluate
            record["elapsed_s"] = elapsed
            if primary:
                log.write(record)
            eta = progress.eta(done, seconds, budget - elapsed if budget > 0 else None)
            say(progress.line(record, eta))
            if done % int(config.checkpoint.every) == 0 or last:
                save(done)
            if out_of_time:
                say(f"stopping after {format_duration(elapsed)}: max_minutes={config.max_minutes} reached")
                break
    finally:
        ckpts.close()
    return record


def _evaluate(config, setup, state, evaluator, key) -> dict:
    if evaluator is None:
        from othello_jax.training.arena_hooks import evaluate_against_baselines as evaluator
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    return {k: float(v) for k, v in evaluator(config, setup, variables, key).items()}


def _gate(config, setup, state, gate, key):
    """Promote the latest network to self-play actor if it beats the champion often enough."""
    if gate is None:
        from othello_jax.training.arena_hooks import gate_against_champion as gate
    latest = {"params": state.params, "batch_stats": state.batch_stats}
    score = float(gate(config, setup, latest, state.actor, key))
    if score >= float(config.gating.threshold):
        state = state._replace(actor=jax.tree.map(lambda x: x.copy(), latest))
    return state, score
