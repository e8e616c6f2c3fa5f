"""The compiled training iteration with a stand-in self-play: learning, batch norm, gating, schedules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import Othello
from othello_jax.training.compiled import iteration as train
from othello_jax.training.compiled.sgd import loss_fn
from othello_jax.training.runner.program import make_train
from othello_jax.training.settings.run_settings import network_config, resolve
from tests.conftest import tiny_config
from tests.synthetic_samples import learnable_samples, synthetic_config, synthetic_program

GAME = Othello(6)


def run_iterations(config, iterations: int, seed: int = 0, mesh=None):
    program = synthetic_program(config, mesh or train.make_mesh(1), games=16, plies=12)
    state = program.init_state(jax.random.PRNGKey(seed))
    initial = jax.tree.map(np.asarray, state)
    step = program.iteration_fn(0, state)
    history = []
    for i in range(iterations):
        state, metrics = step(state, jax.random.fold_in(jax.random.PRNGKey(seed + 1), i))
        history.append(jax.device_get(metrics))
    return initial, state, history


@pytest.fixture(scope="module")
def trained():
    return run_iterations(synthetic_config(), iterations=6)


def test_loss_decreases(trained):
    _, _, history = trained
    losses = [float(m["loss"]) for m in history]
    assert losses[-1] < 0.8 * losses[0], losses
    assert float(history[-1]["value_loss"]) < float(history[0]["value_loss"])
    assert all(np.isfinite(list(m.values())).all() for m in history)


def test_counters_buffer_and_metrics(trained):
    _, state, history = trained
    assert int(state.iteration) == 6 and int(state.step) == 60
    assert int(state.resign[0]) == 6  # self-play state is threaded through every iteration
    assert int(state.buffer.generations[0]) == 6
    # 16 games x 12 plies per iteration, minus finished positions (masked padding)
    assert 0 < float(history[0]["positions"]) <= 16 * 12
    assert float(history[-1]["selfplay/games"]) == 16.0
    np.testing.assert_allclose(float(history[0]["learning_rate"]), 3e-3)
    windows = [int(m["window"]) for m in history]
    assert windows == [2, 2, 3, 3, 3, 3]  # grows by one every 2 iterations, capped at 3


def test_batch_norm_statistics_are_learned_and_actor_follows(trained):
    initial, state, _ = trained
    changed = jax.tree.map(lambda a, b: not np.allclose(a, b), initial.batch_stats, jax.device_get(state.batch_stats))
    assert all(jax.tree.leaves(changed))
    same = jax.tree.map(np.array_equal, jax.device_get(state.actor["params"]), jax.device_get(state.params))
    assert all(jax.tree.leaves(same))


@pytest.mark.slow  # as test_stages_reach_search_gating_and_checkpoints_in_the_loop: a failed gate keeps the actor
def test_gating_keeps_the_champion_as_actor():
    config = synthetic_config()
    config.gating.enabled = True
    initial, state, _ = run_iterations(config, iterations=2)
    same = jax.tree.map(np.array_equal, initial.actor["params"], jax.device_get(state.actor["params"]))
    assert all(jax.tree.leaves(same))
    moved = jax.tree.map(lambda a, b: not np.array_equal(a, b), initial.params, jax.device_get(state.params))
    assert any(jax.tree.leaves(moved))


def test_loss_combines_its_terms():
    config = synthetic_config()
    program = synthetic_program(config, train.make_mesh(1))
    state = program.init_state(jax.random.PRNGKey(0))
    rows = learnable_samples(GAME, jax.random.PRNGKey(1), batch=8, plies=6)
    batch = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), rows)
    config.loss.update(value_weight=2.0, l2=0.01, entropy_bonus=0.5)
    loss, (_, m) = loss_fn(state.params, state.batch_stats, program.net, GAME, batch, config.loss)
    expected = 2.0 * m["value_loss"] + m["policy_loss"] + 0.01 * m["l2"] - 0.5 * m["policy_entropy"]
    np.testing.assert_allclose(float(loss), float(expected), rtol=1e-6)
    # masked rows do not count
    masked = batch._replace(mask=batch.mask.at[: batch.mask.shape[0] // 2].set(False))
    _, (_, m2) = loss_fn(state.params, state.batch_stats, program.net, GAME, masked, config.loss)
    assert float(m2["value_loss"]) != pytest.approx(float(m["value_loss"]))
    # one-hot targets have zero entropy, so the KL equals the cross-entropy
    np.testing.assert_allclose(float(m["policy_kl"]), float(m["policy_loss"]), rtol=1e-5)


def test_replay_window_schedule():
    config = synthetic_config()
    config.replay.update(window_start=2, window_max=5, window_grow_every=3)
    replay = resolve(config).replay
    got = [int(train.replay_window(replay, jnp.int32(i))) for i in (0, 2, 3, 8, 9, 100)]
    assert got == [2, 2, 3, 4, 5, 5]
    assert replay.max_window == 5
    config.replay.window_grow_every = 0
    replay = resolve(config).replay
    assert int(train.replay_window(replay, jnp.int32(50))) == 2 and replay.max_window == 2


def test_cosine_schedule_spans_the_run_when_total_steps_is_zero():
    from othello_jax.training.compiled.optimizers import learning_rate_schedule

    config = synthetic_config()
    config.iterations, config.train.steps_per_iteration = 30, 4
    config.optimizer.update(schedule="cosine", learning_rate=1.0, warmup_steps=0, total_steps=0, end_scale=0.1)
    resolved = resolve(config).optimizer
    assert resolved.total_steps == 120 and config.optimizer.total_steps == 0  # the run's config is untouched
    schedule = learning_rate_schedule(resolved)
    assert float(schedule(60)) == pytest.approx(0.55) and float(schedule(120)) == pytest.approx(0.1)
    config.optimizer.total_steps = 50  # an explicit length wins
    assert resolve(config).optimizer.total_steps == 50


@pytest.mark.parametrize("total", [1, 2, 20])
def test_a_run_shorter_than_its_warmup_warms_up_over_its_length(total):
    """A shipped config shortened by --config.iterations (othello6_cpu: 20 warmup steps) still trains:
    the warmup covers all but the run's last step instead of optax refusing the schedule."""
    from othello_jax.training.compiled.optimizers import learning_rate_schedule, position_schedule

    config = synthetic_config()
    config.optimizer.update(schedule="cosine", learning_rate=1.0, warmup_steps=20, total_steps=total, end_scale=0.1)
    optimizer = resolve(config).optimizer
    schedule = learning_rate_schedule(optimizer)
    rates = [float(schedule(step)) for step in range(total + 1)]
    assert rates[-1] == pytest.approx(0.1)  # the run ends at its end value
    assert max(rates) == pytest.approx(1.0) and rates[:-1] == sorted(rates[:-1])  # a ramp up to the peak
    assert float(position_schedule(optimizer)(1.0)) == pytest.approx(0.1)


