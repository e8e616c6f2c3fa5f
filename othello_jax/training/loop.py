"""The host-side training loop: resume, schedule stages, the compiled iteration, metrics, checkpoints.

    from othello_jax.training.loop import run
    from othello_jax.training.config import default_config
    run(default_config(), "runs/othello8")

The config is resolved once by :func:`~othello_jax.training.program.make_train`; everything heavy
happens inside its compiled iterations (one per schedule stage). This loop only fetches the
scalar metrics once per iteration, writes them, prints progress, evaluates, gates and saves
checkpoints. Running it again on the same workdir resumes from the last checkpoint.
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
from othello_jax.training import arena_hooks
from othello_jax.training.metrics import MetricsLog, Progress, format_duration
from othello_jax.training.program import TrainProgram, make_train

# an evaluation hook: (stage config, program, variables, key) -> {"eval/<opponent>": score in [0, 1], ...}
Evaluator = Callable[[ConfigDict, TrainProgram, dict, jax.Array], dict]
# a gate: (stage config, program, challenger variables, champion variables, key) -> challenger's score
Gate = Callable[[ConfigDict, TrainProgram, dict, dict, jax.Array], float]


def run(config: ConfigDict, workdir: str | Path, *, evaluator: Evaluator | None = None,
        gate: Gate | None = None, print_fn: Callable[[str], None] = print) -> dict:
    """Train the run described by ``config`` in ``workdir`` (resuming if it has checkpoints).

    Returns the last iteration's metrics record. Every setting is read from the config of the
    stage in force. ``evaluator`` (every ``eval.every`` iterations) and ``gate`` (every
    ``gating.every`` iterations when gating is on) default to the arena matches of
    :mod:`othello_jax.training.arena_hooks`.
    """
    session_start = time.perf_counter()
    evaluator = evaluator or arena_hooks.evaluate_against_baselines
    gate = gate or arena_hooks.gate_against_champion
    if config.distributed:
        jax.distributed.initialize()
    program = make_train(config)
    workdir = Path(workdir)
    primary = jax.process_index() == 0
    say = print_fn if primary else (lambda _: None)

    # a fresh state, or the workdir's last checkpoint
    init_key, key = jax.random.split(jax.random.PRNGKey(int(config.seed)))
    state = program.init_state(init_key)
    ckpts = checkpoint.Checkpoints(workdir, keep=int(config.checkpoint.keep))
    expect = program.meta()
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
    say(f"training {workdir}: {program.game.size}x{program.game.size}, {jax.device_count()} device(s), "
        f"{program.lanes} lane(s), network {program.network}")

    def save(iteration: int, stage: ConfigDict) -> None:
        meta = dict(expect, iteration=iteration, elapsed_s=elapsed, evaluation=evaluations, best_score=best,
                    config=json.loads(config.to_json_best_effort()))
        ckpts.save(iteration, state, key, meta, save_buffer=bool(stage.checkpoint.save_buffer))

    elapsed += time.perf_counter() - session_start  # setup, compilation of nothing yet, restore
    try:
        for iteration in range(start, total):
            lap = time.perf_counter()
            # the stage in force, compiled once when it starts
            index = program.stage_index(iteration)
            stage = program.stage_configs[index]
            compile_s = 0.0
            if index not in compiled:
                t0 = time.perf_counter()
                compiled.clear()  # an earlier stage never comes back
                compiled[index] = program.compile(index, state, key)
                compile_s = time.perf_counter() - t0
                say(f"compiled stage {index} (from iteration {program.stages[index][0]}, "
                    f"{int(stage.search.num_simulations)} simulations) in {compile_s:.1f}s")

            # one iteration: self-play, replay, gradient steps
            key, step_key = jax.random.split(key)
            t0 = time.perf_counter()
            state, metrics = compiled[index](state, step_key)
            metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
            seconds = time.perf_counter() - t0
            done = iteration + 1
            record = dict(metrics, iteration=done, iteration_s=seconds, compile_s=compile_s,
                          positions_per_s=metrics["positions"] / seconds,
                          games_per_s=float(stage.selfplay.num_games) / seconds,
                          evaluations_per_s=program.network_evaluations(index) / seconds,
                          simulations=int(stage.search.num_simulations))

            # gating and evaluation
            out_of_time = budget > 0 and elapsed + (time.perf_counter() - lap) >= budget
            last = done == total or out_of_time  # the final iteration is always evaluated and saved
            if stage.gating.enabled and done % int(stage.gating.every) == 0:
                state, record["gate/score"] = _gate(stage, program, state, gate, jax.random.fold_in(key, 1))
            if int(stage.eval.every) and (done % int(stage.eval.every) == 0 or last):
                scores = _evaluate(stage, program, state, evaluator, jax.random.fold_in(key, 2))
                record.update(scores)
                evaluations.append(dict(scores, iteration=done))
                score = _best_score(record, str(stage.eval.best_metric))
                if score is not None and (best is None or score > best):
                    best = score
                    ckpts.save_best(done, {"params": state.params, "batch_stats": state.batch_stats},
                                    dict(expect, iteration=done, score=score, evaluation=scores))

            # metrics, progress, checkpoint
            elapsed += time.perf_counter() - lap  # everything: compile, play, train, evaluate
            record["elapsed_s"] = elapsed
            if primary:
                log.write(record)
            eta = progress.eta(done, seconds, budget - elapsed if budget > 0 else None)
            say(progress.line(record, eta))
            if done % int(stage.checkpoint.every) == 0 or last:
                save(done, stage)
            if out_of_time:
                say(f"stopping after {format_duration(elapsed)}: max_minutes={config.max_minutes} reached")
                break
    finally:
        ckpts.close()
    return record


def _best_score(record: dict, metric: str) -> float | None:
    scores = {k: v for k, v in record.items() if k.startswith("eval/") and v is not None}
    if not scores:
        return None
    return float(np.mean(list(scores.values()))) if metric == "mean" else scores.get(f"eval/{metric}")


def _evaluate(stage: ConfigDict, program: TrainProgram, state, evaluator: Evaluator, key: jax.Array) -> dict:
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    return {k: float(v) for k, v in evaluator(stage, program, variables, key).items()}


def _gate(stage: ConfigDict, program: TrainProgram, state, gate: Gate, key: jax.Array):
    """Promote the latest network to self-play actor if it beats the champion often enough."""
    latest = {"params": state.params, "batch_stats": state.batch_stats}
    score = float(gate(stage, program, latest, state.actor, key))
    if score >= float(stage.gating.threshold):
        state = state._replace(actor=jax.tree.map(lambda x: x.copy(), latest))
    return state, score
