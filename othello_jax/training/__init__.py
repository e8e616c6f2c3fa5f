"""Learning by self-play, in one compiled iteration: self-play -> replay -> SGD.

Data flow: ``selfplay`` (games searched with :mod:`othello_jax.search`) produces ``samples``,
``replay`` stores them on device, ``losses`` + ``optimizers`` drive the gradient steps, and
``iteration`` compiles the three into one function; ``loop`` runs it with checkpoints,
metrics and evaluations (``arena_hooks``); ``config`` holds every setting and the stages.
``supervised`` learns from expert games instead; ``mirror`` keeps a durable copy of a run.
"""
