"""Supervised learning from expert games: batches, augmentation, learning, checkpoints, accuracy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs.supervised import get_config
from othello_jax.checkpoint import load_agent_variables
from othello_jax.commands import accuracy as accuracy_command
from othello_jax.data import expert, move_prediction
from othello_jax.game import Othello, transform_state
from othello_jax.game import bitboard as bb
from othello_jax.model import NetworkConfig, init_variables, make_network
from othello_jax.training.compiled.optimizers import make_optimizer
from othello_jax.training.supervised import trainer as supervised
from tests.game_helpers import to_int

GAME = Othello(8)


@pytest.fixture(scope="module")
def small_wthor(shared_data, tmp_path_factory):
    """A WThor directory with three small years: 1980 and 1981 for training, 2020 held out."""
    directory = tmp_path_factory.mktemp("wthor")
    for name in ("WTH_1980.wtb", "WTH_1981.wtb", "WTH_2020.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, directory / name)
    return directory


@pytest.fixture(scope="module")
def data(small_wthor) -> expert.ExpertData:
    return expert.load_expert_data(small_wthor, test_from_year=2020)


def _config(small_wthor):
    config = get_config("test")
    config.data.wthor_dir = str(small_wthor)
    config.data.cache_dir = ""
    config.data.test_from_year = 2020
    config.eval_positions = 0
    return config


def test_samples_are_the_rows_with_one_hot_policies(data):
    rows = expert.to_device(data.train)
    index = jnp.arange(10)
    samples = supervised.expert_samples(rows, index)
    assert samples.policy.shape == (10, GAME.num_actions)
    np.testing.assert_array_equal(np.argmax(samples.policy, -1), data.train.action[:10])
    np.testing.assert_array_equal(samples.value, data.train.value[:10])
    legal = np.asarray(GAME.legal_moves(samples.state))
    assert legal[np.arange(10), data.train.action[:10]].all()


def _ints(b: bb.Bitboard) -> list[int]:
    return [int(x) for x in np.asarray(b.lo).astype(np.uint64) | (np.asarray(b.hi).astype(np.uint64) << np.uint64(32))]


def test_augmented_batches_move_board_and_target_together(data):
    one = expert.to_device(expert.take(data.train, np.full(1, 100)))  # a single row, sampled 128 times
    sample = jax.jit(supervised.sample_batch, static_argnums=(2, 3))
    batch = sample(one, jax.random.PRNGKey(3), 128, True)
    state = jax.tree.map(lambda x: x[0], expert.to_state(one))
    variants = {k: (to_int(s.mover), to_int(s.opponent))
                for k in range(8) for s in [transform_state(state, k, 8)]}
    seen = set(zip(_ints(batch.state.mover), _ints(batch.state.opponent), strict=False))
    assert seen <= set(variants.values()) and len(seen) == len(set(variants.values()))  # every symmetry occurs
    legal = np.asarray(GAME.legal_moves(batch.state))
    target = np.argmax(np.asarray(batch.policy), -1)
    assert legal[np.arange(128), target].all()  # the expert move follows the board
    assert (np.asarray(batch.value) == data.train.value[100]).all()
    plain = sample(one, jax.random.PRNGKey(3), 8, False)
    assert (np.asarray(plain.state.mover.lo) == data.train.mover_lo[100]).all()


def test_training_steps_fit_a_small_set(data):
    """A hundred rows are memorised: the policy loss falls well below its start."""
    config = get_config("test")
    config.batch_size, config.steps_per_call = 32, 1
    config.optimizer.update(learning_rate=5e-3, schedule="constant")
    rows = expert.to_device(expert.take(data.train, slice(0, 128)))
    net = make_network(8, NetworkConfig.preset("tiny"))
    variables = init_variables(net, jax.random.PRNGKey(0), 8)
    settings = supervised.resolve(config)
    optimizer = make_optimizer(settings.optimizer)
    chunk = supervised.make_train_chunk(net, optimizer, settings)
    params, stats, opt_state = variables["params"], variables["batch_stats"], optimizer.init(variables["params"])
    losses = []
    for i in range(40):
        params, stats, opt_state, metrics = chunk(params, stats, opt_state, rows, jax.random.PRNGKey(i))
        losses.append(float(metrics["policy_loss"]))
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses


def test_target_rank_counts_ties_like_argmax():
    legal = jnp.array([[True, True, True, False], [True, False, True, True]])
    logits = jnp.array([[0.0, 2.0, 1.0, 9.0], [1.0, 5.0, 1.0, 0.5]])
    assert move_prediction.target_rank(logits, legal, jnp.array([1, 0])).tolist() == [0, 0]  # illegal 9.0 ignored
    assert move_prediction.target_rank(logits, legal, jnp.array([0, 2])).tolist() == [2, 1]  # tie: lower index first
    assert move_prediction.target_rank(jnp.zeros((2, 4)), legal, jnp.array([2, 3])).tolist() == [2, 2]


def test_constant_policy_scores_the_first_legal_move_only(data):
    rows = data.test
    constant = lambda variables, obs: jnp.zeros(obs.shape[:1] + (GAME.num_actions,))
    rank = move_prediction.ranks(constant, None, rows, batch_size=1000)
    legal = np.asarray(GAME.legal_moves(expert.to_state(rows)))
    first_legal = np.argmax(legal, -1)
    np.testing.assert_array_equal(rank == 0, first_legal == rows.action)
    result = move_prediction.summarize(rank, rows)
    assert result["positions"] == rows.size
    assert sum(r["positions"] for r in result["by_stage"].values()) == rows.size
    assert result["seen_in_train"]["positions"] + result["novel"]["positions"] == rows.size
    assert result["top1"] == pytest.approx(np.mean(first_legal == rows.action))
    assert result["top1"] < result["top3"] < 1
    # by the number of legal moves (counted here with numpy): a forced move is always a hit
    counts = legal[:, :-1].sum(-1)
    by_legal = result["by_legal_moves"]
    assert sum(r["positions"] for r in by_legal.values()) == rows.size
    assert by_legal["1"]["positions"] == int((counts == 1).sum()) > 0 and by_legal["1"]["top1"] == 1.0
    assert by_legal["2-3"]["positions"] == int(((counts >= 2) & (counts <= 3)).sum())
    two_or_three = (counts >= 2) & (counts <= 3)
    assert by_legal["2-3"]["top1"] == pytest.approx(np.mean((first_legal == rows.action)[two_or_three]))
    assert "legal 15+" in move_prediction.format_report(result)


def test_run_saves_a_checkpoint_that_agents_and_the_accuracy_command_read(small_wthor, data, tmp_path, capsys):
    config = _config(small_wthor)
    lines = []
    result = supervised.run(config, tmp_path / "run", log=lines.append)
    assert any(line.startswith("step      20") for line in lines)
    assert result["positions"] == data.test.size and 0 < result["top1"] < result["top3"] < 1
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["step"] == 20 and "eval/top1" in records[-1]

    network, variables, size = load_agent_variables(tmp_path / "run")
    assert size == 8 and network == NetworkConfig.preset("tiny")
    assert set(variables) == {"params", "batch_stats"}
    load_agent_variables(tmp_path / "run" / "best")  # the best network is saved too

    capsys.readouterr()
    code = accuracy_command.main([f"--checkpoint={tmp_path / 'run'}", f"--wthor={small_wthor}",
                                  "--cache-dir=", "--test-from-year=2020", "--json"])
    assert code == 0
    reported = json.loads(capsys.readouterr().out)
    assert reported["top1"] == pytest.approx(result["top1"]) and reported["top3"] == pytest.approx(result["top3"])
    assert set(reported["by_stage"]) == {"0-19", "20-39", "40-59"}

    code = accuracy_command.main([f"--checkpoint={tmp_path / 'run'}", f"--wthor={small_wthor}",
                                  f"--cache-dir={tmp_path / 'cache'}", "--test-from-year=2020", "--positions=300"])
    out = capsys.readouterr().out
    assert code == 0 and "top-1" in out and "moves 40-59" in out and "300 (position, move) pairs" in out
    assert "legal 2-3" in out and "games from 2020 on" in out

    # Liskowski et al.'s split: the random 5% of the unique pairs that supervised:wthor_cpu holds out
    code = accuracy_command.main([f"--checkpoint={tmp_path / 'run'}", f"--wthor={small_wthor}", "--cache-dir=",
                                  "--split=random", "--json"])
    reported = json.loads(capsys.readouterr().out)
    random_test = expert.load_expert_data(small_wthor, split="random").test
    assert code == 0 and reported["positions"] == random_test.size
    assert sum(r["positions"] for r in reported["by_legal_moves"].values()) == random_test.size


def test_the_policy_averaged_over_symmetries_is_equivariant_and_the_command_scores_with_it(small_wthor, data,
                                                                                          capsys, tmp_path):
    """`accuracy --symmetries=8`: the averaged policy turns with the board (checked with numpy's
    rot90 and a transpose, not the package's symmetry tables), is a distribution, differs from the
    single view of an untrained network, and is what the command scores."""
    config = NetworkConfig.preset("tiny")
    net = make_network(8, config)
    variables = init_variables(net, jax.random.PRNGKey(3), 8)
    obs = np.asarray(GAME.observation(expert.to_state(expert.take(data.test, np.arange(64)))))
    averaged = jax.jit(move_prediction.symmetric_network_policy(net))
    single = jax.jit(move_prediction.network_policy(net))

    def grid(logits):  # the 64 placements as an 8x8 grid, the pass entry apart
        return np.asarray(logits)[:, :64].reshape(-1, 8, 8), np.asarray(logits)[:, 64]

    base, base_pass = grid(averaged(variables, obs))
    for turn in (lambda x: np.rot90(x, 1, axes=(1, 2)), lambda x: np.swapaxes(x, 1, 2)):
        turned, turned_pass = grid(averaged(variables, np.ascontiguousarray(turn(obs))))
        np.testing.assert_allclose(turned, turn(base), atol=1e-5)
        np.testing.assert_allclose(turned_pass, base_pass, atol=1e-5)
        single_grid, _ = grid(single(variables, np.ascontiguousarray(turn(obs))))
        assert np.max(np.abs(single_grid - turn(grid(single(variables, obs))[0]))) > 1e-3  # a single view does not
    np.testing.assert_allclose(np.exp(np.asarray(averaged(variables, obs))).sum(-1), 1.0, rtol=1e-5)

    rows = data.test
    expected = move_prediction.summarize(move_prediction.ranks(averaged, variables, rows, batch_size=512), rows)
    save = tmp_path / "net.msgpack"
    from othello_jax import pretrained
    pretrained.save(save, config, variables, 8, {})
    capsys.readouterr()
    code = accuracy_command.main([f"--checkpoint={save}", f"--wthor={small_wthor}", "--cache-dir=",
                                  "--test-from-year=2020", "--symmetries=8", "--json"])
    reported = json.loads(capsys.readouterr().out)
    assert code == 0 and reported["symmetries"] == 8
    assert reported["top1"] == pytest.approx(expected["top1"]) and reported["top3"] == pytest.approx(expected["top3"])
    with pytest.raises(ValueError, match="symmetries must be 1 or 8"):
        move_prediction.score_network(net, variables, rows, symmetries=4)


def test_accuracy_command_rejects_bad_input(tmp_path, small_wthor, capsys):
    assert accuracy_command.main([f"--checkpoint={tmp_path / 'nothing'}", f"--wthor={small_wthor}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("othello-jax accuracy: error: checkpoint path") and "\n" not in err
    # the network is read first (a second), so a missing database is reported after a good checkpoint
    assert accuracy_command.main(["--checkpoint=builtin:8x8", f"--wthor={tmp_path / 'no_db'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "WThor database not found" in err and "\n" not in err
    assert accuracy_command.main(["--checkpoint=builtin:6x6", f"--wthor={small_wthor}"]) == 2
    assert "expert games are 8x8" in capsys.readouterr().err
    assert accuracy_command.main([f"--checkpoint={tmp_path}", f"--wthor={small_wthor}", "--positions=-1"]) == 2
    assert "--positions must be >= 0" in capsys.readouterr().err


def test_config_errors_are_one_line(small_wthor):
    config = _config(small_wthor)
    config.network.preset = "huge"
    with pytest.raises(ValueError, match="unknown network preset 'huge'"):
        supervised.check_config(config)
    config = _config(small_wthor)
    config.data.wthor_dir = "/nonexistent/wthor"
    with pytest.raises(ValueError, match="WThor database not found at /nonexistent/wthor"):
        supervised.check_config(config)
    with pytest.raises(ValueError, match="unknown supervised config variant"):
        get_config("gpu2")
    config = _config(small_wthor)
    config.data.value_target = "exact"
    with pytest.raises(ValueError, match="data.value_target must be one of result, perfect_endgame"):
        supervised.check_config(config)
    config.data.update(value_target="perfect_endgame", labels="labels/self.npz")
    with pytest.raises(ValueError, match="perfect_endgame needs WThor"):
        supervised.check_config(config)


def test_a_stopped_run_resumes_exactly_where_it_stopped(small_wthor, tmp_path):
    """SIGTERM mid-run saves the network, optimizer state and rng key (exit 75 from the script);
    the same call resumes, and with the iterations clock the result equals an uninterrupted run's."""
    import os
    import signal

    from othello_jax.training.runner.loop import TrainingInterrupted

    config = _config(small_wthor)
    config.update(total_steps=40, steps_per_call=2, log_every=10, eval_every=20)
    config.optimizer.total_steps = 40
    began = time.time()
    straight = supervised.run(config, tmp_path / "straight", log=lambda _: None)
    wall_s = time.time() - began

    def stop_at_step_10(line: str) -> None:
        if line.startswith("step      10"):
            os.kill(os.getpid(), signal.SIGTERM)  # recorded by the run, acted on after this call

    with pytest.raises(TrainingInterrupted, match=r"^stopped by SIGTERM after step 10 of 40; checkpoint .*/10 saved"):
        supervised.run(config, tmp_path / "stopped", log=stop_at_step_10)
    lines = []
    resumed = supervised.run(config, tmp_path / "stopped", log=lines.append)
    assert any(line.startswith(f"resumed {tmp_path / 'stopped'} at step 10") for line in lines), lines[:3]
    assert resumed["top1"] == straight["top1"] and resumed["top3"] == straight["top3"]
    read = lambda name: [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
    untimed = lambda records: [{k: v for k, v in r.items() if k not in ("examples_per_s", "minutes")}
                               for r in records]
    assert untimed(read("stopped")) == untimed(read("straight"))
    # the run's clock (what max_minutes and the minutes schedule read) is wall time, however often it saved
    minutes = [r["minutes"] for r in read("straight")]
    assert minutes == sorted(minutes) and 60 * minutes[-1] <= wall_s
    _, a, _ = load_agent_variables(tmp_path / "straight")
    _, b, _ = load_agent_variables(tmp_path / "stopped")
    assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))

    lines = []
    again = supervised.run(config, tmp_path / "stopped", log=lines.append)  # finished: reports, trains nothing
    assert again["top1"] == straight["top1"] and any("finished at step 40" in line for line in lines)
    config.batch_size = 64
    with pytest.raises(Exception, match=r"batch_size is 32 there but 64 in this config"):
        supervised.run(config, tmp_path / "stopped", log=lambda _: None)


