"""Training metrics: one JSON line per iteration (the source of truth), console progress, PNG curves.

``WORKDIR/metrics.jsonl`` holds one object per iteration (``iteration``, losses, entropies,
throughput, buffer fill, learning rate, simulations, and ``eval/...`` results when an
evaluation ran). :func:`plot` draws the curves of one or several runs side by side.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path

METRICS_FILE = "metrics.jsonl"


def _jsonable(value):
    """Python scalars for numpy/jax scalars; NaN/inf become None (JSON has no such numbers)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLog:
    """Append-only JSON-lines log in a workdir; on resume, lines past the checkpoint are dropped."""

    def __init__(self, workdir: str | Path):
        self.path = Path(workdir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def truncate_after(self, iteration: int) -> None:
        """Forget records of iterations after ``iteration`` (they will be trained again)."""
        if not self.path.exists():
            return
        kept = [r for r in read_records(self.path) if int(r.get("iteration", 0)) <= iteration]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict) -> None:
        line = json.dumps({k: _jsonable(v) for k, v in record.items()})
        with self.path.open("a") as f:
            f.write(line + "\n")


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
    ("buffer fill / learning rate", ("buffer_fill", "learning_rate")),
)


def plot(workdirs: Iterable[str | Path], out: str | Path) -> Path:
    """Draw the curves of one or more runs (labelled by directory name) into one PNG at ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(Path(w).name or str(w), read_records(w)) for w in workdirs]
    eval_keys = sorted({k for _, rs in runs for r in rs for k in r if k.startswith("eval/")})
    panels = list(PANELS) + ([("evaluation score", tuple(eval_keys))] if eval_keys else [])
    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, (title, keys) in zip(axes.flat, panels, strict=False):
        for label, records in runs:
            for key in keys:
                points = [(r["iteration"], r[key]) for r in records if r.get(key) is not None]
                if points:
                    xs, ys = zip(*points, strict=False)
                    name = key if len(runs) == 1 else f"{label}: {key}"
                    ax.plot(xs, ys, marker="o" if key.startswith("eval/") else None, markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
