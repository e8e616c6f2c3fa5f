"""8x8 with a small network: a CPU smoke run (minutes per iteration) or a modest GPU run.

    othello-jax train --config=experiments/configs/othello8_small.py --workdir=runs/o8small
"""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 8
    c.iterations = 100
    c.network.update(preset="", blocks=4, channels=64, value_hidden=64)
    c.search.update(variant="gumbel", num_simulations=16, max_num_considered_actions=8)
    c.selfplay.update(num_games=128, temperature_plies=12, value_target="z")
    c.replay.update(capacity=100_000, window_start=2, window_max=5, window_grow_every=10)
    c.train.update(batch_size=512, steps_per_iteration=16)
    c.optimizer.update(name="adamw", learning_rate=2e-3, weight_decay=1e-4, schedule="cosine",
                       warmup_steps=50, total_steps=100 * 16, end_scale=0.05)
    c.loss.update(l2=0.0)
    c.stages = "40: search.num_simulations=32"
    c.eval.update(every=10, games=64, opponents="random greedy alphabeta:depth=2")
    c.checkpoint.update(every=5, keep=3)
    return c