def test_a_fresh_run_starts_from_a_trained_network_and_a_resumed_one_ignores_it(small_wthor, tmp_path):
    """``init_network`` (a workdir, a .msgpack or builtin:NAME) seeds a fresh run's weights, checked
    against the run's board and network (one line otherwise); a stopped run resumes from its own
    checkpoint, not from the network it started from."""
    trained = supervised.run(_config(small_wthor), tmp_path / "first", log=lambda _: None)
    _, first, _ = load_agent_variables(tmp_path / "first")

    config = _config(small_wthor)
    config.update(init_network=str(tmp_path / "first"), total_steps=2, eval_every=2)
    config.optimizer.update(learning_rate=1e-9, total_steps=2)  # two steps that barely move the weights
    lines = []
    continued = supervised.run(config, tmp_path / "second", log=lines.append)
    assert f"starting from the network in {tmp_path / 'first'} (init_network)" in lines
    _, second, _ = load_agent_variables(tmp_path / "second")
    for a, b in zip(jax.tree.leaves(first["params"]), jax.tree.leaves(second["params"]), strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-6)
    assert abs(continued["top1"] - trained["top1"]) < 0.05  # the same network (batch statistics moved by 2 steps)
    config.init_network = ""
    fresh = supervised.run(config, tmp_path / "fresh", log=lambda _: None)
    _, random_start, _ = load_agent_variables(tmp_path / "fresh")
    assert not np.allclose(jax.tree.leaves(random_start["params"])[0], jax.tree.leaves(first["params"])[0])
    assert fresh["top1"] < trained["top1"]

    config.update(init_network=str(tmp_path / "gone"), total_steps=4, eval_every=2)  # resumes "second" at step 2
    config.optimizer.total_steps = 4
    lines = []
    supervised.run(config, tmp_path / "second", log=lines.append)
    assert any(line.startswith(f"resumed {tmp_path / 'second'} at step 2") for line in lines)
    assert not any("(init_network)" in line for line in lines)

    config = _config(small_wthor)
    config.init_network = "builtin:6x6"
    with pytest.raises(ValueError, match=r"^init_network builtin:6x6 is a 6x6 network; this run is 8x8$"):
        supervised.run(config, tmp_path / "wrong_board", log=lambda _: None)
    config.init_network = "builtin:8x8-expert"
    with pytest.raises(ValueError, match=r"^init_network builtin:8x8-expert is not this run's network \(blocks 6 vs"):
        supervised.run(config, tmp_path / "wrong_network", log=lambda _: None)


