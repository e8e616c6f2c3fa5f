"""6x6 Othello that learns on a 2-core laptop CPU in under 30 minutes.

Small network (4 blocks x 32 channels), Gumbel search with 16 simulations, 128 games per
iteration, value targets mixing outcome and search value with exact values for the last 6
empty squares, AdamW with cosine decay. The schedules run on the minutes clock: the cosine
learning rate and the replay window's growth follow the share of the 26-minute budget used,
so they finish on a slow machine too. Training stops after ``max_minutes`` (its final
evaluation and checkpoint included) even if ``iterations`` are not done.

    othello-jax train --config=experiments/configs/othello6_cpu.py --workdir=runs/othello6
"""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 6
    c.iterations = 240
    c.max_minutes = 26.0
    c.schedule_clock = "minutes"  # learning rate and window over the budget, not over the 240 iterations
    c.network.update(preset="", blocks=4, channels=32, value_hidden=32)
    c.search.update(variant="gumbel", num_simulations=16, max_num_considered_actions=8)
    c.selfplay.update(num_games=128, temperature_plies=8, value_target="zq", exact_endgame_empties=6)
    c.replay.update(capacity=40_000, window_start=2, window_max=5, window_grow_every=8, augment=True)
    c.train.update(batch_size=512, steps_per_iteration=10)
    c.optimizer.update(name="adamw", learning_rate=2e-3, weight_decay=1e-4, schedule="cosine",
                       warmup_steps=20, total_steps=0, end_scale=0.05)
    c.loss.update(l2=0.0)  # AdamW's decoupled weight decay instead
    c.eval.update(every=40, games=64, num_simulations=128, opponents="random greedy alphabeta:depth=3")
    c.checkpoint.update(every=5, keep=3)
    return c
