"""Supervised learning on exact labels (othello_jax/training/supervised/label_targets.py, data.labels in
othello_jax/training/supervised/trainer.py): targets from the move values, a short run's per-band
metrics checked against the file, the checkpoint as a 6x6 agent, one-line errors (exit 2)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import train_supervised
from experiments.configs.supervised import get_config
from othello_jax.checkpoint import load_agent_variables
from othello_jax.errors import InputError
from othello_jax.evaluation import labels as labels_lib
from othello_jax.game import Othello
from othello_jax.model import make_network
from othello_jax.solver import solved_moves as ts
from othello_jax.training.supervised import label_targets as label_data
from othello_jax.training.supervised import trainer as supervised

GAME = Othello(6)
# a 6x6 position (8 empties) where the mover must pass and the opponent can move
PASS_ROW = (34274748804610, 35253242888448, 0, 24, 8)
PASS_VALUE = -3  # made up: the targets only read the file's values


def _pass_position() -> ts.TestSet:
    mover, opponent, color, ply, empties = PASS_ROW
    values = np.full((1, GAME.num_actions), ts.NO_VALUE, np.int8)
    values[0, GAME.pass_action] = PASS_VALUE
    return ts.TestSet(6, np.array([mover], np.uint64), np.array([opponent], np.uint64), np.array([color], np.int8),
                      np.zeros(1, bool), np.array([ply], np.int16), np.array([empties], np.int8),
                      np.array([PASS_VALUE], np.int8), values)


def _label_set(positions: ts.TestSet, test_every: int = 4) -> labels_lib.LabelSet:
    """Positions as a labelled set, one game each, every ``test_every``-th held out."""
    n = len(positions)
    split = np.where(np.arange(n) % test_every == 0, "test", "train")
    return labels_lib.LabelSet(positions, np.arange(n, dtype=np.int32), np.zeros(n, np.int8), split,
                               np.full(n, "shipped"))


@pytest.fixture(scope="module")
def labels() -> labels_lib.LabelSet:
    """80 positions of the shipped 6x6 test set (12-24 empties) and a forced pass."""
    shipped = ts.load().take(np.arange(0, 500, 500 // 80)[:80])
    return labels_lib.concatenate([_label_set(shipped), _label_set(_pass_position(), test_every=2)])


@pytest.fixture(scope="module")
def labels_file(labels, tmp_path_factory):
    path = tmp_path_factory.mktemp("labels") / "six.npz"
    labels_lib.save(labels, path)
    return path


def _expected_targets(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Policy and value targets of one row, straight from its move values."""
    legal = [a for a in range(len(values)) if values[a] != ts.NO_VALUE]
    best = max(int(values[a]) for a in legal)
    optimal = [a for a in legal if values[a] == best]
    policy = np.zeros(len(values), np.float32)
    policy[optimal] = 1.0 / len(optimal)
    return policy, float((best > 0) - (best < 0))


def test_targets_are_the_optimal_moves_and_the_exact_result(labels):
    positions = labels.positions
    policy, value = label_data.targets(positions)
    ties = 0
    for row in range(len(positions)):
        expected_policy, expected_value = _expected_targets(positions.values[row])
        np.testing.assert_allclose(policy[row], expected_policy, rtol=1e-6)
        assert value[row] == expected_value
        ties += (expected_policy > 0).sum() > 1
    assert ties > 0 and set(value.tolist()) == {-1.0, 0.0, 1.0}  # ties, wins, draws and losses occur
    assert policy[-1, GAME.pass_action] == 1.0 and value[-1] == -1.0  # the forced pass

    rows = label_data.to_device(labels)
    samples = label_data.label_samples(rows, jnp.arange(len(labels)), GAME)
    np.testing.assert_allclose(samples.policy, policy, rtol=1e-6)
    np.testing.assert_array_equal(samples.value, value)
    legal = np.asarray(GAME.legal_moves(samples.state))
    assert not (policy > 0)[~legal].any()  # the states are the file's positions

    # augmented batches turn board and policy together: the targets stay on legal moves
    batch = jax.jit(supervised.sample_batch, static_argnums=(2, 3, 4, 5))(
        rows, jax.random.key(0), 256, True, GAME, label_data.label_samples)
    legal = np.asarray(GAME.legal_moves(batch.state))
    assert not (np.asarray(batch.policy) > 0)[~legal].any()
    np.testing.assert_allclose(np.asarray(batch.policy).sum(-1), 1.0, rtol=1e-5)