def test_original_sampling_draws_rows_as_often_as_the_games_played_them(data):
    """data.sampling=original (Liskowski et al.'s Original) weights each unique row by its count;
    unique draws every row alike."""
    rows = expert.take(data.train, np.arange(40))
    rows = rows._replace(count=np.arange(1, 41, dtype=np.uint32))  # row i occurred i + 1 times
    draws = 200_000
    for source, expected in ((supervised.weighted(expert.to_device(rows)), np.arange(1, 41) / 820),
                             (expert.to_device(rows), np.full(40, 1 / 40))):
        seen = np.bincount(np.asarray(supervised.draw_rows(source, jax.random.PRNGKey(0), draws)), minlength=40)
        sigma = np.sqrt(draws * expected * (1 - expected))
        assert np.all(np.abs(seen - draws * expected) < 5 * sigma), (seen, draws * expected)
    batch = supervised.sample_batch(supervised.weighted(expert.to_device(rows)), jax.random.PRNGKey(1), 64,
                                    augment=False)
    assert set(np.asarray(jnp.argmax(batch.policy, -1)).tolist()) <= set(np.asarray(rows.action).tolist())


def test_the_shipped_wthor_cpu_reproduction_runs_and_resumes_as_users_run_it(small_wthor, tmp_path):
    """supervised:wthor_cpu (Liskowski et al.'s random split, 6x64, a resumable 5-hour budget) through
    its script on a small WThor slice, on two CPU devices (a user's default on 2 cores): the split
    is the paper's, the held-out check runs, and a finished run given more steps resumes from its
    checkpoint (its restored rng key beside parameters replicated over both devices)."""
    workdir = tmp_path / "run"
    command = [sys.executable, "-m", "experiments.train_supervised",
               "--config=experiments/configs/supervised.py:wthor_cpu",
               f"--workdir={workdir}", f"--config.data.wthor_dir={small_wthor}", "--config.data.cache_dir=",
               "--config.eval_every=4", "--config.log_every=2", "--config.eval_positions=300"]
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2")
    root = Path(__file__).resolve().parents[1]
    first = subprocess.run([*command, "--config.total_steps=4"], capture_output=True, text=True, env=env, cwd=root)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "5% of the unique rows at random" in first.stdout and "split over 2 device(s)" in first.stdout
    again = subprocess.run([*command, "--config.total_steps=8"], capture_output=True, text=True, env=env, cwd=root)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resumed {workdir} at step 4" in again.stdout
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    evaluations = [r for r in records if "eval/top1" in r]
    assert [r["step"] for r in evaluations] == [4, 8]
    assert all(0 <= r["eval/top1"] <= r["eval/top3"] <= 1 for r in evaluations)
    network, _, _ = load_agent_variables(workdir)
    assert (network.blocks, network.channels) == (6, 64)


