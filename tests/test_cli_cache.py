"""The commands keep compiled programs between runs (``cli.compilation_cache_dir``): where, how it
is turned off, and that a command really writes there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from othello_jax import cli

REPO = Path(__file__).resolve().parents[1]


def test_the_cache_directory_follows_the_environment(tmp_path):
    assert cli.compilation_cache_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "othello-jax" / "xla"
    assert (tmp_path / ".cache" / "othello-jax" / "xla").is_dir()
    xdg = tmp_path / "xdg"
    assert cli.compilation_cache_dir({"XDG_CACHE_HOME": str(xdg), "HOME": str(tmp_path)}) == xdg / "othello-jax" / "xla"
    own = tmp_path / "own"
    assert cli.compilation_cache_dir({cli.CACHE_ENV: str(own), "HOME": str(tmp_path)}) == own
    assert cli.compilation_cache_dir({cli.CACHE_ENV: "off", "HOME": str(tmp_path)}) is None
    # jax's own variable wins: it reads it itself
    assert cli.compilation_cache_dir({"JAX_COMPILATION_CACHE_DIR": str(own), "HOME": str(tmp_path)}) is None
    # a file where the directory should be: no cache, no error
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    assert cli.compilation_cache_dir({cli.CACHE_ENV: str(blocked / "xla"), "HOME": str(tmp_path)}) is None


def test_a_command_writes_its_compiled_programs_there_and_off_writes_none(tmp_path):
    def run(cache_setting: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
        env.update(PYTHONPATH=str(REPO), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   XDG_CACHE_HOME=str(tmp_path / "xdg"), **{cli.CACHE_ENV: cache_setting})
        return subprocess.run([sys.executable, "-m", "othello_jax.cli", "eval", "--size=4", "--black=random",
                               "--white=greedy", "--games=2"], capture_output=True, text=True, env=env, timeout=600)

    assert run("off").returncode == 0
    assert not (tmp_path / "xdg").exists()
    assert run("").returncode == 0
    assert any((tmp_path / "xdg" / "othello-jax" / "xla").iterdir())