def test_bad_geometry_is_reported():
    config = synthetic_config(batch_size=30)
    config.replay.lanes = 4
    program = synthetic_program(config, train.make_mesh(1), games=4, plies=4)
    state = program.init_state(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="multiple of the 4 replay lanes"):
        program.iteration_fn(0, state)
    with pytest.raises(ValueError, match="devices"):
        train.make_mesh(len(jax.devices()) + 1)


def test_network_config_overrides_preset():
    config = synthetic_config()
    config.network.update(preset="small", channels=32, dtype="bfloat16")
    net = network_config(config)
    assert (net.blocks, net.channels, net.dtype) == (6, 32, "bfloat16")


# ---------------------------------------------------------------------------------------------
# run configuration, stages and the command line
# ---------------------------------------------------------------------------------------------
def test_stages_override_static_settings_from_their_iteration():
    from othello_jax.training.settings import stages as run_config

    config = tiny_config()
    stages = run_config.parse_stages("10: search.num_simulations=8, selfplay.temperature=0.5; 3: train.unroll=no",
                                     config)
    assert [s[0] for s in stages] == [0, 3, 10]
    assert [run_config.stage_index(stages, i) for i in (0, 2, 3, 9, 10, 99)] == [0, 0, 1, 1, 2, 2]
    late = run_config.stage_config(config, stages, 2)
    assert late.search.num_simulations == 8 and late.selfplay.temperature == 0.5 and late.train.unroll == "no"
    assert config.search.num_simulations == 4  # the base config is untouched
    for bad, message in [("x: search.num_simulations=8", "must look like"),
                         ("5: search.nope=1", "names no config field"),
                         ("5: nope.x=1", "names no config section"),
                         ("5: search.num_simulations", "key=value"),
                         ("5: search.variant=puct; 5: search.variant=gumbel", "same iteration")]:
        with pytest.raises(ValueError, match=message):
            run_config.parse_stages(bad, config)
    with pytest.raises(ValueError, match="search.num_simulations=many"):
        run_config.stage_config(config, run_config.parse_stages("5: search.num_simulations=many", config), 1)


