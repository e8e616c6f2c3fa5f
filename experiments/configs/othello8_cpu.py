"""8x8 Othello that learns on a 2-core laptop CPU in two hours.

The 6x6 laptop recipe (``othello6_cpu``) carried to 8x8: a small network (4 blocks x 32
channels), Gumbel search with 16 simulations, 128 games per iteration, value targets mixing
outcome and search value with exact values for the last 6 empty squares, AdamW with a cosine
decay over the 2-hour budget (``schedule_clock = "minutes"``, so a slow machine finishes the
schedule too). Evaluated against alpha-beta depths 1-3 along the way (the curve).

    othello-jax train --config=experiments/configs/othello8_cpu.py --workdir=runs/othello8_cpu
"""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 8
    c.iterations = 700  # about what 120 minutes hold on a 2-core CPU (10.5 s per iteration); the budget ends the run
    c.max_minutes = 120.0
    c.schedule_clock = "minutes"
    c.network.update(preset="", blocks=4, channels=32, value_hidden=32)
    c.search.update(variant="gumbel", num_simulations=16, max_num_considered_actions=8)
    c.selfplay.update(num_games=128, temperature_plies=12, value_target="zq", exact_endgame_empties=6)
    c.replay.update(capacity=150_000, window_start=2, window_max=6, window_grow_every=10, augment=True)
    c.train.update(batch_size=512, steps_per_iteration=16)
    c.optimizer.update(name="adamw", learning_rate=2e-3, weight_decay=1e-4, schedule="cosine",
                       warmup_steps=50, total_steps=0, end_scale=0.05)
    c.loss.update(l2=0.0)
    c.eval.update(every=90, games=64, num_simulations=64,
                  opponents="alphabeta:depth=1 alphabeta:depth=2 alphabeta:depth=3")
    c.checkpoint.update(every=10, keep=3)
    return c
