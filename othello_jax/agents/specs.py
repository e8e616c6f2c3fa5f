"""Agent spec strings (``alphabeta:depth=4``, ``net:ckpt=runs/o8,sims=64``): the registry of every agent kind.

This is the only module that knows every kind; a new kind is one entry in ``_KINDS``.
"""

from __future__ import annotations

import functools
import math
import shlex
from collections.abc import Callable
from typing import Any

from othello_jax.agents.base import Agent, AgentSpecError, renamed
from othello_jax.agents.baselines import alphabeta_agent, greedy_agent, mcts_agent, random_agent
from othello_jax.agents.endgame import with_exact_endgame
from othello_jax.agents.gtp import gtp_agent
from othello_jax.agents.neural import checkpoint_agent, untrained_agent
from othello_jax.agents.perfect import perfect_agent
from othello_jax.agents.proof_player import with_proof
from othello_jax.game import Othello


def split_options(text: str) -> list[str]:
    """``'a=1,cmd="x -y, z"'`` -> ``['a=1', 'cmd="x -y, z"']`` (commas inside quotes kept)."""
    parts, current, quote = [], [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    if quote:
        raise AgentSpecError(f"unbalanced {quote} quote in agent options {text!r}")
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _as_int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise AgentSpecError(f"option {key}={value!r} must be an integer") from None


def _as_float(key: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise AgentSpecError(f"option {key}={value!r} must be a number") from None
    if not math.isfinite(number):  # a nan or infinite time-out or temperature means nothing
        raise AgentSpecError(f"option {key}={value!r} must be a finite number")
    return number


_STR = lambda key, value: value
# kind -> (option -> parser, the option a bare value sets, builder(game, **options) -> Agent)
_KINDS: dict[str, tuple[dict[str, Callable[[str, str], Any]], str | None, Callable[..., Agent]]] = {
    "random": ({}, None, lambda game: random_agent(game)),
    "greedy": ({}, None, lambda game: greedy_agent(game)),
    "alphabeta": ({"depth": _as_int}, "depth", lambda game, depth=2: alphabeta_agent(game, depth)),
    "mcts": ({"sims": _as_int, "rollouts": _as_int, "search": _STR}, "sims",
             lambda game, sims=64, rollouts=1, search="puct": mcts_agent(game, sims, rollouts, search)),
    "net": ({"ckpt": _STR, "preset": _STR, "seed": _as_int, "sims": _as_int, "search": _STR, "temp": _as_float,
             "traps": _as_int},
            "ckpt", lambda game, **o: _net_from_options(game, **o)),
    "gtp": ({"cmd": _STR, "timeout": _as_float}, "cmd", lambda game, **o: _gtp_from_options(game, **o)),
    "perfect": ({"cache": _STR}, "cache", lambda game, cache=None: perfect_agent(game, cache)),
}
_COMMON = {"solve": _as_int, "solver": _STR, "name": _STR, "proof": _STR}
# (kind, option) -> why it went: a spec naming one fails with that reason
_RETIRED_OPTIONS = {("net", "reuse"): "subtree reuse gave no gain at equal time (experiments/RESULTS.md, "
                                      "'subtree reuse')"}


def _net_from_options(game: Othello, ckpt: str | None = None, preset: str | None = None, seed: int = 0,
                      sims: int = 0, search: str = "gumbel", temp: float = 0.0, traps: int = 1) -> Agent:
    if bool(ckpt) == bool(preset):
        raise AgentSpecError("net needs exactly one of ckpt=PATH (a trained network) or preset=NAME (untrained)")
    if not 0 <= seed < 2**32:  # what jax.random.PRNGKey takes without overflow or wrapping around
        raise AgentSpecError(f"net seed must be in 0..2**32-1, got {seed}")
    if traps not in (0, 1):
        raise AgentSpecError(f"net traps must be 0 (off) or 1 (on), got {traps}")
    options = dict(sims=sims, search=search, temperature=temp, traps=bool(traps))
    if ckpt:
        return checkpoint_agent(ckpt, game, **options)
    return untrained_agent(game, preset, seed, **options)


def _gtp_from_options(game: Othello, cmd: str | None = None, timeout: float = 60.0) -> Agent:
    if not cmd:
        raise AgentSpecError('gtp needs the engine command line, e.g. gtp:cmd="edax -gtp -l 6"')
    try:
        shlex.split(cmd)
    except ValueError as error:  # e.g. "No closing quotation"
        raise AgentSpecError(f"gtp command line {cmd!r}: {error}") from None
    return gtp_agent(cmd, game, timeout=timeout)


def parse_agent(spec: str, game: Othello) -> Agent:
    """Build an agent from a spec ``KIND[:OPTION=VALUE,...]`` for the board of ``game``.

    Kinds and options: ``random``; ``greedy``; ``alphabeta:depth=D``; ``mcts:sims=S,rollouts=R,
    search=puct|gumbel``; ``net:ckpt=PATH|preset=NAME,seed=S,sims=S,search=gumbel|puct,temp=T,traps=0|1``
    (``traps=0``: the search may walk into a wipeout the rules prove within four or six plies, see
    ``othello_jax/search/traps.py``);
    ``gtp:cmd="ENGINE COMMAND LINE",timeout=SECONDS``; ``perfect:cache=DIR`` (exact play, boards
    up to 6x6, solved positions kept in DIR). A bare first value sets the main option
    (``alphabeta:4``, ``mcts:200``, ``net:runs/o8``). Every kind also takes ``solve=E`` (exact
    endgame play with at most E empties; ``solver=auto|c|jax`` picks the solver, the C one by
    default, see
    :func:`with_exact_endgame`), ``proof=1`` (6x6: the shipped proof plays the positions it
    covers, see :mod:`othello_jax.agents.proof_player`; ``proof=FILE`` another proof file) and
    ``name=TEXT`` (the name in result tables).
    Raises :class:`AgentSpecError` with a one-line message on a bad spec.

    Specs without outside state (all but checkpoints and engines) are built once per board
    and reused, so their compiled code is shared.
    """
    kind, options = parse_spec(spec)
    if kind == "gtp" or options.get("ckpt"):
        return _build(spec.strip(), kind, tuple(options.items()), game)
    return _build_cached(spec.strip(), kind, tuple(options.items()), game)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``'alphabeta:4,solve=10'`` -> ``('alphabeta', {'depth': 4, 'solve': 10})``, options checked."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind not in _KINDS:
        raise AgentSpecError(f"unknown agent kind {kind!r} in spec {spec!r}; choose from {', '.join(_KINDS)}")
    parsers, main_option, _ = _KINDS[kind]
    options: dict[str, Any] = {}
    for index, part in enumerate(split_options(rest)):
        key, eq, value = part.partition("=")
        if not eq:
            if index > 0 or main_option is None:
                raise AgentSpecError(f"option {part!r} in spec {spec!r} is not KEY=VALUE")
            key, value = main_option, part
        key = key.strip().lower()
        parser = parsers.get(key) or _COMMON.get(key)
        if parser is None and (kind, key) in _RETIRED_OPTIONS:
            raise AgentSpecError(f"{kind} option {key} was removed: {_RETIRED_OPTIONS[kind, key]}; drop the option")
        if parser is None:
            allowed = ", ".join(list(parsers) + list(_COMMON))
            raise AgentSpecError(f"unknown option {key!r} for {kind} (options: {allowed})")
        if key in options:
            raise AgentSpecError(f"option {key!r} given twice in spec {spec!r}")
        options[key] = parser(key, _unquote(value))
    return kind, options


def _build(spec: str, kind: str, option_items: tuple, game: Othello) -> Agent:
    options = dict(option_items)
    solve = options.pop("solve", None)
    solver = options.pop("solver", None)
    name = options.pop("name", None)
    proof = options.pop("proof", None)
    if solver is not None and solve is None:
        raise AgentSpecError("option solver=... only goes with solve=E")
    agent = _KINDS[kind][2](game, **options)
    if solve is not None:
        agent = with_exact_endgame(agent, game, solve, solver)
    if proof is not None and proof != "0":
        agent = with_proof(agent, game, None if proof == "1" else proof, exact_from=solve or 0)
    if name is not None:
        agent = renamed(agent, name)
    elif kind in ("net", "gtp"):
        agent = renamed(agent, spec)  # the path or command line is the useful name
    return agent


_build_cached = functools.lru_cache(maxsize=64)(_build)