def test_the_gpu_script_trains_the_conv8_reproduction_and_exports_it_shortened_on_a_cpu(small_wthor, tmp_path):
    """experiments/gpu_wthor.sh, kept ready for a lent GPU: on a small WThor slice and a narrow
    Conv8+BN it builds the data, trains supervised:wthor_gpu, scores the held-out rows and leaves
    a network file that plays."""
    from othello_jax import pretrained

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, OUT=str(tmp_path), JAX_NUM_CPU_DEVICES="1", PYTHON=sys.executable)
    done = subprocess.run(["bash", "experiments/gpu_wthor.sh", f"--config.data.wthor_dir={small_wthor}",
                           "--config.network.channels=4", "--config.network.dtype=float32",
                           "--config.total_steps=4", "--config.steps_per_call=2", "--config.batch_size=64"],
                          capture_output=True, text=True, env=env, cwd=root)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    evaluations = [json.loads(line) for line in (tmp_path / "wthor_gpu" / "metrics.jsonl").read_text().splitlines()
                   if "eval/top1" in line]
    assert [r["step"] for r in evaluations] == [4]
    config, _, size, _ = pretrained.load(tmp_path / "wthor_conv8bn.msgpack")
    assert (config.tower, config.blocks, config.channels, size) == ("conv", 8, 4, 8)
    assert not (tmp_path / "cache").exists() and "gpu_wthor: " in (tmp_path / "wthor_gpu.log").read_text()


