"""A checkpoint that cannot be read, given to any command that loads one: exit 2, exactly one line
on stderr (what the path is, that it is no readable checkpoint, the forms accepted), no
traceback and no "Event loop is closed" noise from orbax's restore threads, and the files given
stay exactly as they were.

The bad checkpoints: a run whose checkpoint files are truncated (orbax starts reading, one read
fails while others are in flight: the case that printed a dozen asyncio tracebacks), a file of
random bytes, a msgpack file of something else, an empty directory, and a network file whose
variables are of another board size than its meta says. Every command meets every one in
process (cli.main: exit status, one line, files unchanged); the truncated run, whose noise came
from background threads and at interpreter exit, also through the real CLI, one subprocess per
command, and `play` meets every case as a subprocess. A valid network of the wrong board size
for the command is a one-line error too.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from othello_jax import cli, pretrained
from othello_jax.checkpoint import load_agent_variables
from tests.conftest import slow_unless
from tests.tiny_checkpoint import save_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]
FORMS = "pass a training workdir, WORKDIR/best, a .msgpack file or builtin:"
NOISE = ("Traceback", "Event loop is closed", "RuntimeError", "ERROR:absl", "Failed to json parse")


def _truncate_run(run: Path) -> None:
    """Cut the files holding the network's arrays (tensorstore's data and manifests) to half their
    length, as a copy interrupted by a full disk leaves them; the JSON metadata stays whole, so
    orbax starts many reads and one fails while the others are in flight."""
    for path in sorted(run.rglob("*")):
        if path.is_file() and "variables" in path.relative_to(run).parts and (
                path.parent.name == "d" or path.name == "manifest.ocdbt"):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _truncate_metadata(run: Path, only: str | None = None) -> None:
    """Cut orbax's JSON metadata files (``_CHECKPOINT_METADATA``, ``_METADATA``, ``_sharding``, the
    meta item, ...; ``only``: the files of that name) to half their length: orbax logs "Failed to
    json parse Metadata file" through absl for each one it reads."""
    for path in sorted(run.rglob("*")):
        if path.is_file() and (path.name == only if only else path.read_bytes()[:1] == b"{"):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> dict[str, Path]:
    """The bad checkpoints by case name (see the module docstring)."""
    root = tmp_path_factory.mktemp("bad-checkpoints")
    good = save_tiny_checkpoint(root / "good", board_size=4).parent
    truncated = root / "truncated-run"
    shutil.copytree(good, truncated)
    _truncate_run(truncated)
    metadata = root / "truncated-metadata"
    shutil.copytree(good, metadata)
    _truncate_metadata(metadata)
    garbage = root / "model.ckpt"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    from flax import serialization

    foreign = root / "foreign.msgpack"
    foreign.write_bytes(serialization.msgpack_serialize({"weights": np.zeros(3, np.float32), "name": "resnet"}))
    (root / "empty").mkdir()
    config, variables, _ = load_agent_variables(good)
    wrong_board = pretrained.save(root / "says-6x6.msgpack", config, variables, 6)  # 4x4 arrays, meta 6x6
    return {"truncated": truncated, "garbage file": garbage, "foreign msgpack": foreign,
            "empty directory": root / "empty", "wrong architecture": wrong_board, "truncated metadata": metadata}


def command_lines(checkpoint: Path, scratch: Path) -> dict[str, list[str]]:
    """Every command that loads a checkpoint, given ``checkpoint`` where it takes one."""
    return {
        "play": ["play", f"--checkpoint={checkpoint}", "--sims=2"],
        "engine": ["engine", f"--checkpoint={checkpoint}", "--sims=2"],
        "analyze": ["analyze", f"--checkpoint={checkpoint}", "--sims=2"],
        "eval": ["eval", f"--black=net:ckpt={checkpoint},sims=2", "--white=random", "--games=2", "--size=4"],
        "accuracy": ["accuracy", f"--checkpoint={checkpoint}", f"--wthor={scratch}"],
        "testset": ["testset", f"--checkpoint={checkpoint}", "--sims=2"],
        "endgame-accuracy": ["endgame-accuracy", f"--checkpoint={checkpoint}", "--games=1", "--sims=2"],
        "export-network": ["export-network", f"--checkpoint={checkpoint}", f"--out={scratch / 'out.msgpack'}"],
        "train": ["train", "--config=tiny_test", f"--workdir={scratch / 'run'}", f"--config.init_network={checkpoint}"],
    }


COMMANDS = list(command_lines(Path("x"), Path("y")))
# Through a real interpreter (what prints at its exit shows too) CI runs three commands that read a
# checkpoint each their own way (a player, a match's spec, training's init_network); the in-process
# test above runs every command on every damage; the other six real-CLI runs only with -m ""
REAL_CLI = slow_unless([(command,) for command in COMMANDS], lambda command: command in ("play", "eval", "train"))


def digest(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or the file itself) by relative name, with its content's hash."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(f.relative_to(path.parent)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def check_one_line(command: str, code: int, err: str, checkpoint: Path, scratch: Path) -> None:
    lines = err.strip().splitlines()
    assert code == 2, (command, code, err[-3000:])
    assert len(lines) == 1, (command, lines)
    assert not any(noise in err for noise in NOISE), err
    assert lines[0].startswith(f"othello-jax {command}: error: ") and str(checkpoint) in lines[0], lines
    assert FORMS in lines[0] and len(lines[0]) < 400, lines[0]
    assert not (scratch / "out.msgpack").exists()  # export-network wrote nothing
    assert not list((scratch / "run").rglob("*/[0-9]*"))  # train saved no checkpoint


