"""The compiled iteration: self-play, replay and gradient steps as jitted functions over device arrays.

Nothing here manages processes, threads or files: the host's side is :mod:`othello_jax.training.runner`."""