def test_the_expert_start_is_othello8_cpus_network_so_self_play_can_start_from_it():
    """supervised:expert8_cpu trains exactly othello8_cpu's network (init_network refuses any other)."""
    from experiments.configs import othello8_cpu
    from othello_jax.training.settings.run_settings import network_config

    expert_config = get_config("expert8_cpu")
    assert network_config(expert_config) == network_config(othello8_cpu.get_config())
    assert expert_config.data.value_target == "perfect_endgame" and expert_config.data.split == "year"


def test_the_two_recipes_differ_only_in_their_optimizer_and_penalty(small_wthor, tmp_path):
    """supervised:recipe_sgd (Liskowski et al.'s) and :recipe_adamw (the project's): same network,
    split, batch and steps; SGD's rate is 0.1 halved 12 times over the run; SGD trains."""
    from experiments.configs.supervised import RECIPE_STEPS
    from othello_jax.training.compiled.optimizers import learning_rate_schedule

    sgd, adamw = get_config("recipe_sgd"), get_config("recipe_adamw")
    differ = {k for k in sgd.keys() if sgd[k] != adamw[k]}
    assert differ == {"optimizer", "loss"} and sgd.loss.l2 == 5e-4 and adamw.loss.l2 == 0.0
    for config in (sgd, adamw):  # a small database (checking a config needs one to be there)
        config.data.wthor_dir, config.data.cache_dir = str(small_wthor), ""
    rate = learning_rate_schedule(supervised.check_config(sgd).optimizer)
    assert float(rate(0)) == pytest.approx(0.1) and float(rate(RECIPE_STEPS // 2)) == pytest.approx(0.1 / 2 ** 6)
    assert float(rate(RECIPE_STEPS)) == pytest.approx(0.1 / 2 ** 12)
    supervised.check_config(adamw)  # AdamW trains in every other supervised test (wthor_cpu's recipe); SGD only here
    sgd.update(total_steps=4, eval_every=4, log_every=2, eval_positions=300)
    result = supervised.run(sgd, tmp_path / "sgd", log=lambda _: None)
    assert 0 <= result["top1"] <= result["top3"] <= 1


def test_the_readmes_expert_start_trains_scores_and_starts_8x8_self_play(small_wthor, tmp_path):
    """The README's three expert-games commands as a user runs them, shortened by overrides: the
    expert network (supervised:expert8_cpu), its accuracy, and othello8_cpu starting from it
    (one iteration; the first self-play games are the expert network's)."""
    root = Path(__file__).resolve().parents[1]
    tool = str(Path(sys.executable).parent / "othello-jax")
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2")
    expert_dir, selfplay_dir = tmp_path / "expert8", tmp_path / "o8_expert"

    def run(command: list[str]) -> str:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=root)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        return done.stdout

    run([sys.executable, "-m", "experiments.train_supervised", "--config=experiments/configs/supervised.py:expert8_cpu",
         f"--workdir={expert_dir}", f"--config.data.wthor_dir={small_wthor}", "--config.data.cache_dir=",
         "--config.total_steps=4", "--config.eval_every=4", "--config.eval_positions=300"])
    out = run([tool, "accuracy", f"--checkpoint={expert_dir}", f"--wthor={small_wthor}", "--cache-dir=",
               "--test-from-year=2020", "--positions=300"])
    assert "300 (position, move) pairs" in out and "top-1" in out
    out = run([tool, "train", "--config=othello8_cpu", f"--workdir={selfplay_dir}",
               f"--config.init_network={expert_dir}",
               "--config.iterations=1", "--config.selfplay.num_games=8", "--config.search.num_simulations=2",
               "--config.search.max_num_considered_actions=2", "--config.train.batch_size=64",
               "--config.train.steps_per_iteration=1", "--config.eval.every=0"])
    assert f"starting from the network in {expert_dir} (init_network)" in out, out[-2000:]
    assert len((selfplay_dir / "metrics.jsonl").read_text().splitlines()) == 1


def test_the_shipped_expert_network_predicts_expert_moves(small_wthor):
    """`othello-jax accuracy --checkpoint=builtin:8x8-expert --split=random` (the README's command)
    on three years of WThor: the shipped expert network picks over half the experts' moves (55.4%
    on the whole random split's held-out rows; 53.2% on this slice's 1,499), where a network that
    had not learned them (or read its board flipped) picks ~1 in 9."""
    tool = str(Path(sys.executable).parent / "othello-jax")
    done = subprocess.run([tool, "accuracy", "--checkpoint=builtin:8x8-expert", "--split=random",
                           f"--wthor={small_wthor}", "--cache-dir=", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["positions"] > 1000
    assert result["top1"] >= 0.48 and result["top3"] >= 0.80, result
    assert result["by_stage"]["40-59"]["top1"] > result["by_stage"]["0-19"]["top1"]  # endings are easier to predict
