"""Portable network files and the networks shipped in the package (issue 16, item 4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from othello_jax import pretrained
from othello_jax.agents import parse_agent
from othello_jax.checkpoint import CheckpointError, load_agent_variables
from othello_jax.commands import export_network
from othello_jax.evaluation.arena import match_openings, play_match
from othello_jax.game import Othello, play_transcript, square_name
from tests.conftest import slow_unless
from tests.tiny_checkpoint import save_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]


def test_export_round_trip_equals_the_orbax_checkpoint(tmp_path, capsys):
    """export-network writes one file whose variables, config and size equal the checkpoint's."""
    checkpoint = save_tiny_checkpoint(tmp_path / "run", board_size=6, seed=3)
    out = tmp_path / "tiny.msgpack"
    assert export_network.main([f"--checkpoint={checkpoint}", f"--out={out}", "--command=made by a test"]) == 0
    assert "wrote" in capsys.readouterr().out
    config, variables, size = load_agent_variables(checkpoint)
    config2, variables2, size2 = load_agent_variables(out)
    assert (config2, size2) == (config, size) == (config, 6)
    flat, flat2 = jax.tree.leaves_with_path(variables), jax.tree.leaves_with_path(variables2)
    assert [p for p, _ in flat] == [p for p, _ in flat2] and len(flat) > 4
    for (_, a), (_, b) in zip(flat, flat2, strict=True):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))
    meta = pretrained.read_meta(out)
    assert meta["provenance"]["command"] == "made by a test" and meta["board_size"] == 6


def test_bad_network_files_give_one_line_errors(tmp_path, capsys):
    garbage = tmp_path / "garbage.msgpack"
    garbage.write_bytes(b"\x00not msgpack at all")
    for reference, message in [("builtin:9x9", "no built-in network '9x9'; shipped: 6x6, 8x8, 8x8-expert, 8x8-large"),
                               (tmp_path / "missing.msgpack", "does not exist"),
                               (garbage, "is not a portable network file")]:
        with pytest.raises(CheckpointError, match=message) as raised:
            load_agent_variables(reference)
        assert "\n" not in str(raised.value)
    checkpoint = save_tiny_checkpoint(tmp_path / "run", board_size=4)
    assert export_network.main([f"--checkpoint={checkpoint}", f"--out={tmp_path / 'x.npz'}"]) == 2
    assert export_network.main(["--checkpoint=/no/such/run", f"--out={tmp_path / 'x.msgpack'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"othello-jax export-network: error: --out must end in .msgpack, got '{tmp_path / 'x.npz'}'",
                   "othello-jax export-network: error: checkpoint path /no/such/run does not exist; pass a training "
                   "workdir, WORKDIR/best, a .msgpack file or builtin:6x6|8x8|8x8-expert|8x8-large"]
    assert not (tmp_path / "x.msgpack").exists()


SHIPPED = [("6x6", 6), ("8x8", 8), ("8x8-expert", 8), ("8x8-large", 8)]
# CI runs the two networks the README plays; the other two only with -m "" (the same code, other weights)
SHIPPED_PARAMS = slow_unless(SHIPPED, lambda name, size: name in ("6x6", "8x8-expert"))


def _score_against_greedy(name: str, size: int, spec_options: str) -> object:
    """The summary of 40 games (20 openings, both colours) of ``builtin:NAME`` against greedy."""
    assert name in pretrained.builtin_names()
    assert pretrained.resolve(f"builtin:{name}").parent == Path(pretrained.__file__).parent
    assert pretrained.read_meta(f"builtin:{name}")["board_size"] == size
    game = Othello(size)
    network = parse_agent(f"net:ckpt=builtin:{name},{spec_options}", game)
    greedy = parse_agent("greedy", game)
    openings_key, play_key = jax.random.split(jax.random.key(5))
    summary = play_match(game, network, greedy, match_openings(game, 40, openings_key), play_key).summary()
    assert summary.games == 40
    return summary


@pytest.mark.parametrize("name, size", SHIPPED_PARAMS)
def test_the_shipped_networks_alone_beat_greedy(name, size):
    """builtin:6x6, 8x8, 8x8-expert and 8x8-large load from the package (no training) and their
    raw policy (the most likely move, no search, no solver) beats greedy: 0.75-0.90 on 8x8
    (2026-12-02). One compiled network call a ply, so CI can afford all four."""
    summary = _score_against_greedy(name, size, "sims=0,solve=0")
    assert summary.score >= 0.65, summary


@pytest.mark.slow  # an 8x8 search match compiles for 3 minutes on a 2-core CI machine: 9 of CI's 30 minutes
@pytest.mark.parametrize("name, size", SHIPPED)
def test_the_shipped_networks_beat_greedy(name, size):
    """With a 16-simulation search (and the endgame solver) each wins clearly against greedy."""
    summary = _score_against_greedy(name, size, "sims=16")
    # 8x8 at 128 simulations, 200 games: 0.995 (the 2-hour run shipped 2026-11-28), 8x8-large 0.990
    assert summary.score >= 0.8, summary


def test_play_command_with_the_builtin_network(tmp_path):
    """`othello-jax play --checkpoint=builtin:6x6` plays a whole game without training: every
    square (then pass) is typed in turn, so each turn plays the first legal one."""
    squares = [square_name(a, 6) for a in range(36)] + ["pass"]
    result = subprocess.run(
        [sys.executable, "-m", "othello_jax.cli", "play", "--checkpoint=builtin:6x6", "--sims=8", "--color=white"],
        input="\n".join(["hint"] + squares * 20) + "\n", capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr[-2000:]
    record = re.search(r"^record: (\S+)$", result.stdout, re.M).group(1)
    final, _ = play_transcript(record, Othello(6))
    assert bool(final.terminal)
    assert "black (network, 8 sims,solve=22,solver=c,proof) plays" in result.stdout  # the endgame solved by default
    assert "proved: white wins by 4 (the move follows the shipped proof)" in result.stdout  # the opening proved
    assert "after 8 simulations" in result.stdout
    assert "perfect play: the exact endgame solver chose this move" in result.stdout
