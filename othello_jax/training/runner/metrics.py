"""Training metrics: one JSON line per iteration (the source of truth), console progress, PNG curves.

``WORKDIR/metrics.jsonl`` holds one object per iteration (``iteration``, losses, entropies,
throughput, buffer fill, learning rate, simulations, ``schedule_position`` with the minutes
clock, and ``eval/...`` results when an evaluation ran). :func:`plot` draws the curves of one
or several runs side by side. With ``tensorboard`` on, the same numbers go to TensorBoard event
files in the workdir as they are written, and the curves as an image when asked for
(:mod:`othello_jax.training.runner.dashboard`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from othello_jax.errors import InputError
from othello_jax.training.runner.dashboard import Dashboard

if TYPE_CHECKING:  # the records pull in agents and JAX; the plot command reads metrics without them
    from othello_jax.training.settings.run_settings import RunSettings

METRICS_FILE = "metrics.jsonl"


def _jsonable(value):
    """Python scalars for numpy/jax scalars; NaN/inf become None (JSON has no such numbers)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# the x axis of a record (supervised records repeat it as "step"): TensorBoard's step, not a scalar
STEP_KEYS = ("iteration", "step")
CURVES_TAG = "curves"  # the TensorBoard image of plot()'s curves
CURVES_EVERY_S = 300.0  # drawing them takes a second or two: at most this often while training


