"""The AlphaZero network: a residual tower with a policy head and a value head (flax.linen).

Input is the canonical observation ``(..., N, N, 2)`` from ``Othello.observation``; output is
``(policy_logits[..., N*N+1], value[...])`` with value in (-1, 1) from the mover's view.
Batch norm statistics live in the ``batch_stats`` collection: call with ``train=True`` and
``mutable=["batch_stats"]`` while learning, ``train=False`` for inference.

Options (all off by default; then the parameters and outputs are exactly the plain network's):
``value_head="wdl"`` predicts win/draw/loss logits and reports ``value = P(win) - P(loss)``;
``score_head`` a tanh-scaled final disc difference; ``ownership_head`` a tanh per square (+1 the
mover's disc at the end, -1 the opponent's); ``tower="conv"`` replaces the residual tower by
Liskowski et al.'s ConvN+BN (plain 3x3 convolutions widening 64-64-128-128-256..., a dense policy
head); ``global_pool`` adds KataGo-style global pooling
biases in every residual block. ``aux=True`` also returns the extra outputs in a dict (for the
losses); the search only ever sees ``(logits, value)``. The heads' 1x1 convolutions have
AlphaZero's 2 (policy) and 1 (value) channels.

Retired fields (:data:`RETIRED_NETWORK_FIELDS`): checkpoints and network files written before
name them at their off values; :meth:`NetworkConfig.from_meta` reads those and refuses the others.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from othello_jax.errors import InputError

VALUE_HEADS = ("scalar", "wdl")
TOWERS = ("resnet", "conv")
# tower="conv": Liskowski et al.'s ConvN(+BN) widths, as multiples of ``channels`` (their 64): Conv4,
# Conv6 and Conv8 are the first 4, 6 and 8; their hidden dense layer before the policy has 128 units
CONV_WIDTHS = (1, 1, 2, 2, 4, 4, 4, 4)
CONV_POLICY_HIDDEN = 128
PRESETS: dict[str, tuple[int, int]] = {
    # name: (residual blocks, channels)
    "tiny": (1, 16),
    "small": (6, 64),
    "standard": (6, 128),
    "large": (10, 128),
}
POLICY_CHANNELS, VALUE_CHANNELS = 2, 1  # the heads' 1x1 convolution widths (AlphaZero's)

_HEADS = ("wider heads' 8-minute gain was gone at the quickstart's length (experiments/RESULTS.md, "
          "'The heads in self-play: an 8-minute screen, 3 seeds')")
# network fields that were removed -> (the values that mean off, which checkpoints and network files
# written before carry: 0 is a config's "unset"; why it went, naming its RESULTS.md heading). The
# config's ``network.<name>`` entries of othello_jax.training.settings.retired come from this table.
RETIRED_NETWORK_FIELDS: dict[str, tuple[tuple, str]] = {
    "move_planes": ((False, 0), "legal-move input planes gave no gain (experiments/RESULTS.md, 'Strength ceilings "
                                "on 6x6 with the exact solver as ground truth: capacity, targets, coverage, compute "
                                "(2026-11-25)')"),
    "policy_channels": ((0, POLICY_CHANNELS), _HEADS),
    "value_channels": ((0, VALUE_CHANNELS), _HEADS),
}


class RetiredNetworkField(InputError):
    """A network meta names a retired option turned on (one line: the field, why it went)."""


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Shape and precision of the network; hashable so it can be static under jit."""

    blocks: int = 6
    channels: int = 64
    value_hidden: int = 64
    dtype: str = "float32"  # activations/matmuls: "float32" or "bfloat16"
    value_head: str = "scalar"  # "scalar" (tanh) or "wdl" (win/draw/loss logits; value = p_win - p_loss)
    score_head: bool = False  # auxiliary head: final disc difference / squares (tanh)
    ownership_head: bool = False  # auxiliary head: final owner of every square (tanh per square)
    global_pool: bool = False  # KataGo-style global pooling biases in the residual blocks
    # "resnet" (blocks x residual blocks of `channels`) or "conv": Liskowski et al.'s plain stack of
    # `blocks` (<= 8) 3x3 convolutions with batch norm, widths channels x CONV_WIDTHS, a dense policy head
    tower: str = "resnet"
    # what the value head predicts: (1 - m) * result + m * final disc difference / squares
    # (Othello.result_value); 0 = the result alone. Searches value finished games the same way.
    value_margin: float = 0.0

    def __post_init__(self) -> None:
        if self.value_head not in VALUE_HEADS:
            raise InputError(f"unknown network.value_head {self.value_head!r}; choose from {', '.join(VALUE_HEADS)}")
        if self.tower not in TOWERS:
            raise InputError(f"unknown network.tower {self.tower!r}; choose from {', '.join(TOWERS)}")
        if self.tower == "conv" and not 1 <= self.blocks <= len(CONV_WIDTHS):
            raise InputError(f"network.tower='conv' takes 1 to {len(CONV_WIDTHS)} layers (network.blocks), "
                             f"got {self.blocks}")
        if self.tower == "conv" and self.global_pool:
            raise InputError("network.global_pool needs residual blocks (network.tower='resnet')")
        if not 0.0 <= self.value_margin <= 1.0:
            raise InputError(f"network.value_margin must be in [0, 1], got {self.value_margin}")
        if self.value_margin and self.value_head != "scalar":
            raise InputError("network.value_margin needs the scalar value head (a WDL head predicts results only)")

    @property
    def final_board_targets(self) -> bool:
        """Whether training needs each game's final board (a score or ownership head)."""
        return bool(self.score_head or self.ownership_head)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> NetworkConfig:
        if name not in PRESETS:
            raise InputError(f"unknown network preset {name!r}; choose from {', '.join(PRESETS)}")
        blocks, channels = PRESETS[name]
        return cls(blocks=blocks, channels=channels, **overrides)

    @classmethod
    def from_meta(cls, meta: dict) -> NetworkConfig:
        """The network a checkpoint's or network file's meta names (:func:`current_fields`)."""
        return cls(**current_fields(meta))