def run_cli(capsys, *args):
    from othello_jax.commands import train as train_command

    code = train_command.main(list(args))
    return code, capsys.readouterr().err.strip()


def test_train_command_reports_bad_input_in_one_line(capsys, tmp_path):
    cfg = "--config=experiments/configs/tiny_test.py"
    cases = [
        ((cfg, f"--workdir={tmp_path}", "--config.nope=1"), "nope"),
        ((cfg,), "--workdir"),
        ((f"--workdir={tmp_path}",), "--config"),
        (("--config=experiments/configs/missing.py", f"--workdir={tmp_path}"), "missing.py"),
        ((cfg, f"--workdir={tmp_path}", "--config.board_size=5"), "board_size must be one of"),
        ((cfg, f"--workdir={tmp_path}", "--config.search.variant=alphazero"), "unknown search variant"),
        ((cfg, f"--workdir={tmp_path}", "--config.train.batch_size=30", "--config.replay.lanes=4"), "multiple"),
        ((cfg, f"--workdir={tmp_path}", "--config.eval.every=1", "--config.eval.opponents=rnd"), "rnd"),
        ((cfg, f"--workdir={tmp_path}", "--config.stages=3: search.sims=8"), "names no config field"),
        ((cfg, f"--workdir={tmp_path}", "--config.stages=2: network.blocks=3"), "cannot change mid-run"),
    ]
    for args, fragment in cases:
        code, err = run_cli(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("othello-jax train: error:") and "\n" not in err and fragment in err, (args, err)


def test_resuming_with_a_different_network_is_refused(capsys, tmp_path):
    from othello_jax import checkpoint

    config = tiny_config()
    program = make_train(config, train.make_mesh(1))
    state = program.init_state(jax.random.PRNGKey(0))
    ckpts = checkpoint.Checkpoints(tmp_path, keep=1, async_save=False)
    ckpts.save(1, state, jax.random.PRNGKey(1), program.meta())
    ckpts.close()
    code, err = run_cli(capsys, "--config=experiments/configs/tiny_test.py", f"--workdir={tmp_path}",
                        "--config.network.channels=32")
    assert code == 2 and "incompatible: network" in err and "\n" not in err
    assert (tmp_path / "checkpoints" / "1").is_dir()  # the checkpoint is left alone


def test_plot_draws_the_curves_of_one_or_more_runs(tmp_path, capsys):
    from othello_jax.commands import plot as plot_command
    from othello_jax.training.runner.metrics import MetricsLog, read_records

    for name in ("a", "b"):
        log = MetricsLog(tmp_path / name)
        for i in range(1, 6):
            log.write({"iteration": i, "loss": 3.0 / i, "policy_loss": 2.0 / i, "value_loss": 1.0 / i,
                       "positions_per_s": 100.0 * i, "buffer_fill": i / 5, "learning_rate": np.float32(1e-3),
                       "elapsed_s": 30.0 * i, "eval/random": 0.5 + i / 10 if i % 2 == 0 else None,
                       "testset/optimal": 0.5 + i / 20 if i % 2 == 0 else None})
        log.truncate_after(4)
    assert [r["iteration"] for r in read_records(tmp_path / "a")] == [1, 2, 3, 4]
    assert plot_command.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    png = tmp_path / "a" / "curves.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
    assert plot_command.main([str(tmp_path / "nowhere")]) == 2
    assert "no metrics.jsonl" in capsys.readouterr().err

    from othello_jax.training.runner.metrics import figure

    axes = figure([tmp_path / "a"]).axes
    titles = [ax.get_title() for ax in axes[::2]]
    assert titles == ["loss", "positions / s", "learning rate", "replay buffer fill",
                      "6x6 test set: optimal moves", "evaluation score"]  # panels without data left out
    assert {ax.get_xlabel() for ax in axes[0::2]} == {"iteration"}
    assert {ax.get_xlabel() for ax in axes[1::2]} == {"minutes of training"}
    minutes = axes[titles.index("learning rate") * 2 + 1].lines[0].get_xdata()
    np.testing.assert_allclose(minutes, [0.5, 1.0, 1.5, 2.0])  # elapsed_s / 60, the learning rate on its own axis


def test_a_run_ended_by_its_iteration_count_does_not_blame_its_time_budget(tmp_path):
    """With one iteration the first estimate of an iteration is the whole budget, so the clock calls
    it the last in time; the run still ended by its count, and says nothing of max_minutes."""
    from othello_jax.training.runner import loop

    lines = []
    loop.run(tiny_config(iterations=1, max_minutes=5.0), tmp_path / "run", print_fn=lines.append)
    assert any(line.startswith("[1/1]") for line in lines) and not any("max_minutes" in line for line in lines), lines


def test_periodic_evaluation_scores_baselines_keeps_the_best_and_reuses_compiled_matches(tmp_path, monkeypatch):
    from othello_jax.checkpoint import load_agent_variables
    from othello_jax.training.runner import arena_hooks as evaluation_hooks
    from othello_jax.training.runner import loop
    from othello_jax.training.runner.metrics import read_records

    config = tiny_config()
    config.iterations = 2
    config.eval.update(every=1, games=4, num_simulations=2, opponents="random greedy")
    monkeypatch.chdir(tmp_path)
    loop.run(config, "runs/relative", print_fn=lambda _: None)  # a relative workdir, as in the quickstart
    workdir = tmp_path / "runs" / "relative"
    assert load_agent_variables("runs/relative")[2] == 4
    records = read_records(workdir / "metrics.jsonl")
    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert {"eval/random", "eval/greedy"} <= set(record)
        assert all(0.0 <= record[k] <= 1.0 for k in ("eval/random", "eval/greedy"))
    assert any((workdir / "best").iterdir())  # the best-scoring network is kept apart

    program = make_train(config, train.make_mesh(1))
    state = program.init_state(jax.random.PRNGKey(0))
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    first = evaluation_hooks.network_player(config, program, variables, 2, name="a")
    second = evaluation_hooks.network_player(config, program, jax.tree.map(lambda x: x + 1, variables), 2, name="b")
    assert first.act_with_params is second.act_with_params  # one compiled program for every evaluation


# ---------------------------------------------------------------------------------------------
# stages reach what the iteration does
# ---------------------------------------------------------------------------------------------
def test_learning_rate_stage_changes_the_size_of_parameter_updates():
    config = synthetic_config(steps_per_iteration=2)
    config.stages = "2: optimizer.learning_rate=0.0"  # from the third iteration on, no step moves
    program = synthetic_program(config, train.make_mesh(1), games=4, plies=6)
    state = program.init_state(jax.random.PRNGKey(0))
    moved, compiled = [], {}
    for i in range(4):
        index = program.stage_index(i)
        if index not in compiled:
            compiled = {index: program.compile(index, state, jax.random.PRNGKey(1))}
        before = jax.device_get(state.params)
        state, _ = compiled[index](state, jax.random.PRNGKey(10 + i))
        after = jax.device_get(state.params)
        moved.append(max(float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(after),
                                                                         jax.tree.leaves(before), strict=True)))
    assert moved[0] > 1e-4 and moved[1] > 1e-4, moved
    assert moved[2] == 0.0 and moved[3] == 0.0, moved
    assert int(state.step) == 8  # the optimizer state (step count, moments) carried across the stage


