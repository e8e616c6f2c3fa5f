"""Storage faults: an unwritable or full workdir is a one-line error, before training or at the save,
and the checkpoints written before it stay intact.

Tests run as root, where chmod does not make a directory read-only, so the faults are injected:
the workdir probe's fsync and orbax's file writer (``etils.epath.Path.write_text``) raise the
``OSError`` a full or read-only disk raises. Each test checks that its fault actually fired.
"""

from __future__ import annotations

import errno
import os

import jax
import numpy as np
import pytest
from etils import epath

from othello_jax import checkpoint
from othello_jax.commands import train as train_command
from othello_jax.training.runner.program import make_train

TINY = "--config=experiments/configs/tiny_test.py"


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_unwritable_workdir_is_one_line_before_anything_is_trained(tmp_path, monkeypatch, capsys, code):
    fired = []

    def failing_fsync(fd: int) -> None:
        fired.append(fd)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    workdir = tmp_path / "run"
    assert train_command.main([TINY, f"--workdir={workdir}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert fired, "the injected fault never fired"
    assert line.startswith(f"othello-jax train: error: workdir {workdir} is not writable (OSError: [Errno {code}]")
    assert os.strerror(code) in line and "nothing was trained" in line
    assert sorted(p.name for p in workdir.iterdir()) == []  # no config, no metrics, no checkpoint


def test_full_disk_at_a_save_is_one_line_and_earlier_checkpoints_stay_intact(tmp_path, monkeypatch, capsys):
    workdir = tmp_path / "run"
    fired = []
    write_text = epath.Path.write_text

    def full_disk(self, *args, **kwargs):
        if "checkpoints/3.orbax-checkpoint-tmp" in str(self):  # the third save, after its arrays are written
            fired.append(str(self))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(epath.Path, "write_text", full_disk)
    argv = [TINY, f"--workdir={workdir}", "--config.iterations=5", "--config.checkpoint.every=1"]
    assert train_command.main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert fired, "the injected fault never fired"
    assert line.startswith(f"othello-jax train: error: saving a checkpoint in {workdir / 'checkpoints'} failed "
                           "(OSError: [Errno 28] No space left on device"), line
    assert "checkpoints [1, 2] on disk are intact" in line, line
    monkeypatch.undo()

    # the earlier checkpoints restore; reopening the run removes the unfinished one
    config = train_command.parse(argv)[0]
    program = make_train(config)
    leftover = workdir / "checkpoints" / "4.orbax-checkpoint-tmp"  # as a save killed mid-way leaves it
    (leftover / "train").mkdir(parents=True, exist_ok=True)
    ckpts = checkpoint.Checkpoints(workdir, keep=3)
    assert not leftover.exists()
    assert ckpts.steps() == [1, 2]
    template = program.init_state(jax.random.PRNGKey(0))
    for step in (1, 2):
        state, _, meta = ckpts.restore(template, jax.random.PRNGKey(0), program.meta(), step=step)
        assert int(state.iteration) == step == meta["iteration"]
        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(state.params))
    ckpts.close()
    assert checkpoint.load_agent_variables(workdir)[1]["params"]
