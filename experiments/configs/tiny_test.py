"""A seconds-long 4x4 run for tests and smoke checks (tiny network, 4 simulations, 8 games)."""

from othello_jax.training.settings.defaults import default_config


def get_config():
    c = default_config()
    c.board_size = 4
    c.iterations = 4
    c.network.update(preset="tiny", value_hidden=16)
    c.search.update(variant="gumbel", num_simulations=4, max_num_considered_actions=4)
    c.selfplay.update(num_games=8, temperature_plies=4)
    c.replay.update(capacity=1024, window_start=1, window_max=2, window_grow_every=2)
    c.train.update(batch_size=32, steps_per_iteration=4)
    c.optimizer.update(name="adamw", learning_rate=1e-3, schedule="constant", weight_decay=0.0)
    c.checkpoint.update(every=1, keep=3)
    return c
