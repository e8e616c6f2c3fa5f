"""Learning: self-play training in one compiled iteration, and supervised learning from labelled games.

The rooms, in the order data flows and imports point (each imports only the rooms below it):

- ``settings/``: what a run is told. Every default (``defaults``), the typed records a run reads
  (``run_settings``, ``selfplay_settings``), stages and the schedule clock (``stages``), retired keys
  (``retired``). Plain records, no arrays.
- ``compiled/``: the jitted iteration. ``selfplay`` (games searched with :mod:`othello_jax.search`)
  produces ``samples``, ``replay`` stores them on device, ``losses`` + ``optimizers`` + ``sgd`` drive
  the gradient steps, ``iteration`` compiles the three into one function; ``placement`` lays it over devices.
- ``runner/``: the host's run. ``program`` compiles each stage, ``loop`` runs it with checkpoints,
  ``metrics``, in-run matches (``arena_hooks``), the time ``clock``, TensorBoard (``dashboard``) and a
  durable copy of the workdir (``mirror``).
- ``supervised/``: the second trainer, learning from expert games or exact labels (``trainer``,
  ``label_targets``).
"""
