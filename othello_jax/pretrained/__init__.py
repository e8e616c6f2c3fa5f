"""Trained networks in one portable file each, and the networks that ship with the package.

A portable network file is flax msgpack of ``{"meta": JSON text, "variables": {"params",
"batch_stats"}}``: no orbax directory, so any flax version reads it. ``meta`` holds the format
version, the board size, the network config and free-form provenance (the command that trained
it, the commit, its measured scores). ``builtin:NAME`` names a file shipped in this package
(``builtin:6x6``); :func:`resolve` turns either form into a path.

Made by ``othello-jax export-network --checkpoint=WORKDIR --out=FILE.msgpack``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from othello_jax.errors import InputError
from othello_jax.model import NetworkConfig

PORTABLE_FORMAT = 1
SUFFIX = ".msgpack"
BUILTIN_PREFIX = "builtin:"
BUILTIN_DIR = Path(__file__).parent


class PortableNetworkError(InputError):
    """A portable network file that is missing, unreadable or of an unknown format (one line)."""


def builtin_names() -> list[str]:
    """Names of the networks shipped with the package (``builtin:NAME``)."""
    return sorted(path.stem for path in BUILTIN_DIR.glob(f"*{SUFFIX}"))


def is_portable(reference: str | Path) -> bool:
    """True for ``builtin:NAME`` and for paths of ``.msgpack`` files."""
    text = str(reference)
    return text.startswith(BUILTIN_PREFIX) or text.endswith(SUFFIX)


def resolve(reference: str | Path) -> Path:
    """The file of ``builtin:NAME`` or of a ``.msgpack`` path; a one-line error if it is missing."""
    text = str(reference)
    if text.startswith(BUILTIN_PREFIX):
        name = text[len(BUILTIN_PREFIX):]
        path = BUILTIN_DIR / f"{name}{SUFFIX}"
        if not path.is_file():
            raise PortableNetworkError(f"no built-in network {name!r}; shipped: {', '.join(builtin_names()) or 'none'}")
        return path
    path = Path(text).expanduser()
    if not path.is_file():
        raise PortableNetworkError(f"network file {path} does not exist")
    return path


def save(path: str | Path, network: NetworkConfig, variables: dict, board_size: int,
         provenance: dict[str, Any] | None = None) -> Path:
    """Write ``variables`` ({'params', 'batch_stats'}) of a ``network`` for ``board_size`` to one file."""
    path = Path(path)
    if path.suffix != SUFFIX:
        raise PortableNetworkError(f"a portable network file ends in {SUFFIX}, got {path.name!r}")
    meta = dict(format=PORTABLE_FORMAT, board_size=int(board_size), network=dataclasses.asdict(network),
                provenance=dict(provenance or {}))
    arrays = jax.tree.map(np.asarray, {"params": variables["params"], "batch_stats": variables.get("batch_stats", {})})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialization.msgpack_serialize({"meta": json.dumps(meta), "variables": arrays}))
    return path


def read_meta(reference: str | Path) -> dict:
    """The meta of a portable file (format, board_size, network, provenance)."""
    return _read(resolve(reference))[0]


def load(reference: str | Path) -> tuple[NetworkConfig, dict, int, dict]:
    """``(network config, {'params', 'batch_stats'}, board size, meta)`` of a portable file or ``builtin:NAME``."""
    path = resolve(reference)
    meta, variables = _read(path)
    try:
        config = NetworkConfig(**meta["network"])
        size = int(meta["board_size"])
    except (KeyError, TypeError, ValueError) as error:
        raise PortableNetworkError(f"network file {path} has an unreadable network config ({error})") from None
    variables = jax.tree.map(jax.numpy.asarray, variables)
    variables.setdefault("batch_stats", {})
    return config, dict(variables), size, meta


def _read(path: Path) -> tuple[dict, dict]:
    try:
        content = serialization.msgpack_restore(path.read_bytes())
        meta = json.loads(content["meta"])
        variables = content["variables"]
    except Exception as error:  # msgpack, JSON or layout errors all mean "not a network file"
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PortableNetworkError(f"{path} is not a portable network file ({first})") from None
    version = meta.get("format")
    if version != PORTABLE_FORMAT:
        raise PortableNetworkError(f"{path} has portable format {version!r}; this code reads format {PORTABLE_FORMAT}")
    return meta, dict(variables)