def test_a_policy_temperature_weights_every_move_by_the_discs_it_loses(labels, labels_file, tmp_path, monkeypatch):
    """``data.policy_temperature`` T: each solved legal move gets exp((value - best) / T), normalised;
    T -> 0 is the optimal moves alone; a targets-only row (others ``UNSOLVED``) stays uniform over
    its optimal moves; a short run learns from these targets; bad settings are one-line errors."""
    positions = labels.positions
    soft = label_data.policy_targets(positions, 2.0)
    for row in range(len(positions)):
        values = positions.values[row]
        legal = values != ts.NO_VALUE
        expected = np.where(legal, np.exp((values.astype(np.float64) - positions.best[row]) / 2.0), 0.0)
        np.testing.assert_allclose(soft[row], expected / expected.sum(), rtol=1e-5)
    spread = (soft > 0).sum(axis=1) > (label_data.policy_targets(positions) > 0).sum(axis=1)
    assert spread.mean() > 0.5  # most rows put weight on suboptimal moves too
    # the better of two suboptimal moves gets more: ordered as the exact values
    row = int(np.flatnonzero(spread)[0])
    legal = np.flatnonzero(positions.values[row] != ts.NO_VALUE)
    order = np.argsort(positions.values[row][legal], kind="stable")
    assert (np.diff(soft[row][legal][order]) >= 0).all()
    np.testing.assert_allclose(label_data.policy_targets(positions, 1e-3), label_data.policy_targets(positions),
                               atol=1e-6)

    targets_only = positions.values.copy()
    targets_only[(targets_only != ts.NO_VALUE) & (targets_only != positions.best[:, None])] = ts.UNSOLVED
    unsolved = ts.TestSet(*(targets_only if name == "values" else getattr(positions, name)
                            for name in ts.TestSet._fields))
    np.testing.assert_allclose(label_data.policy_targets(unsolved, 2.0), label_data.policy_targets(positions),
                               rtol=1e-6)

    rows = label_data.to_device(labels, policy_temperature=2.0)
    samples = label_data.label_samples(rows, jnp.arange(len(labels)), GAME)
    np.testing.assert_allclose(np.asarray(samples.policy), soft, rtol=1e-6)
    temperatures, real = [], label_data.to_device  # the run builds its rows with the configured temperature

    def spy(labels, value_margin=0.0, policy_temperature=0.0):
        temperatures.append(policy_temperature)
        return real(labels, value_margin, policy_temperature)

    monkeypatch.setattr(label_data, "to_device", spy)
    result = supervised.run(_config(labels_file, **{"data.policy_temperature": 2.0}), tmp_path / "run",
                            log=lambda _: None)
    last = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert temperatures == [2.0] and last["step"] == 2 and np.isfinite(last["loss"]) and 0 <= result["optimal"] <= 1

    with pytest.raises(InputError, match="policy_temperature must be >= 0"):
        supervised.resolve(_config(labels_file, **{"data.policy_temperature": -1.0}))
    wthor = _config(labels_file, **{"data.policy_temperature": 2.0})
    wthor.data.labels = ""
    with pytest.raises(InputError, match="policy_temperature needs data.labels"):
        supervised.resolve(wthor)


def _config(labels_file, **overrides):
    config = get_config("test")
    config.data.labels = str(labels_file)
    config.update(schedule_clock="minutes", max_minutes=10.0, total_steps=2, steps_per_call=1, eval_every=2,
                  log_every=1)
    config.update_from_flattened_dict(overrides)
    return config


def test_a_short_run_logs_per_band_scores_that_match_the_file(labels, labels_file, tmp_path):
    lines = []
    result = supervised.run(_config(labels_file), tmp_path / "run", log=lines.append)
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    assert last["step"] == 2 and 0 < last["schedule_position"] <= 1 and last["learning_rate"] > 0
    for band in ("8-12", "13-16", "17-20", "21-24"):
        assert f"eval/optimal_{band}" in last and f"eval/disc_loss_{band}" in last
    assert any(line.startswith("raw policy on") for line in lines)

    # the checkpoint is a 6x6 network; its raw policy and value head, scored here from the file
    network, variables, size = load_agent_variables(tmp_path / "run")
    assert size == 6
    test = labels.take(labels.split == "test").positions
    apply = jax.jit(functools.partial(make_network(6, network).apply, train=False))  # op by op costs more
    logits, value = apply(variables, GAME.observation(ts.to_states(test)))
    legal = np.asarray(GAME.legal_moves(ts.to_states(test)))
    moves = np.argmax(np.where(legal, np.asarray(logits), -np.inf), axis=-1)
    achieved = test.values[np.arange(len(test)), moves].astype(int)
    keep = ts.informative(test)
    assert result["positions"] == keep.sum() < len(test)  # the pass row does not count
    assert result["optimal"] == pytest.approx(np.mean(achieved[keep] == test.best[keep]))
    assert result["disc_loss"] == pytest.approx(np.mean(test.best[keep] - achieved[keep]))
    low = keep & (test.empties <= 12)
    assert last["eval/optimal_8-12"] == pytest.approx(np.mean(achieved[low] == test.best[low]))
    predicted = np.round(np.clip(np.asarray(value), -1, 1))  # nearest of -1, 0, +1
    assert result["value_sign"] == pytest.approx(np.mean(predicted == np.sign(test.best)))
    assert last["eval/value_sign"] == pytest.approx(result["value_sign"])


