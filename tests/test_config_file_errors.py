"""A --config file that defines no config (issue 64, item 2b): a file that does not parse, raises
while it loads, has no get_config(), or whose get_config() fails or returns no ConfigDict, and a
file that is not there, are bad input: exit 2, one line naming the file (and its line where there
is one), decided before the workdir is made (no directory, no errors.log)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from othello_jax import cli
from othello_jax.commands.configs import load_config_file

REPO = Path(__file__).resolve().parents[1]

# file name -> (its text, what the one line says after "config file PATH ")
BAD_FILES = {
    "syntax.py": ("def get_config():\n    return 1\nx = = 2\n", "does not parse: line 3: invalid syntax"),
    "raises.py": ("import math\n\nvalue = 1 / 0\n", "fails while loading: line 3: ZeroDivisionError: division by zero"),
    "missing_import.py": ("import no_such_module_xyz\n",
                          "fails while loading: line 1: ModuleNotFoundError: No module named 'no_such_module_xyz'"),
    "no_get_config.py": ("x = 1\n", "defines no get_config(); a config file is a Python file whose get_config() "
                                    "returns an ml_collections ConfigDict"),
    "returns_none.py": ("def get_config():\n    pass\n",
                        ": get_config() returned NoneType, not an ml_collections ConfigDict"),
    "get_config_raises.py": ("def get_config():\n    return {}['board']\n",
                             ": get_config() failed: line 2: KeyError: 'board'"),
}


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_text(BAD_FILES[name][0])
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_config_file_that_defines_no_config_is_one_line_exit_2_and_nothing_made(tmp_path, capsys, name):
    path, workdir = _write(tmp_path, name), tmp_path / "run"
    assert cli.main(["train", f"--config={path}", f"--workdir={workdir}"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == f"othello-jax train: error: config file {path}{'' if BAD_FILES[name][1][0] == ':' else ' '}" \
                   f"{BAD_FILES[name][1]}", line
    assert not workdir.exists()


def test_a_config_file_that_is_not_there_is_one_line_exit_2(tmp_path, capsys):
    workdir = tmp_path / "run"
    assert cli.main(["train", f"--config={tmp_path / 'nothere.py'}", f"--workdir={workdir}"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"othello-jax train: error: config file '{tmp_path / 'nothere.py'}' not found; "), line
    assert not workdir.exists()


def test_a_good_config_file_with_an_argument_loads():
    config = load_config_file(f"{REPO / 'experiments/configs/supervised.py'}:test")
    assert config.total_steps == 20
    assert load_config_file(str(REPO / "experiments/configs/tiny_test.py")).board_size == 4


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OTHELLO_JAX_DEBUG", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_readme_as_a_config_is_one_line_through_the_real_cli(tmp_path):
    """The new user's case: `othello-jax train --config=README.md` printed "internal error" and made the workdir."""
    workdir = tmp_path / "run"
    done = _run(["-m", "othello_jax.cli", "train", "--config=README.md", f"--workdir={workdir}"], REPO)
    line = _one_line(done.stderr)
    assert done.returncode == 2 and line.startswith("othello-jax train: error: config file README.md does not "
                                                    "parse: line "), done.stderr
    assert not workdir.exists()


def test_train_supervised_refuses_a_config_file_that_defines_no_config(tmp_path):
    path = _write(tmp_path, "syntax.py")
    done = _run(["-m", "experiments.train_supervised", f"--config={path}:cpu", f"--workdir={tmp_path / 'run'}"],
                tmp_path)
    assert done.returncode == 2, done.stderr
    assert _one_line(done.stderr) == f"train_supervised: config file {path} does not parse: line 3: invalid syntax"
    assert not (tmp_path / "run").exists()
