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

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json
    import jax, numpy as np
    from experiments.configs import tiny_test
    from othello_jax.training import iteration as train
    from othello_jax.training.program import make_train
    from othello_jax.game import Othello

    assert len(jax.devices()) == 8, jax.devices()
    config = tiny_test.get_config()  # 4x4, real self-play with Gumbel search
    config.selfplay.num_games = 16
    config.replay.update(lanes=8, augment=True, average_duplicates=True)
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
