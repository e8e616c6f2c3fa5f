"""Keep a copy of a training workdir somewhere durable (Google Drive in Colab) and get it back.

Training writes to a fast local workdir; :func:`sync` copies what changed to the mirror
(skipping checkpoints still being written, and removing checkpoints the run has since deleted),
and :func:`restore` fills an empty local workdir from the mirror so a recycled runtime resumes
where it stopped. :func:`checkpoint_hook` syncs after every checkpoint the training loop writes
(``loop.run(..., on_checkpoint=checkpoint_hook(workdir, mirror))``), including the one written
when a signal stops the run.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

CHECKPOINT_DIRS = ("checkpoints", "best")
_TEMPORARY = "orbax-checkpoint-tmp"  # orbax writes here first, then renames


def _files(root: Path) -> dict[Path, Path]:
    """Relative path -> absolute path of every finished file under ``root``."""
    if not root.is_dir():
        return {}
    return {path.relative_to(root): path for path in root.rglob("*")
            if path.is_file() and not any(_TEMPORARY in part for part in path.relative_to(root).parts)}


def _copy_changed(source: Path, target: Path) -> int:
    copied = 0
    for relative, path in _files(source).items():
        destination = target / relative
        stat = path.stat()
        if destination.exists() and destination.stat().st_size == stat.st_size \
                and destination.stat().st_mtime >= stat.st_mtime:
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
        copied += 1
    return copied


def sync(workdir: str | Path, mirror: str | Path) -> int:
    """Copy new or changed files of ``workdir`` to ``mirror``; drop checkpoint steps that the
    workdir no longer has. Returns the number of files copied."""
    workdir, mirror = Path(workdir), Path(mirror)
    copied = _copy_changed(workdir, mirror)
    for name in CHECKPOINT_DIRS:
        if not (mirror / name).is_dir():
            continue
        for step in (mirror / name).iterdir():
            if step.is_dir() and step.name.isdigit() and not (workdir / name / step.name).exists():
                shutil.rmtree(step)
    return copied


def restore(mirror: str | Path, workdir: str | Path) -> bool:
    """Copy the mirror into ``workdir`` when the workdir has no checkpoint yet; True if it did."""
    mirror, workdir = Path(mirror), Path(workdir)
    has_steps = lambda root: any(p.is_dir() and p.name.isdigit() for p in (root / "checkpoints").glob("*"))
    if has_steps(workdir) or not has_steps(mirror):
        return False
    _copy_changed(mirror, workdir)
    return True


def checkpoint_hook(workdir: str | Path, mirror: str | Path,
                    print_fn: Callable[[str], None] | None = None) -> Callable[[int], None]:
    """An ``on_checkpoint(iteration)`` for the training loop that syncs ``workdir`` to ``mirror``."""

    def hook(iteration: int) -> None:
        copied = sync(workdir, mirror)
        if print_fn is not None:
            print_fn(f"checkpoint {iteration} mirrored to {mirror} ({copied} files copied)")

    return hook