class MetricsLog:
    """Append-only JSON-lines log in a workdir; on resume, lines past the checkpoint are dropped.

    With ``tensorboard``, each record also goes to TensorBoard event files in the workdir: every
    number under its JSON name, at the record's iteration (a resumed run's first record hides what
    an earlier session wrote from that iteration on, as the JSON lines past the checkpoint are
    dropped), and plot()'s curves as an image when asked for (at most every ``CURVES_EVERY_S``)
    and at the end (:meth:`draw_curves`)."""

    def __init__(self, workdir: str | Path, tensorboard: bool = False, now: Callable[[], float] = time.monotonic):
        self.path = Path(workdir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dashboard = Dashboard(self.path.parent) if tensorboard else None
        self.now = now
        self.drawn_at: float | None = None  # when this session last drew the curves
        self.undrawn: int | None = None  # the last step written since then

    def truncate_after(self, iteration: int) -> None:
        """Forget records of iterations after ``iteration`` (they will be trained again)."""
        if not self.path.exists():
            return
        kept = [r for r in read_records(self.path) if int(r.get("iteration", 0)) <= iteration]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict, curves: bool = False) -> None:
        """Append ``record``; with TensorBoard on, write its numbers there too (as the JSON line has
        them) and, with ``curves`` (an evaluation's record), the curves so far unless drawn recently."""
        values = {k: _jsonable(v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(values) + "\n")
        if self.dashboard is None:
            return
        self.undrawn = int(values["iteration"])
        self.dashboard.scalars({k: v for k, v in values.items() if k not in STEP_KEYS}, self.undrawn)
        if curves and (self.drawn_at is None or self.now() - self.drawn_at >= CURVES_EVERY_S):
            self.draw_curves()

    def draw_curves(self) -> None:
        """With TensorBoard on, the curves of the run so far as an image at the last record written
        (unless drawn there already): what the end of a session calls."""
        if self.dashboard is not None and self.undrawn is not None:
            self.dashboard.figure(CURVES_TAG, figure([self.path.parent]), self.undrawn)
            self.drawn_at, self.undrawn = self.now(), None

    def close(self) -> None:
        """Close the TensorBoard files (every record is on disk already)."""
        if self.dashboard is not None:
            self.dashboard.close()


def read_records(path: str | Path) -> list[dict]:
    """All records of a metrics file (a workdir or the file itself); a torn last line is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    if not path.exists():
        raise FileNotFoundError(f"no {METRICS_FILE} in {path.parent}")
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a run killed mid-write leaves a partial line
    return records


def iteration_record(metrics: dict, done: int, seconds: float, compile_s: float, stage: RunSettings,
                     network_evaluations: int) -> dict:
    """The metrics record of iteration ``done`` (1-based): the compiled iteration's scalar
    ``metrics``, its duration and throughput, and the search budget of ``stage``."""
    return dict(metrics, iteration=done, iteration_s=seconds, compile_s=compile_s,
                positions_per_s=metrics["positions"] / seconds,
                games_per_s=stage.selfplay.num_games / seconds,
                evaluations_per_s=network_evaluations / seconds,
                simulations=stage.search.num_simulations)


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """One console line per iteration with throughput and an ETA from recent iteration times."""

    def __init__(self, total_iterations: int, window: int = 10):
        self.total = total_iterations
        self.window = window
        self.recent: list[float] = []

    def eta(self, iteration: int, seconds: float, time_left: float | None = None) -> float:
        """Seconds to go after ``iteration`` took ``seconds`` (first, compiling iterations are skipped)."""
        self.recent = (self.recent + [seconds])[-self.window:]
        typical = sorted(self.recent)[len(self.recent) // 2]
        eta = typical * max(self.total - iteration, 0)
        return eta if time_left is None else min(eta, max(time_left, 0.0))

    def line(self, record: dict, eta: float) -> str:
        r = record
        width = len(str(self.total))
        parts = [f"[{r['iteration']:>{width}}/{self.total}]",
                 f"loss {r['loss']:.3f} (v {r['value_loss']:.3f} p {r['policy_loss']:.3f})",
                 f"H {r['policy_entropy']:.2f}",
                 f"{r['positions_per_s']:,.0f} pos/s",
                 f"buf {100 * r['buffer_fill']:.0f}%",
                 f"sims {r['simulations']}",
                 *([f"schedule {100 * r['schedule_position']:.0f}%"] if r.get("schedule_position") is not None else []),
                 f"{format_duration(r['elapsed_s'])} elapsed, ETA {format_duration(eta)}"]
        evals = [f"{k[5:]} {v:.2f}" for k, v in r.items() if k.startswith("eval/") and v is not None]
        if evals:
            parts.append("eval: " + " ".join(evals))
        return " | ".join(parts)


# ---------------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------------
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loss", ("loss", "policy_loss", "value_loss")),
    ("policy", ("policy_entropy", "target_entropy", "policy_kl")),
    ("value error |v - z|", ("value_abs_error",)),
    ("positions / s", ("positions_per_s",)),
    ("learning rate", ("learning_rate",)),
    ("replay buffer fill", ("buffer_fill",)),
    ("6x6 test set: optimal moves", ("testset/optimal",)),
    ("6x6 test set: disc loss per move", ("testset/disc_loss",)),
)
DPI = 100  # the PNG's and the TensorBoard image's pixels per inch
# the x axes every panel is drawn against: (label, record -> x)
AXES = (("iteration", lambda r: r.get("iteration")),
        ("minutes of training", lambda r: r["elapsed_s"] / 60.0 if r.get("elapsed_s") is not None else None))


def plot(workdirs: Iterable[str | Path], out: str | Path) -> Path:
    """Draw the curves of one or more runs (labelled by directory name) into one PNG at ``out``."""
    import matplotlib.pyplot as plt

    fig = figure(workdirs)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(out, dpi=DPI)
    except ValueError as error:  # matplotlib: a file name ending in no image format it writes
        raise InputError(f"cannot draw {out}: {str(error).strip().splitlines()[0]}") from None
    finally:
        plt.close(fig)
    return out


def figure(workdirs: Iterable[str | Path]):
    """The curves as a matplotlib Figure: one row per panel, drawn against iterations (left) and
    minutes of training (right), so runs on machines of different speed compare by compute;
    panels with no data are left out, the learning rate has its own axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(Path(w).name or str(w), read_records(w)) for w in workdirs]
    eval_keys = sorted({k for _, rs in runs for r in rs for k in r if k.startswith("eval/")})
    panels = list(PANELS) + ([("evaluation score", tuple(eval_keys))] if eval_keys else [])
    panels = [(title, keys) for title, keys in panels
              if any(r.get(k) is not None for _, rs in runs for r in rs for k in keys)]
    fig, axes = plt.subplots(max(len(panels), 1), len(AXES), figsize=(6 * len(AXES), 3.2 * max(len(panels), 1)),
                             dpi=DPI, squeeze=False)
    for row, (title, keys) in enumerate(panels):
        for col, (x_label, x_of) in enumerate(AXES):
            ax = axes[row, col]
            for label, records in runs:
                for key in keys:
                    points = [(x_of(r), r[key]) for r in records if r.get(key) is not None and x_of(r) is not None]
                    if points:
                        xs, ys = zip(*points, strict=True)
                        name = key if len(runs) == 1 else f"{label}: {key}"
                        marker = "o" if key.startswith(("eval/", "testset/")) else None
                        ax.plot(xs, ys, marker=marker, markersize=3, label=name)
            ax.set_title(title)
            ax.set_xlabel(x_label)
            ax.grid(alpha=0.3)
            if key == "learning_rate":
                ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
            if ax.lines:
                ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