@pytest.mark.parametrize("case", ["truncated", "garbage file", "foreign msgpack", "empty directory",
                                  "wrong architecture"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_bad_checkpoint_in_one_line(bad, case, command, tmp_path, capsys, monkeypatch):
    checkpoint = bad[case]
    before = digest(checkpoint)
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    code = cli.main(command_lines(checkpoint, tmp_path)[command])
    check_one_line(command, code, capsys.readouterr().err, checkpoint, tmp_path)
    assert digest(checkpoint) == before  # loses nothing


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`othello-jax ARGS` as users run it: its own interpreter, so noise at exit shows too."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OTHELLO_JAX_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "othello_jax.cli", *args], cwd=cwd, env=env, input="quit\n",
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("command", REAL_CLI)
def test_a_truncated_run_is_one_line_through_the_real_cli(bad, command, tmp_path):
    checkpoint = bad["truncated"]
    before = digest(checkpoint)
    done = run_cli(command_lines(checkpoint, tmp_path)[command], tmp_path)
    check_one_line(command, done.returncode, done.stderr, checkpoint, tmp_path)
    assert "is not a readable othello-jax checkpoint (best/0 is damaged: " in done.stderr
    assert digest(checkpoint) == before


@pytest.mark.parametrize("case", ["garbage file", "foreign msgpack", "empty directory", "wrong architecture",
                                  "truncated metadata"])
def test_play_refuses_every_bad_checkpoint_through_the_real_cli(bad, case, tmp_path):
    checkpoint = bad[case]
    before = digest(checkpoint)
    done = run_cli(command_lines(checkpoint, tmp_path)["play"], tmp_path)
    check_one_line("play", done.returncode, done.stderr, checkpoint, tmp_path)
    assert digest(checkpoint) == before
    assert done.stdout == ""  # no board drawn, no game started


@pytest.mark.parametrize("command, extra, fragment", [
    ("play", ["--size=6"], "the checkpoint plays 4x4, not --size=6"),
    ("testset", [], "the checkpoint plays 4x4; the test set is 6x6"),
    ("accuracy", [], "holds a 4x4 network; expert games are 8x8"),
    ("train", ["--config.board_size=6"], "is a 4x4 network; this run is 6x6"),
])
def test_a_network_of_another_board_size_is_one_line(bad, command, extra, fragment, tmp_path, capsys, monkeypatch):
    """A readable network, but the command (or run) needs another board size."""
    network = bad["wrong architecture"].with_name("tiny-4x4.msgpack")
    if not network.exists():
        config, variables, _ = load_agent_variables(bad["truncated"].parent / "good")
        pretrained.save(network, config, variables, 4)
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    code = cli.main(command_lines(network, tmp_path)[command] + extra)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and fragment in lines[0], lines
    assert lines[0].startswith(f"othello-jax {command}: error: ")


def test_a_workdir_with_only_a_best_network_loads_it(bad):
    """A workdir whose checkpoints/ is empty (a run that kept only its best network) plays that one."""
    good = bad["truncated"].parent / "good"
    assert not list((good / "checkpoints").iterdir()) and (good / "best" / "0").is_dir()
    _, variables, size = load_agent_variables(good)
    assert size == 4 and variables["params"]


def test_abandoned_reads_of_a_failed_restore_print_nothing_after_the_one_line_error():
    """A failed restore leaves tensorstore reads whose futures fail unobserved; asyncio would report
    each ("Future exception was never retrieved") on stderr after the command's one line."""
    import subprocess
    import sys

    code = ("import asyncio, gc\nfrom othello_jax import checkpoint\ncheckpoint._quiet_orbax()\n"
            "loop = asyncio.new_event_loop()\nf = loop.create_future(); f.set_exception(ValueError('read'))\n"
            "del f; gc.collect()\nimport logging; logging.getLogger('asyncio').error('another asyncio error')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == ["ERROR:asyncio:another asyncio error"]  # only the read is dropped


_READ_AROUND_DAMAGE = """
import sys
import jax.numpy as jnp
from othello_jax.checkpoint import Checkpoints, load_agent_variables
run, variables = sys.argv[1], {"params": {"w": jnp.ones(3)}, "batch_stats": {}}
if sys.argv[2] == "save":
    saving = Checkpoints(run, keep=2, async_save=False)
    saving.save_parts(1, variables, {"rng": jnp.zeros(2)}, {"board_size": 4})
    saving.close()
    sys.exit(0)
reading = Checkpoints(run, keep=2, async_save=False)
assert reading.read_meta(1)["board_size"] == 4
_, train = reading.restore_parts(1, variables, {"rng": jnp.zeros(2)})
assert train["rng"].shape == (2,)
reading.close()
assert load_agent_variables(sys.argv[3])[2] == 4
print("read")
"""


def test_a_damaged_optional_metadata_file_reads_with_nothing_on_the_terminal(bad, tmp_path):
    """orbax reads around a truncated ``_CHECKPOINT_METADATA``; it logged "ERROR:absl:Failed to json
    parse Metadata file" for each read (a resumed run, a loaded network) although nothing failed."""
    network = tmp_path / "network"
    shutil.copytree(bad["truncated"].parent / "good", network)
    _truncate_metadata(network, only="_CHECKPOINT_METADATA")
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    saved = subprocess.run([sys.executable, "-c", _READ_AROUND_DAMAGE, str(run), "save"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert saved.returncode == 0, saved.stderr[-2000:]
    _truncate_metadata(run, only="_CHECKPOINT_METADATA")
    done = subprocess.run([sys.executable, "-c", _READ_AROUND_DAMAGE, str(run), "read", str(network)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "read\n", done.stderr[-3000:]
    assert done.stderr == "", done.stderr[-3000:]
