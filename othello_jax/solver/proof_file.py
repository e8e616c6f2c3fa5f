"""The proof file: a weak solution as compact data (numpy ``.npz``), written by
``othello-jax solve-6x6``, checked by ``othello-jax verify-proof``, read by the perfect player.

One row per position of the proof tree, each in its canonical form (the smallest of its 8
symmetric images, passes settled; :mod:`othello_jax.solver.canonical`), from its mover's view:
``ge``/``le``: the bounds the proof needs of its value (``NONE`` where it needs none), ``move``:
the move (canonical frame) that keeps ``>= ge`` (64: none recorded), ``leaf``: a position whose
bounds are proved by solving it, not by the tree below it. ``meta`` (JSON) names the board size,
the start position's value and how the proof was found.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from othello_jax.errors import InputError
from othello_jax.solver.canonical import Position

FORMAT = 1
NONE = -128  # no requirement of this kind
DEFAULT_PATH = Path(__file__).with_name("data") / "proof6.npz"
DEFAULT_PATH_SIZE = 6  # the board of the shipped proof


class ProofFileError(InputError):
    """A proof file that is missing or unreadable (one line)."""


class ProofRecord(NamedTuple):
    position: Position
    ge: int | None
    le: int | None
    move: int
    leaf: bool


class Proof(NamedTuple):
    size: int
    value: int  # the start position's value for black
    records: dict[Position, ProofRecord]
    meta: dict


def write(path: str | os.PathLike, size: int, value: int, records: list[dict], meta: dict) -> Path:
    """Save a proof (records as :meth:`ProofSearch.records` makes them), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(records, key=lambda r: r["position"])
    meta = dict(meta, format=FORMAT, size=size, value=value)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(
        tmp, meta=np.asarray(json.dumps(meta, sort_keys=True)),
        positions=np.asarray([r["position"] for r in rows], np.uint64).reshape(-1, 2),
        ge=np.asarray([NONE if r["ge"] is None else r["ge"] for r in rows], np.int8),
        le=np.asarray([NONE if r["le"] is None else r["le"] for r in rows], np.int8),
        move=np.asarray([r["move"] for r in rows], np.int8),
        leaf=np.asarray([r["leaf"] for r in rows], bool))
    os.replace(tmp, path)
    return path


def read(path: str | os.PathLike = DEFAULT_PATH) -> Proof:
    """A proof file's contents; :class:`ProofFileError` if it cannot be read as one."""
    path = Path(path)
    if not path.is_file():
        raise ProofFileError(f"proof file {path} does not exist")
    try:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            positions = data["positions"].tolist()
            columns = [data[name].tolist() for name in ("ge", "le", "move", "leaf")]
    except Exception as error:  # zip, npz or JSON errors all mean "not a proof file"
        raise ProofFileError(f"{path} is not a proof file ({type(error).__name__}: {error})") from None
    if meta.get("format") != FORMAT:
        raise ProofFileError(f"{path} has proof format {meta.get('format')!r}; this code reads format {FORMAT}")
    records = {}
    for (mover, opponent), ge, le, move, leaf in zip(positions, *columns, strict=True):
        key = (int(mover), int(opponent))
        records[key] = ProofRecord(key, None if ge == NONE else int(ge), None if le == NONE else int(le),
                                   int(move), bool(leaf))
    return Proof(int(meta["size"]), int(meta["value"]), records, meta)