def test_train_positions_trains_on_a_fixed_subset(labels_file, tmp_path):
    """``data.train_positions=N``: N of the training positions, the same N for the same seed."""
    lines = []
    supervised.run(_config(labels_file, **{"data.train_positions": 3}), tmp_path / "run", log=lines.append)
    assert any(line.startswith("training on a random subset of 3 of those positions") for line in lines), lines
    full = label_data.load_label_files(str(labels_file)).train
    first, again = (label_data.subsample(full, 3, seed=0) for _ in range(2))
    assert len(first) == 3 < len(full) and (first.game == again.game).all()
    for value, message in ((-1, "data.train_positions must be >= 0"), (3, "data.train_positions needs data.labels")):
        config = _config(labels_file, **{"data.train_positions": value})
        if value > 0:
            config.data.labels = ""
        with pytest.raises(InputError, match=message):
            supervised.resolve(config)


def test_train_supervised_splits_each_batch_over_one_device_per_core(labels_file, tmp_path):
    """As users run it (no JAX_NUM_CPU_DEVICES): one CPU device per usable core, the batch split over them."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-m", "experiments.train_supervised",
                           "--config=experiments/configs/supervised.py:test", f"--config.data.labels={labels_file}",
                           "--config.total_steps=2", "--config.eval_every=2", f"--workdir={tmp_path / 'run'}"],
                          cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cores, batch = len(os.sched_getaffinity(0)), get_config("test").batch_size
    expected = max(d for d in range(1, cores + 1) if batch % d == 0)
    assert f"split over {expected} device(s)" in done.stdout, done.stdout
    bad = subprocess.run([sys.executable, "-m", "experiments.train_supervised",
                          "--config=experiments/configs/supervised.py:test", f"--config.data.labels={labels_file}",
                          "--config.num_devices=3", f"--workdir={tmp_path / 'bad'}"],
                         cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        f"train_supervised: batch_size {batch} must be a multiple of num_devices 3"), bad.stderr


def _small_set(size: int) -> labels_lib.LabelSet:
    game = Othello(size)
    start = jax.tree.map(lambda x: x[None], game.init())
    values = np.where(np.asarray(game.legal_moves(start)), 0, ts.NO_VALUE).astype(np.int8)
    return _label_set(ts.from_values(start, game, values), test_every=1)


@pytest.mark.parametrize("case, message", [
    ("missing", "labels file not found: "),
    ("sizes", "labels files of different board sizes: "),
    ("not labels", "a test set, not a labelled set"),
    ("no train rows", "no split=='train' positions in "),
])
def test_bad_labels_are_a_one_line_error_with_exit_2(case, message, labels_file, tmp_path, monkeypatch, capsys):
    if case == "missing":
        files = f"{labels_file},{tmp_path / 'none.npz'}"
    elif case == "sizes":
        labels_lib.save(_small_set(4), tmp_path / "four.npz")
        files = f"{labels_file},{tmp_path / 'four.npz'}"
    elif case == "not labels":
        files = str(ts.DEFAULT_PATH)
    else:
        labels_lib.save(_small_set(6), tmp_path / "test_only.npz")
        files = str(tmp_path / "test_only.npz")
    monkeypatch.setattr(train_supervised, "_CONFIG", types.SimpleNamespace(value=_config(files)))
    monkeypatch.setattr(train_supervised, "_WORKDIR", types.SimpleNamespace(value=str(tmp_path / "run")))
    assert train_supervised.main(["train_supervised"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("train_supervised: ") and message in err and "\n" not in err, err


def test_labels6_config_is_the_quickstart_network_on_the_minutes_clock():
    settings = supervised.resolve(get_config("labels6"))
    network = settings.network
    assert (network.blocks, network.channels, network.value_hidden) == (4, 32, 32)
    assert settings.schedule_clock == "minutes" and settings.max_minutes > 0
    assert (settings.batch_size, settings.steps_per_call) == (256, 1)
    assert settings.optimizer.name == "adamw" and settings.optimizer.schedule == "cosine"
    assert label_data.parse_paths(" a.npz, b.npz ,") == ["a.npz", "b.npz"]
    config = get_config("labels6")
    config.max_minutes = 0.0
    with pytest.raises(InputError, match="schedule_clock='minutes' needs max_minutes > 0"):
        supervised.resolve(config)


@pytest.mark.slow  # CI runs the same three steps as the README's commands (tests/test_entry_points.py)
def test_a_labels6_network_starts_the_quickstart_run(labels_file, tmp_path):
    """Pretraining on exact labels, then self-play: the quickstart (``othello6_cpu``) takes a
    ``:labels6`` run as its ``init_network`` as it is (same architecture and board)."""
    from experiments.configs import othello6_cpu
    from othello_jax.training.compiled.iteration import make_mesh
    from othello_jax.training.runner.program import make_train

    config = get_config("labels6")
    config.data.labels = str(labels_file)
    config.update(max_minutes=10.0, total_steps=2, eval_every=2, log_every=1)
    supervised.run(config, tmp_path / "pretrained", log=lambda _: None)
    quickstart = othello6_cpu.get_config()
    quickstart.init_network = str(tmp_path / "pretrained")
    program = make_train(quickstart, make_mesh(1))
    _, saved, _ = load_agent_variables(tmp_path / "pretrained")
    state, _ = program.start(0, program.initial_network())
    for got, expected in zip(jax.tree.leaves(state.params), jax.tree.leaves(saved["params"]), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_a_margin_value_network_learns_exact_values_and_plays_on_their_scale(labels, labels_file, tmp_path):
    """``network.value_margin=0.5``: value targets are 0.5 * result + 0.5 * exact discs / squares,
    the held-out value score reads results on that scale, the checkpoint says so, and its players
    search with it; WThor and self-play refuse it (one-line errors)."""
    positions = labels.positions
    _, value = label_data.targets(positions, 0.5)
    sign = np.sign(positions.best.astype(np.float32))
    np.testing.assert_allclose(value, 0.5 * sign + 0.5 * positions.best / 36, rtol=1e-6)
    assert (np.sign(value) == sign).all() and set(GAME.read_value(value, 0.5)[0].tolist()) == {-1, 0, 1}
    np.testing.assert_array_equal(GAME.read_value(value, 0.5)[0], sign)
    rows = label_data.to_device(labels, 0.5)
    np.testing.assert_allclose(np.asarray(label_data.label_samples(rows, jnp.arange(len(labels)), GAME).value), value)

    result = supervised.run(_config(labels_file, **{"network.value_margin": 0.5}), tmp_path / "run",
                            log=lambda _: None)
    network, variables, _ = load_agent_variables(tmp_path / "run")
    assert network.value_margin == 0.5
    test = labels.take(labels.split == "test").positions
    apply = jax.jit(functools.partial(make_network(6, network).apply, train=False))
    predicted = np.asarray(apply(variables, GAME.observation(ts.to_states(test)))[1])
    assert result["value_sign"] == pytest.approx(np.mean(GAME.read_value(predicted, 0.5)[0] == np.sign(test.best)))
    assert result["value_mse"] == pytest.approx(np.mean((predicted - label_data.value_targets(test, 0.5)) ** 2),
                                                rel=1e-5)

    config = _config(labels_file, **{"network.value_margin": 0.5})
    config.data.labels = ""
    with pytest.raises(InputError, match="network.value_margin needs data.labels"):
        supervised.resolve(config)
    with pytest.raises(InputError, match=r"value_margin must be in \[0, 1\]"):
        supervised.resolve(_config(labels_file, **{"network.value_margin": 1.5}))
    from experiments.configs import othello6_cpu
    from othello_jax.training.compiled.iteration import make_mesh
    from othello_jax.training.runner.program import make_train

    quickstart = othello6_cpu.get_config()
    quickstart.init_network = str(tmp_path / "run")
    with pytest.raises(InputError, match="predicts margins"):
        make_train(quickstart, make_mesh(1)).initial_network()
