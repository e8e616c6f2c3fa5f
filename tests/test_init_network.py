"""``init_network``: a fresh training run starts from a trained network (a workdir, a supervised
run, a portable file, a builtin) with a fresh optimizer and an empty buffer; a resumed run keeps
its checkpoint; a network of another shape or board is a one-line error (exit 2) before the
workdir gets a checkpoint or a config."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from othello_jax.checkpoint import load_agent_variables, saved_steps
from othello_jax.training.compiled import iteration as train
from othello_jax.training.runner import loop
from othello_jax.training.runner.program import make_train
from tests.conftest import tiny_config


@pytest.fixture(scope="module")
def trained_workdir(tmp_path_factory):
    """A tiny 4x4 run of two iterations: the network to start from."""
    workdir = tmp_path_factory.mktemp("init") / "trained"
    loop.run(tiny_config(iterations=2), workdir, print_fn=lambda _: None)
    return workdir


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def test_a_fresh_start_holds_the_given_network_a_fresh_optimizer_and_an_empty_buffer(trained_workdir):
    _, saved, _ = load_agent_variables(trained_workdir)
    program = make_train(tiny_config(init_network=str(trained_workdir)), train.make_mesh(1))
    state, _ = program.start(0, program.initial_network())
    random_state, _ = make_train(tiny_config(), train.make_mesh(1)).start(0)

    for name in ("params", "batch_stats"):
        got, expected = _leaves(getattr(state, name)), _leaves(saved[name])
        random = _leaves(getattr(random_state, name))
        assert len(got) == len(expected) > 0
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
        assert any(not np.array_equal(a, r) for a, r in zip(got, random, strict=True))  # not what a random start holds
    for a, b in zip(_leaves(state.actor["params"]), _leaves(saved["params"]), strict=True):
        np.testing.assert_array_equal(a, b)  # self-play plays the given network from the first game
    # the optimizer, the counters and the buffer are a fresh run's
    for a, b in zip(_leaves(state.opt_state), _leaves(random_state.opt_state), strict=True):
        assert a.shape == b.shape
    assert all(not np.any(x) for x in _leaves(state.opt_state) if x.dtype.kind == "f")  # zero moments
    assert int(state.iteration) == int(state.step) == 0
    assert not np.any(np.asarray(state.buffer.data.mask))


def test_a_run_trains_from_it_and_resumes_from_its_own_checkpoint(trained_workdir, tmp_path):
    workdir, lines = tmp_path / "run", []
    loop.run(tiny_config(iterations=1, init_network=str(trained_workdir)), workdir, print_fn=lines.append)
    assert f"starting from the network in {trained_workdir} (init_network)" in lines
    _, after_one, _ = load_agent_variables(workdir)

    # resumed: the checkpoint wins, and init_network is not read again (here it names nothing)
    lines = []
    loop.run(tiny_config(iterations=2, init_network=str(tmp_path / "gone")), workdir, print_fn=lines.append)
    assert any(line.startswith(f"resumed {workdir} at iteration 1") for line in lines), lines
    assert not any("init_network" in line for line in lines)
    _, after_two, _ = load_agent_variables(workdir)
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(after_one), _leaves(after_two), strict=True))


@pytest.mark.parametrize("override, fragment", [
    (("--config.network.channels=32",), "channels 16 vs 32"),
    (("--config.board_size=6", "--config.selfplay.temperature_plies=4"), "is a 4x4 network; this run is 6x6"),
])
def test_another_network_is_a_one_line_error_and_the_workdir_gets_nothing(trained_workdir, tmp_path, capsys,
                                                                          override, fragment):
    from othello_jax.commands import train as train_command

    workdir = tmp_path / "run"
    code = train_command.main(["--config=experiments/configs/tiny_test.py", f"--workdir={workdir}",
                               f"--config.init_network={trained_workdir}", *override])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "init_network" in err and fragment in err, err
    assert not saved_steps(workdir / "checkpoints") and not (workdir / "config.json").exists()


def test_a_missing_network_is_a_one_line_error(tmp_path, capsys):
    from othello_jax.commands import train as train_command

    code = train_command.main(["--config=experiments/configs/tiny_test.py", f"--workdir={tmp_path / 'run'}",
                               f"--config.init_network={tmp_path / 'nowhere'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "does not exist" in err, err
