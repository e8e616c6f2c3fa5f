"""The benchmarks' one way to time code: wall-clock and this process's CPU seconds, JAX outputs waited for.

JAX dispatches asynchronously, so a call returns before its work is done; every helper here waits
for the outputs (``jax.block_until_ready``) before it stops the clock. CPU seconds are reported
beside the wall clock because on a shared machine the wall clock also counts others' work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax


@dataclass
class Stopwatch:
    """Wall and process CPU seconds of a ``with`` block (or a sum of blocks: the fields add up)."""

    wall: float = 0.0
    cpu: float = 0.0

    def __enter__(self) -> Stopwatch:
        self._wall_start, self._cpu_start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall_start
        self.cpu = time.process_time() - self._cpu_start

    def __str__(self) -> str:
        return f"{self.wall:.2f}s ({self.cpu:.2f}s CPU)"


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, Stopwatch]:
    """One call of ``fn(*args)`` with its outputs ready, and the time it took (compilation included)."""
    with Stopwatch() as watch:
        out = jax.block_until_ready(fn(*args))
    return out, watch


def mean_seconds(fn: Callable[..., Any], *args: Any, repeats: int = 3) -> float:
    """Mean wall seconds of ``repeats`` back-to-back calls, after one warm-up (compiling) call."""
    jax.block_until_ready(fn(*args))
    with Stopwatch() as watch:
        for _ in range(repeats):
            jax.block_until_ready(fn(*args))
    return watch.wall / repeats


def best_seconds(calls: dict[str, tuple[Callable[..., Any], tuple]], repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` wall seconds per named call ``name: (fn, args)``, after one warm-up call each.

    The calls are interleaved (every call once per round), so a slow spell of the machine touches
    all of them alike.
    """
    for fn, args in calls.values():
        jax.block_until_ready(fn(*args))
    best = {name: float("inf") for name in calls}
    for _ in range(repeats):
        for name, (fn, args) in calls.items():
            _, watch = timed(fn, *args)
            best[name] = min(best[name], watch.wall)
    return best
