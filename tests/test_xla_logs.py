"""XLA's C++ log lines stay off a command's terminal (issue 64, item 3): the `Very slow compile?`
banner a long compile prints after 2 minutes comes from XLA's slow_operation_alarm.cc at ERROR,
as does its constant-folding alarm, which a small program fires in a few seconds; the CLI sets
TF_CPP_MIN_LOG_LEVEL=3 before jax loads unless the user set it or asked for --debug."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from othello_jax import cli

REPO = Path(__file__).resolve().parents[1]
ALARM = "slow_operation_alarm"

# a command whose program makes XLA fold a scatter of 500,000 constant updates (about 3 s on a
# 2-core CPU): XLA's constant-folding alarm fires after 1 s
_ALARM_COMMAND = '''
import sys
from othello_jax import cli

def main(argv):
    import jax
    import jax.numpy as jnp
    import numpy as np

    where = (np.arange(500_000) % 1000).astype(np.int32)
    program = jax.jit(lambda: jnp.zeros(1000).at[where].add(1.0))
    print(float(program()[0]))
    return 0

cli.COMMANDS["fold"] = ("__main__", "fold a constant")
sys.exit(cli.main(sys.argv[1:]))
'''


def test_the_cli_quiets_xla_unless_the_user_chose_or_debugs():
    environ: dict[str, str] = {}
    cli.quiet_xla_logs(environ, debug=False)
    assert environ == {"TF_CPP_MIN_LOG_LEVEL": "3"}
    chosen = {"TF_CPP_MIN_LOG_LEVEL": "0"}
    cli.quiet_xla_logs(chosen, debug=False)
    assert chosen == {"TF_CPP_MIN_LOG_LEVEL": "0"}
    debugging: dict[str, str] = {}
    cli.quiet_xla_logs(debugging, debug=True)
    assert debugging == {}


def _fold(*extra: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("TF_CPP_MIN_LOG_LEVEL", "JAX_COMPILATION_CACHE_DIR", "OTHELLO_JAX_DEBUG")}
    # compiled afresh each time (no cache), with XLA's passes on (the tests' conftest turns most off)
    environ.update(PYTHONPATH=str(REPO), OTHELLO_JAX_XLA_CACHE="off", JAX_DISABLE_MOST_OPTIMIZATIONS="0", **env)
    return subprocess.run([sys.executable, "-c", _ALARM_COMMAND, "fold", *extra], env=environ, cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_xlas_alarm_lines_stay_off_the_terminal_and_debug_shows_them():
    debugged = _fold("--debug")
    assert debugged.returncode == 0 and debugged.stdout == "500.0\n", debugged.stderr[-2000:]
    if ALARM not in debugged.stderr:
        pytest.skip("XLA folded the constant in under a second here: its alarm never fired")
    quiet = _fold()
    assert quiet.returncode == 0 and quiet.stdout == "500.0\n", quiet.stderr[-2000:]
    assert quiet.stderr == "", quiet.stderr[-2000:]
