"""Data parallelism: 8 simulated CPU devices give the same self-play and training as 1 device.

Runs in a subprocess because the device count is fixed when JAX starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json
    import jax, numpy as np
    from experiments.configs import tiny_test
    from othello_jax.training.compiled import iteration as train
    from othello_jax.training.runner.program import make_train
    from othello_jax.game import Othello

    assert len(jax.devices()) == 8, jax.devices()
    config = tiny_test.get_config()  # 4x4, real self-play with Gumbel search
    config.selfplay.num_games = 16
    config.replay.update(lanes=8, augment=True)
    config.train.update(batch_size=32, steps_per_iteration=2)
    game = Othello(config.board_size)

    def run(num_devices):
        program = make_train(config, train.make_mesh(num_devices))
        state = program.init_state(jax.random.PRNGKey(0))
        step = program.iteration_fn(0, state)
        for i in range(2):
            state, metrics = step(state, jax.random.PRNGKey(10 + i))
        shards = {len(x.sharding.device_set) for x in jax.tree.leaves(state.buffer)}
        params = [np.asarray(x).ravel() for x in jax.tree.leaves(state.params)]
        return dict(params=np.concatenate(params).tolist(), loss=float(metrics["loss"]),
                    positions=float(metrics["positions"]), buffer_devices=sorted(shards),
                    mover=np.asarray(state.buffer.data.state.mover.lo).ravel().tolist(),
                    policy=np.asarray(state.buffer.data.policy).ravel().tolist(),
                    shard_shape=list(state.buffer.data.mask.addressable_shards[0].data.shape))

    print(json.dumps({"one": run(1), "eight": run(8)}))
""")


def test_eight_devices_match_one_device():
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="8", JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    one, eight = result["one"], result["eight"]
    # the buffer really is split over 8 devices (one lane each) in the 8-device run
    assert one["buffer_devices"] == [1] and eight["buffer_devices"] == [8]
    assert eight["shard_shape"][0] == 1 and one["shard_shape"][0] == 8
    # same self-play games, same positions, and the same parameters up to float reduction order
    assert one["positions"] > 0 and one["mover"] == eight["mover"]
    np.testing.assert_allclose(one["policy"], eight["policy"], rtol=1e-4, atol=1e-6)
    assert one["positions"] == eight["positions"]
    np.testing.assert_allclose(one["loss"], eight["loss"], rtol=1e-4)
    np.testing.assert_allclose(np.array(one["params"]), np.array(eight["params"]), rtol=1e-3, atol=1e-5)


SUPERVISED_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, numpy as np
    from experiments.configs.supervised import get_config
    from othello_jax.checkpoint import load_agent_variables
    from othello_jax.evaluation import labels as labels_lib
    from othello_jax.solver import solved_moves as ts
    from othello_jax.training.supervised import trainer as supervised

    assert len(jax.devices()) == 4, jax.devices()
    shipped = ts.load().take(np.arange(0, 480, 6))  # 80 positions of the 6x6 test set
    n = len(shipped)
    split = np.where(np.arange(n) % 4 == 0, "test", "train")
    labels_lib.save(labels_lib.LabelSet(shipped, np.arange(n, dtype=np.int32), np.zeros(n, np.int8), split,
                                        np.full(n, "shipped")), sys.argv[1] + "/six.npz")

    def run(num_devices):
        config = get_config("test")
        config.update(total_steps=4, steps_per_call=2, eval_every=4, log_every=2, num_devices=num_devices)
        config.data.labels = sys.argv[1] + "/six.npz"
        lines = []
        result = supervised.run(config, f"{sys.argv[1]}/run{num_devices}", log=lines.append)
        _, variables, _ = load_agent_variables(f"{sys.argv[1]}/run{num_devices}")
        params = np.concatenate([np.asarray(x).ravel() for x in jax.tree.leaves(variables)])
        return dict(params=params.tolist(), optimal=result["optimal"],
                    split=[line for line in lines if "split over" in line])

    def all_reduces(num_devices):
        # all-reduces in the compiled step: the gradient and batch-norm sums of a split batch
        from othello_jax.game import Othello
        from othello_jax.model import init_variables, make_network
        from othello_jax.training.supervised import label_targets as label_data
        from othello_jax.training.compiled.optimizers import make_optimizer

        config = get_config("test")
        settings = supervised.resolve(config)
        net = make_network(6, settings.network)
        variables = init_variables(net, jax.random.key(0), board_size=6)
        optimizer = make_optimizer(settings.optimizer)
        rows = label_data.to_device(label_data.load_label_files(sys.argv[1] + "/six.npz").train)
        chunk = supervised.make_train_chunk(net, optimizer, settings, Othello(6), label_data.label_samples,
                                            supervised.batch_mesh(settings.batch_size, num_devices))
        text = chunk.lower(variables["params"], variables["batch_stats"], optimizer.init(variables["params"]),
                           rows, jax.random.key(1)).compile().as_text()
        return text.count("all-reduce-start") + text.count("all-reduce(")

    print(json.dumps({"one": run(1), "four": run(4), "reduces": [all_reduces(1), all_reduces(4)]}))
""")


# CI's time (two minutes): the README's expert start (tests/test_supervised.py) runs the same
# supervised step split over the users' default devices, and test_eight_devices_match_one_device
# checks that a split run takes the same steps as one device; `-m ""` runs this one too
@pytest.mark.slow
def test_supervised_learning_splits_its_batch_and_matches_one_device(tmp_path):
    """The supervised step is data parallel: 4 devices take the same steps as 1."""
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="4", JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SUPERVISED_SCRIPT, str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    one, four = result["one"], result["four"]
    assert "split over 1 device(s)" in one["split"][0] and "split over 4 device(s)" in four["split"][0]
    assert result["reduces"][0] == 0 < result["reduces"][1]  # the batch really is split over 4
    # same batches and steps: the parameters (and batch-norm statistics) agree up to reduction order
    np.testing.assert_allclose(np.array(one["params"]), np.array(four["params"]), rtol=1e-3, atol=1e-5)
    assert one["optimal"] == four["optimal"]