def test_stage_settings_that_shape_the_state_are_refused_before_training():
    from othello_jax.training.settings.run_settings import check_config

    config = tiny_config()
    for stages, fragment in [("2: network.blocks=3", "network.blocks"), ("2: replay.capacity=64", "replay.capacity"),
                             ("2: board_size=6", "board_size"), ("2: replay.lanes=2", "replay.lanes"),
                             ("2: checkpoint.keep=1", "checkpoint.keep")]:
        config.stages = stages
        with pytest.raises(ValueError, match=f"{fragment}.*cannot change mid-run"):
            check_config(config)
    config.stages = "2: search.num_simulations=0"  # impossible values inside a stage are caught too
    with pytest.raises(ValueError, match="num_simulations must be >= 1.*stage from iteration 2"):
        check_config(config)
    config.stages = "2: optimizer.name=sgd"  # adamw -> sgd changes the optimizer state's layout
    with pytest.raises(ValueError, match="optimizer's state"):
        make_train(config, train.make_mesh(1))


@pytest.mark.slow  # ~1-1.5 minutes; in CI the 2-core resume test runs a stage change and gates through the CLI
def test_stages_reach_search_gating_and_checkpoints_in_the_loop(tmp_path):
    from othello_jax.training.runner import loop
    from othello_jax.training.runner.metrics import read_records

    config = tiny_config()
    config.iterations = 4
    config.search.update(num_simulations=2, max_num_considered_actions=2)
    config.selfplay.harvest.update(per_tree=2, min_visits=3)  # needs nodes with >= 3 visits
    config.checkpoint.update(every=10, keep=4)
    config.stages = ("1: search.num_simulations=16, search.max_num_considered_actions=4; "
                     "2: gating.enabled=true, gating.every=1, checkpoint.every=1")
    calls = []

    def never_promote(stage, program, challenger, champion, key):
        calls.append((jax.device_get(challenger["params"]), jax.device_get(champion["params"])))
        return 0.0

    loop.run(config, tmp_path, gate=never_promote, print_fn=lambda _: None)
    records = read_records(tmp_path / "metrics.jsonl")
    harvested = [r["selfplay/harvested"] for r in records]
    # 2 simulations never visit a node 3 times; 16 do, from the stage's first iteration on
    assert harvested[0] == 0 and all(h > 0 for h in harvested[1:]), harvested
    # gating from the third iteration on: the gate runs every iteration and, never passed, freezes the actor
    assert ["gate/score" in r for r in records] == [False, False, True, True]
    (challenger3, champion3), (challenger4, champion4) = calls
    same = lambda a, b: all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))
    assert same(champion3, champion4) and not same(challenger3, challenger4) and not same(challenger4, champion4)
    # checkpoint.every=1 from the stage on (the base config's every=10 saved nothing before it)
    assert sorted(int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit()) == [3, 4]


