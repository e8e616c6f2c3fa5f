"""The AlphaZero network: a residual tower with a policy head and a tanh value head (flax.linen).

Input is the canonical observation ``(..., N, N, 2)`` from ``Othello.observation``; output is
``(policy_logits[..., N*N+1], value[...])`` with value in (-1, 1) from the mover's view.
Batch norm statistics live in the ``batch_stats`` collection: call with ``train=True`` and
``mutable=["batch_stats"]`` while learning, ``train=False`` for inference.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

PRESETS: dict[str, tuple[int, int]] = {
    # name: (residual blocks, channels)
    "tiny": (1, 16),
    "small": (6, 64),
    "standard": (6, 128),
    "large": (10, 128),
}


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Shape and precision of the network; hashable so it can be static under jit."""

    blocks: int = 6
    channels: int = 64
    value_hidden: int = 64
    dtype: str = "float32"  # activations/matmuls: "float32" or "bfloat16"

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> NetworkConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown network preset {name!r}; choose from {', '.join(PRESETS)}")
        blocks, channels = PRESETS[name]
        return cls(blocks=blocks, channels=channels, **overrides)


class ResidualBlock(nn.Module):
    channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        conv = lambda: nn.Conv(self.channels, (3, 3), use_bias=False, dtype=self.dtype)
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)
        y = nn.relu(norm()(conv()(x)))
        y = norm()(conv()(y))
        return nn.relu(x + y)


class AlphaZeroNet(nn.Module):
    """Stem conv -> residual tower -> (policy logits over N*N+1 actions, tanh value)."""

    num_actions: int
    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, obs: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        dtype = jnp.dtype(self.config.dtype)
        c = self.config.channels
        x = obs.astype(dtype)
        x = nn.Conv(c, (3, 3), use_bias=False, dtype=dtype)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(x))
        for _ in range(self.config.blocks):
            x = ResidualBlock(c, dtype)(x, train)
        batch = x.shape[:-3]

        p = nn.Conv(2, (1, 1), use_bias=False, dtype=dtype)(x)
        p = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(p))
        logits = nn.Dense(self.num_actions, dtype=dtype)(p.reshape(batch + (-1,)))

        v = nn.Conv(1, (1, 1), use_bias=False, dtype=dtype)(x)
        v = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(v))
        v = nn.relu(nn.Dense(self.config.value_hidden, dtype=dtype)(v.reshape(batch + (-1,))))
        value = jnp.tanh(nn.Dense(1, dtype=dtype)(v))[..., 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32)


def init_variables(net: AlphaZeroNet, key: jax.Array, board_size: int) -> dict:
    """Fresh ``{'params', 'batch_stats'}`` for a board size (a plain pytree)."""
    dummy = jnp.zeros((1, board_size, board_size, 2), jnp.float32)
    return dict(net.init(key, dummy, train=False))


def make_network(board_size: int, config: NetworkConfig) -> AlphaZeroNet:
    return AlphaZeroNet(num_actions=board_size * board_size + 1, config=config)
