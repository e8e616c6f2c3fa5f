"""A freshly initialised tiny network saved as a checkpoint, for tests of play/engine/analyze."""

from __future__ import annotations

from pathlib import Path

import jax

from othello_jax.checkpoint import Checkpoints, network_meta
from othello_jax.model import NetworkConfig, init_variables, make_network


def save_tiny_checkpoint(workdir: Path, board_size: int = 4, seed: int = 0) -> Path:
    """Save an untrained "tiny" network under ``workdir/best``; returns that path."""
    config = NetworkConfig.preset("tiny")
    variables = init_variables(make_network(board_size, config), jax.random.PRNGKey(seed), board_size)
    checkpoints = Checkpoints(workdir, keep=1, async_save=False)
    checkpoints.save_best(0, variables, {"board_size": board_size, "network": network_meta(config)})
    checkpoints.close()
    return Path(workdir) / "best"