def current_fields(meta: dict) -> dict:
    """A network meta without its retired fields (:data:`RETIRED_NETWORK_FIELDS`) at their off
    values, which everything written before them carries; :class:`RetiredNetworkField` naming the
    field and why it went when one is on (this code cannot build that network)."""
    for name, (offs, why) in RETIRED_NETWORK_FIELDS.items():
        if name in meta and meta[name] not in offs:
            raise RetiredNetworkField(f"network.{name}={meta[name]!r} names a removed option ({why}); "
                             "this code cannot build that network")
    return {k: v for k, v in meta.items() if k not in RETIRED_NETWORK_FIELDS}


def wdl_value(wdl_logits: jax.Array) -> jax.Array:
    """Scalar value ``P(win) - P(loss)`` in [-1, 1] of win/draw/loss logits ``[..., 3]``."""
    p = jax.nn.softmax(wdl_logits.astype(jnp.float32), axis=-1)
    return p[..., 0] - p[..., 2]


class GlobalPoolBias(nn.Module):
    """Per-channel biases from the whole board: channel means and maxima -> dense layer.

    Lets every square see global facts (parity, who owns the edges) in one layer; the biases
    are invariant under board symmetries, so ``x + bias`` is as equivariant as ``x``.
    """

    channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        pooled = jnp.concatenate([jnp.mean(x, axis=(-3, -2)), jnp.max(x, axis=(-3, -2))], axis=-1)
        return nn.Dense(self.channels, dtype=self.dtype, name="dense")(pooled)[..., None, None, :]


