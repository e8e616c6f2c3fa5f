"""6x6 Othello for two hours on a 2-core CPU: the quickstart's recipe (``othello6_cpu``) with the
budget of issue 30's long run and an in-run curve against perfect play.

The same network (4 blocks x 32 channels, capacity did not bind at 26 minutes: RESULTS.md's
ceiling table), search and value targets as the quickstart, on the minutes clock over 120
minutes: the cosine learning rate and the replay window's growth follow the share of the budget
used, so a slow machine finishes its schedule too. The window grows to 8 iterations' games
(5 in the quickstart) since the run sees five times the positions. Every 100 iterations the run
scores itself on the perfect-play test set and against alpha-beta depth 3 (64 games), so the
metrics log holds the curve against wall-clock time; the final network is scored by
``othello-jax eval --white=perfect`` (README). Resumable on the same command (SIGTERM, Ctrl-C,
a session's end).

    othello-jax train --config=experiments/configs/othello6_2h.py --workdir=runs/othello6_2h
"""

from experiments.configs import othello6_cpu


def get_config():
    c = othello6_cpu.get_config()
    c.iterations = 3000  # an upper bound: at 5-13 iterations a minute (cpu-2c) the budget ends the run
    c.max_minutes = 120.0
    c.replay.update(capacity=80_000, window_start=2, window_max=8, window_grow_every=50)  # 8 at 10%
    c.eval.update(every=100, games=64, num_simulations=128, opponents="alphabeta:depth=3", testset=True)
    c.checkpoint.update(every=10, keep=3)
    return c
