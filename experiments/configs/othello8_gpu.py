"""8x8 on one NVIDIA GPU: bfloat16 network, thousands of parallel games, AdamW with cosine decay.

    othello-jax train --config=experiments/configs/othello8_gpu.py --workdir=runs/o8gpu \
        --config.max_minutes=20 --config.schedule_clock=minutes

With a time limit, ``schedule_clock=minutes`` makes the learning rate and replay window follow
the share of the 20 minutes used (and the stage "50:" could be written "25%:"), so the
schedules finish however fast the GPU is.
"""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 8
    c.iterations = 200
    c.network.update(preset="standard", dtype="bfloat16")  # 6 blocks x 128 channels
    c.search.update(variant="gumbel", num_simulations=32, max_num_considered_actions=16)
    c.selfplay.update(num_games=2048, temperature_plies=12, value_target="zq")
    c.selfplay.harvest.update(per_tree=1, min_visits=8)
    c.replay.update(capacity=1_000_000, window_start=2, window_max=5, window_grow_every=15)
    c.train.update(batch_size=1024, steps_per_iteration=150, unroll="no")
    c.optimizer.update(name="adamw", learning_rate=1e-3, weight_decay=1e-4, schedule="cosine",
                       warmup_steps=500, total_steps=200 * 150, end_scale=0.05)
    c.loss.update(l2=0.0)
    c.stages = "50: search.num_simulations=64"
    c.eval.update(every=10, games=128, opponents="random greedy alphabeta:depth=3")
    c.checkpoint.update(every=5, keep=3)
    return c