def testset_config():
    """A 6x6 config (tiny network) whose run's evaluation scores the perfect-play test set."""
    config = synthetic_config()
    config.eval.update(every=1, games=2, opponents="random", num_simulations=2, testset=True)
    return config


# 135 s of CI (the match and 500 searched test positions compile and run unoptimised): the test
# set's scoring runs in CI through `othello-jax testset` (tests/test_entry_points.py) and
# tests/test_perfect_play.py; this wiring of it into a run's evaluation only with -m ""
@pytest.mark.slow
def test_periodic_evaluation_can_score_the_perfect_play_test_set():
    from othello_jax.training.runner import arena_hooks

    config = testset_config()
    program = make_train(config, train.make_mesh(1))
    state = program.init_state(jax.random.PRNGKey(0))
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    scores = arena_hooks.evaluate_against_baselines(program.stage_configs[0], program, variables,
                                                    jax.random.PRNGKey(1))
    assert 0.0 <= scores["testset/optimal"] <= 1.0 and scores["testset/disc_loss"] >= 0.0
    assert scores["testset/disc_loss"] > 0.5  # an untrained network loses discs on 500 positions


def test_the_test_set_in_a_runs_evaluation_needs_6x6():
    from othello_jax.training.settings.run_settings import check_config

    config = testset_config()
    check_config(config)
    config.board_size = 8
    with pytest.raises(ValueError, match="eval.testset needs board_size 6"):
        check_config(config)
