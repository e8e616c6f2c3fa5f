"""Live dashboards: TensorBoard event files written beside a run's metrics.jsonl.

Opened on the first write, so that a process that never writes (not process 0 of several, or a
run stopped before its first iteration) leaves no file. Each session writes a new events file
(TensorBoard reads them all, in name order). Its first event marks a restart at the first step
it writes: TensorBoard hides what earlier sessions wrote from that step on (the iterations after
the checkpoint a resumed run restarts from, trained again). No TensorFlow: tensorboardX writes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path


class Dashboard:
    """TensorBoard scalars and figures for one run directory, flushed at every write (live)."""

    def __init__(self, logdir: str | Path):
        self.logdir = Path(logdir)
        self._writer = None

    def _open(self, step: int):
        """The session's writer; ``step`` is the first it writes: earlier sessions' events from
        that step on are orphaned (TensorBoard's purge on a restart)."""
        if self._writer is None:
            from tensorboardX import SummaryWriter

            # the nanosecond suffix keeps two sessions started within one second apart, in order
            # (tensorboardX names files by the second and would overwrite the first)
            self._writer = SummaryWriter(str(self.logdir), purge_step=step, filename_suffix=f".{time.time_ns()}")
        return self._writer

    def scalars(self, values: Mapping[str, object], step: int) -> None:
        """Every number of ``values`` under its own name at ``step`` (None, NaN, text: left out)."""
        writer = self._open(step)
        for tag, value in values.items():
            if isinstance(value, int | float) and math.isfinite(value):
                writer.add_scalar(tag, float(value), step)
        writer.flush()

    def figure(self, tag: str, figure, step: int) -> None:
        """A matplotlib ``figure`` as the image ``tag`` at ``step``; the figure is closed."""
        writer = self._open(step)
        writer.add_figure(tag, figure, step, close=True)
        writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
