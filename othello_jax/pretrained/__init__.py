"""Trained networks in one portable file each, and the networks that ship with the package.

A portable network file is flax msgpack of ``{"meta": JSON text, "variables": {"params",
"batch_stats"}}``: no orbax directory, so any flax version reads it. ``meta`` holds the format
version, the board size, the network config and free-form provenance (the command that trained
it, the commit, its measured scores). ``builtin:NAME`` names a file shipped in this package
(``builtin:6x6``); :func:`resolve` turns either form into a path. A file whose variables are not
those of the network its meta names (another architecture or board size) is refused when loaded.

Made by ``othello-jax export-network --checkpoint=WORKDIR --out=FILE.msgpack``. JAX, flax and
the model are imported by the functions that read and write files, so the commands' --help
(which names the shipped networks) starts without them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from othello_jax.errors import InputError, first_line

if TYPE_CHECKING:
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


def checkpoint_forms() -> str:
    """What a command's ``--checkpoint`` (and ``net:ckpt=``) accepts, as one phrase for help texts
    and error messages."""
    builtins = "|".join(builtin_names())
    return f"a training workdir, WORKDIR/best, a {SUFFIX} file" + (f" or builtin:{builtins}" if builtins else "")


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
    import jax
    import numpy as np
    from flax import serialization

    arrays = jax.tree.map(np.asarray, {"params": variables["params"], "batch_stats": variables.get("batch_stats", {})})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialization.msgpack_serialize({"meta": json.dumps(meta), "variables": arrays}))
    return path


def read_meta(reference: str | Path) -> dict:
    """The meta of a portable file (format, board_size, network, provenance)."""
    return _read(resolve(reference))[0]


def load(reference: str | Path) -> tuple[NetworkConfig, dict, int, dict]:
    """``(network config, {'params', 'batch_stats'}, board size, meta)`` of a portable file or ``builtin:NAME``."""
    import jax

    from othello_jax.model import NetworkConfig, RetiredNetworkField

    path = resolve(reference)
    meta, variables = _read(path)
    variables.setdefault("batch_stats", {})
    try:
        config = NetworkConfig.from_meta(meta["network"])
        size = int(meta["board_size"])
        mismatch = variables_mismatch(config, size, variables)
    except RetiredNetworkField as error:  # a network of an option since removed
        raise PortableNetworkError(f"network file {path}: {error}") from None
    except Exception as error:  # a config this code cannot build: flax and jax raise many kinds
        raise PortableNetworkError(f"network file {path} has an unreadable network config "
                                   f"({first_line(error, limit=120)})") from None
    if mismatch:
        raise PortableNetworkError(f"network file {path} does not hold the {size}x{size} network its meta names "
                                   f"({mismatch})")
    return config, dict(jax.device_put(variables)), size, meta  # not jnp.asarray: a program compiled per shape


def variables_mismatch(config: NetworkConfig, board_size: int, variables: dict) -> str:
    """The first difference between ``variables`` and those of ``config`` on a ``board_size`` board
    (a missing, extra or differently shaped array, by its path), or "" when they match."""
    import jax
    import numpy as np

    from othello_jax.model import init_variables, make_network

    wanted = jax.eval_shape(lambda key: init_variables(make_network(board_size, config), key, board_size),
                            jax.random.PRNGKey(0))
    shapes = lambda tree: {jax.tree_util.keystr(path, simple=True, separator="/"): tuple(np.shape(leaf))
                           for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}
    expected, found = shapes({"params": wanted["params"], "batch_stats": wanted.get("batch_stats", {})}), shapes(
        {"params": variables.get("params", {}), "batch_stats": variables.get("batch_stats", {})})
    for name in sorted(expected.keys() | found.keys()):
        if name not in found:
            return f"{name} is missing"
        if name not in expected:
            return f"{name} is not part of that network"
        if expected[name] != found[name]:
            return f"{name} has shape {found[name]}, not {expected[name]}"
    return ""


def _read(path: Path) -> tuple[dict, dict]:
    from flax import serialization

    try:
        content = serialization.msgpack_restore(path.read_bytes())
        if not isinstance(content, dict) or not {"meta", "variables"} <= content.keys():
            raise ValueError("msgpack without the 'meta' and 'variables' of an othello-jax network")
        meta = json.loads(content["meta"])
        variables = content["variables"]
        if not isinstance(meta, dict) or not isinstance(variables, dict):
            raise ValueError("its meta or variables are not mappings")
    except Exception as error:  # msgpack, JSON or layout errors all mean "not a network file"
        raise PortableNetworkError(f"{path} is not a portable network file ({first_line(error, limit=120)})") from None
    version = meta.get("format")
    if version != PORTABLE_FORMAT:
        raise PortableNetworkError(f"{path} has portable format {version!r}; this code reads format {PORTABLE_FORMAT}")
    return meta, dict(variables)