def conv_bn_relu(x: jax.Array, channels: int, train: bool, dtype: Any) -> jax.Array:
    """A 3x3 convolution (zero-padded, no bias), batch norm, ReLU: the stem, and every layer of the conv tower."""
    x = nn.Conv(channels, (3, 3), use_bias=False, dtype=dtype)(x)
    return nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(x))


class ResidualBlock(nn.Module):
    channels: int
    dtype: Any
    global_pool: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        conv = lambda: nn.Conv(self.channels, (3, 3), use_bias=False, dtype=self.dtype)
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)
        y = nn.relu(norm()(conv()(x)))
        if self.global_pool:
            y = y + GlobalPoolBias(self.channels, self.dtype, name="global_pool")(y)
        y = norm()(conv()(y))
        return nn.relu(x + y)


class AlphaZeroNet(nn.Module):
    """Stem conv -> residual tower -> (policy logits over N*N+1 actions, value in [-1, 1]); with
    ``tower="conv"``, Liskowski et al.'s plain convolution stack and dense policy head instead.

    With ``aux=True`` the result is ``(logits, value, extras)``; ``extras`` holds float32
    ``wdl_logits [..., 3]``, ``score [...]`` and ``ownership [..., N, N]`` for the heads the
    config has (an empty dict for the plain network).
    """

    num_actions: int
    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, obs: jax.Array, train: bool = False, aux: bool = False) -> tuple:
        dtype = jnp.dtype(self.config.dtype)
        c = self.config.channels
        x = obs.astype(dtype)
        batch = x.shape[:-3]
        if self.config.tower == "conv":
            for multiple in CONV_WIDTHS[:self.config.blocks]:
                x = conv_bn_relu(x, c * multiple, train, dtype)
            p = nn.relu(nn.Dense(CONV_POLICY_HIDDEN, dtype=dtype)(x.reshape(batch + (-1,))))
        else:
            x = conv_bn_relu(x, c, train, dtype)
            for _ in range(self.config.blocks):
                x = ResidualBlock(c, dtype, self.config.global_pool)(x, train)
            p = nn.Conv(POLICY_CHANNELS, (1, 1), use_bias=False, dtype=dtype)(x)
            p = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(p))
            p = p.reshape(batch + (-1,))
        logits = nn.Dense(self.num_actions, dtype=dtype)(p)

        v = nn.Conv(VALUE_CHANNELS, (1, 1), use_bias=False, dtype=dtype)(x)
        v = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(v))
        v = nn.relu(nn.Dense(self.config.value_hidden, dtype=dtype)(v.reshape(batch + (-1,))))
        extras: dict[str, jax.Array] = {}
        if self.config.value_head == "wdl":
            extras["wdl_logits"] = nn.Dense(3, dtype=dtype, name="wdl")(v).astype(jnp.float32)
            value = wdl_value(extras["wdl_logits"])
        else:
            value = jnp.tanh(nn.Dense(1, dtype=dtype)(v))[..., 0]
        if self.config.score_head:  # shares the value head's hidden layer
            extras["score"] = jnp.tanh(nn.Dense(1, dtype=dtype, name="score")(v))[..., 0].astype(jnp.float32)
        if self.config.ownership_head:
            own = nn.Conv(1, (1, 1), dtype=dtype, name="ownership")(x)
            extras["ownership"] = jnp.tanh(own[..., 0]).astype(jnp.float32)
        if aux:
            return logits.astype(jnp.float32), value.astype(jnp.float32), extras
        return logits.astype(jnp.float32), value.astype(jnp.float32)


def init_variables(net: AlphaZeroNet, key: jax.Array, board_size: int) -> dict:
    """Fresh ``{'params', 'batch_stats'}`` for a board size (a plain pytree)."""
    dummy = jnp.zeros((1, board_size, board_size, 2), jnp.float32)
    return dict(net.init(key, dummy, train=False))


def make_network(board_size: int, config: NetworkConfig) -> AlphaZeroNet:
    return AlphaZeroNet(num_actions=board_size * board_size + 1, config=config)
