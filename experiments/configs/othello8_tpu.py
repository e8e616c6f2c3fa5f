"""8x8 on a TPU: Colab/Kaggle v5e-1 (1 device) or v5e-8/v2-8/v3-8 (8 devices, same config).

OLIVAW-like schedule: SGD with momentum and step decay, simulations 64 -> 128 -> 256, replay
window growing from 2 to 5 iterations, harvested tree positions. Games and batches are
multiples of 128 and of 8 lanes, so the work splits evenly over 1 or 8 devices.

    othello-jax train --config=experiments/configs/othello8_tpu.py --workdir=/content/runs/o8
"""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 8
    c.iterations = 300
    c.network.update(preset="standard", dtype="bfloat16")  # 6 blocks x 128 channels
    c.search.update(variant="gumbel", num_simulations=64, max_num_considered_actions=16)
    c.selfplay.update(num_games=1024, temperature_plies=12, value_target="zq")
    c.selfplay.harvest.update(per_tree=1, min_visits=8)
    c.selfplay.resign.update(enabled=True)
    c.replay.update(lanes=8, capacity=1_000_000, window_start=2, window_max=5, window_grow_every=20)
    c.train.update(batch_size=1024, steps_per_iteration=200, unroll="no")
    c.optimizer.update(name="sgd", learning_rate=0.02, momentum=0.9, schedule="steps",
                       boundaries=(20_000, 45_000), scales=(0.1, 0.1))
    c.loss.update(l2=1e-4)
    c.stages = "60: search.num_simulations=128; 150: search.num_simulations=256"
    c.eval.update(every=10, games=128, opponents="random greedy alphabeta:depth=4")
    c.checkpoint.update(every=5, keep=3)
    return c
