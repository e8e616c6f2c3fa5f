"""Anything that picks moves, behind one batched interface: ``act(states, key) -> actions``.

``states`` is a batched :class:`~othello_jax.game.State` (leading axis B), ``key`` a PRNG key,
and the result int32[B] legal actions (anything for games already over). Jittable agents can
be played inside one compiled match (see :mod:`othello_jax.arena`); host agents (external
engines) are called once per ply from Python.

Agents: ``random``, ``greedy`` (most flips), ``alphabeta`` (depth-k search on a hand-made
evaluation), ``mcts`` (tree search valued by random playouts), ``net`` (a network, raw policy
or with search) and ``gtp`` (an external engine over the Go Text Protocol). :func:`parse_agent`
builds any of them from a short spec string such as ``alphabeta:depth=4`` or
``net:ckpt=runs/o8,sims=64,search=gumbel``; ``solve=E`` makes any of them play the last E
empties perfectly with the exact endgame solver.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

from othello_jax import alphabeta
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

ActFn = Callable[[State, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A move picker. ``act(states, key) -> int32[B]`` over a batch of states.

    jittable: False for host-side agents (external engines); the arena then plays a host loop.
    start_games: optional hook for host agents that must know how positions were reached (a
        GTP engine replays moves): the arena calls it with each game's opening moves.
    close: optional hook releasing resources (engine processes).
    params, act_with_params: optional split of ``act`` into ``act_with_params(params, states,
        key)`` and its (array) parameters, e.g. a network's variables. The arena then passes
        the parameters as arguments, so agents differing only in parameters (the checkpoints of
        a run) share one compiled match instead of baking each network into its own.
    """

    name: str
    act: ActFn
    jittable: bool = True
    start_games: Callable[[Sequence[Sequence[int]]], None] | None = None
    close: Callable[[], None] | None = None
    params: Any = dataclasses.field(default=None, compare=False)
    act_with_params: Callable[[Any, State, jax.Array], jax.Array] | None = None


class AgentSpecError(ValueError):
    """A malformed agent spec (one-line message naming the problem)."""


# ---------------------------------------------------------------------------------------------
# baselines
# ---------------------------------------------------------------------------------------------
def random_agent(game: Othello) -> Agent:
    """Uniformly random legal moves."""
    return Agent("random", jax.jit(game.random_legal_action))


def flip_counts(states: State, game: Othello) -> jax.Array:
    """Discs each placement would flip, int32[B, N*N] (-1 where the placement is illegal)."""
    squares = game.square_of_action(jnp.arange(game.num_squares))
    moves = bb.square_bit(squares)  # [N*N] single-bit boards
    expand = lambda b: jax.tree.map(lambda x: x[..., None], b)
    flipped = bb.flips(expand(states.mover), expand(states.opponent), moves, game.size)
    legal = game.legal_moves(states)[..., : game.num_squares]
    return jnp.where(legal, bb.popcount(flipped), -1)


def greedy_act(states: State, key: jax.Array, game: Othello) -> jax.Array:
    """The placement flipping the most discs (ties broken at random); pass when forced."""
    counts = flip_counts(states, game).astype(jnp.float32)
    noise = jax.random.uniform(key, counts.shape, maxval=0.5)
    best = jnp.argmax(counts + noise, axis=-1).astype(jnp.int32)
    return jnp.where(bb.any_set(states.legal), best, game.pass_action)


def greedy_agent(game: Othello) -> Agent:
    """Most flips now, no look-ahead (the classic weak baseline)."""
    return Agent("greedy", jax.jit(functools.partial(greedy_act, game=game)))


def alphabeta_agent(game: Othello, depth: int = 2) -> Agent:
    """Alpha-beta to ``depth`` plies on the hand-made evaluation (deterministic)."""
    if depth < 1:
        raise AgentSpecError(f"alphabeta depth must be at least 1, got {depth}")
    act = jax.jit(lambda states, key: alphabeta.search(states, game, depth)[0])
    return Agent(f"alphabeta:depth={depth}", act)


def mcts_agent(game: Othello, sims: int = 64, rollouts: int = 1, search: str = "puct") -> Agent:
    """Tree search with a uniform prior, leaves valued by ``rollouts`` random playouts each."""
    from othello_jax import rollout_mcts

    if sims < 1 or rollouts < 1:
        raise AgentSpecError(f"mcts needs sims >= 1 and rollouts >= 1, got sims={sims}, rollouts={rollouts}")
    config = playing_search_config(search, sims)
    config.gumbel_scale = 1.0  # with a uniform prior only the Gumbel noise spreads the considered moves
    act = jax.jit(rollout_mcts.make_act(game, config, rollouts))
    name = f"mcts:sims={sims}" + (f",rollouts={rollouts}" if rollouts != 1 else "")
    return Agent(name + (f",search={search}" if search != "puct" else ""), act)


# ---------------------------------------------------------------------------------------------
# networks
# ---------------------------------------------------------------------------------------------
def policy_act(apply_fn: Callable, variables: Any, states: State, key: jax.Array, game: Othello,
               temperature: float) -> jax.Array:
    """Raw network policy: the most likely legal move, or a sample at ``temperature`` > 0."""
    logits, _ = apply_fn(variables, game.observation(states))
    legal = game.legal_moves(states)
    logits = jnp.where(legal, logits.astype(jnp.float32), -jnp.inf)
    if temperature > 0:
        chosen = jax.random.categorical(key, logits / temperature, axis=-1)
    else:
        chosen = jnp.argmax(logits, axis=-1)
    return jnp.where(jnp.any(legal, axis=-1), chosen, game.pass_action).astype(jnp.int32)


def playing_search_config(variant: str, sims: int):
    """Search settings for evaluation games: no exploration noise (Gumbel scale and Dirichlet 0)."""
    from othello_jax.search import check_search_config, default_search_config

    config = default_search_config()
    config.variant = variant
    config.num_simulations = int(sims)
    config.gumbel_scale = 0.0
    config.dirichlet_fraction = 0.0
    try:
        check_search_config(config)
    except ValueError as error:
        raise AgentSpecError(str(error)) from None
    return config


def policy_fn(game: Othello, apply_fn: Callable, sims: int = 0, search: str = "gumbel",
              temperature: float = 0.0) -> Callable[[Any, State, jax.Array], jax.Array]:
    """Jitted ``fn(variables, states, key) -> actions``: raw policy (``sims=0``) or ``search``.

    The variables are an argument, not a constant baked into the program, so every network of
    one architecture shares the compiled code (see ``Agent.act_with_params``).
    """
    if sims < 0 or temperature < 0:
        raise AgentSpecError(f"net needs sims >= 0 and temp >= 0, got sims={sims}, temp={temperature}")
    if sims == 0:
        return jax.jit(functools.partial(policy_act, apply_fn, game=game, temperature=float(temperature)))
    from othello_jax import search as search_lib

    config = playing_search_config(search, sims)

    def act(variables: Any, states: State, key: jax.Array) -> jax.Array:
        search_key, pick_key = jax.random.split(key)
        result = search_lib.run_search(config, apply_fn, variables, states, search_key, game)
        return search_lib.select_action(result, temperature, pick_key)

    return jax.jit(act)


def parametric_agent(name: str, fn: Callable[[Any, State, jax.Array], jax.Array], params: Any) -> Agent:
    """An agent whose moves are ``fn(params, states, key)``."""
    return Agent(name, functools.partial(fn, params), params=params, act_with_params=fn)


def neural_agent(game: Othello, apply_fn: Callable, variables: Any, sims: int = 0, search: str = "gumbel",
                 temperature: float = 0.0, name: str = "net") -> Agent:
    """A network as a player: raw policy (``sims=0``) or ``search`` with ``sims`` simulations.

    ``apply_fn(variables, observation) -> (logits, value)`` in inference mode, e.g.
    ``functools.partial(net.apply, train=False)``. Agents built with the same ``apply_fn``
    object (and settings) share compiled matches; :func:`network_agent` arranges that for
    networks given by their config.
    """
    return parametric_agent(name, policy_fn(game, apply_fn, sims, search, temperature), variables)


@functools.lru_cache(maxsize=32)
def _network_policy(game: Othello, network_config: Any, sims: int, search: str, temperature: float) -> Callable:
    from othello_jax.model import make_network

    net = make_network(game.size, network_config)
    return policy_fn(game, functools.partial(net.apply, train=False), sims, search, temperature)


def network_agent(game: Othello, network_config: Any, variables: Any, sims: int = 0, search: str = "gumbel",
                  temperature: float = 0.0, name: str = "net") -> Agent:
    """:func:`neural_agent` for an ``othello_jax.model`` network given by its config.

    Networks of the same config and settings (checkpoints of one run) share compiled code.
    """
    fn = _network_policy(game, network_config, int(sims), str(search), float(temperature))
    return parametric_agent(name, fn, variables)


def checkpoint_agent(path: str, game: Othello, **options: Any) -> Agent:
    """A trained network loaded with ``othello_jax.checkpoint.load_agent_variables``."""
    from othello_jax.checkpoint import CheckpointError, load_agent_variables

    try:
        network_config, variables, size = load_agent_variables(path)
    except CheckpointError as error:
        raise AgentSpecError(str(error)) from None
    if size != game.size:
        raise AgentSpecError(f"checkpoint {path} plays {size}x{size}, not {game.size}x{game.size}")
    return network_agent(game, network_config, variables, **options)


def untrained_agent(game: Othello, preset: str, seed: int = 0, **options: Any) -> Agent:
    """A freshly initialised network (a reference point for Elo curves, and for tests)."""
    from othello_jax.model import NetworkConfig, init_variables, make_network

    try:
        network_config = NetworkConfig.preset(preset)
    except ValueError as error:
        raise AgentSpecError(str(error)) from None
    variables = init_variables(make_network(game.size, network_config), jax.random.PRNGKey(seed), game.size)
    return network_agent(game, network_config, variables, **options)


# ---------------------------------------------------------------------------------------------
# wrappers
# ---------------------------------------------------------------------------------------------
def with_exact_endgame(agent: Agent, game: Othello, max_empties: int, backend: str | None = None) -> Agent:
    """``agent``, but positions with at most ``max_empties`` empty squares are played perfectly.

    ``backend``: ``"jax"`` (the batched on-device solver; the agent stays jittable, the default
    for jittable agents) or ``"c"``/``"auto"`` (the C solver on the host, one position at a
    time, much faster beyond ~14 empties; the agent becomes a host agent; the default for
    host agents).
    """
    try:
        from othello_jax.solver import with_exact_endgame as solver_wrap
    except ImportError:
        raise AgentSpecError("solve=E needs the exact endgame solver (othello_jax.solver.with_exact_endgame), "
                             "which this installation lacks") from None
    if max_empties < 0:
        raise AgentSpecError(f"solve must be >= 0 empties, got {max_empties}")
    backend = backend or ("jax" if agent.jittable else "auto")
    if backend not in ("jax", "c", "auto"):
        raise AgentSpecError(f"solver must be jax, c or auto, got {backend!r}")
    try:
        act = solver_wrap(agent.act, game, max_empties, backend=backend)
    except Exception as error:  # e.g. no C compiler for the C solver
        raise AgentSpecError(f"cannot use the {backend} endgame solver: {str(error).splitlines()[0]}") from None
    jittable = agent.jittable and backend == "jax"
    suffix = f",solve={max_empties}" + (f",solver={backend}" if backend != ("jax" if agent.jittable else "auto") else "")
    return dataclasses.replace(agent, name=agent.name + suffix, act=jax.jit(act) if jittable else act,
                               jittable=jittable, params=None, act_with_params=None)


def renamed(agent: Agent, name: str) -> Agent:
    return dataclasses.replace(agent, name=name)


# ---------------------------------------------------------------------------------------------
# spec strings
# ---------------------------------------------------------------------------------------------
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
        return float(value)
    except ValueError:
        raise AgentSpecError(f"option {key}={value!r} must be a number") from None


_STR = lambda key, value: value
# kind -> (option -> parser, the option a bare value sets, builder(game, **options) -> Agent)
_KINDS: dict[str, tuple[dict[str, Callable[[str, str], Any]], str | None, Callable[..., Agent]]] = {
    "random": ({}, None, lambda game: random_agent(game)),
    "greedy": ({}, None, lambda game: greedy_agent(game)),
    "alphabeta": ({"depth": _as_int}, "depth", lambda game, depth=2: alphabeta_agent(game, depth)),
    "mcts": ({"sims": _as_int, "rollouts": _as_int, "search": _STR}, "sims",
             lambda game, sims=64, rollouts=1, search="puct": mcts_agent(game, sims, rollouts, search)),
    "net": ({"ckpt": _STR, "preset": _STR, "seed": _as_int, "sims": _as_int, "search": _STR, "temp": _as_float},
            "ckpt", lambda game, **o: _net_from_options(game, **o)),
    "gtp": ({"cmd": _STR, "timeout": _as_float}, "cmd", lambda game, **o: _gtp_from_options(game, **o)),
}
_COMMON = {"solve": _as_int, "solver": _STR, "name": _STR}


def _net_from_options(game: Othello, ckpt: str | None = None, preset: str | None = None, seed: int = 0,
                      sims: int = 0, search: str = "gumbel", temp: float = 0.0) -> Agent:
    if bool(ckpt) == bool(preset):
        raise AgentSpecError("net needs exactly one of ckpt=PATH (a trained network) or preset=NAME (untrained)")
    options = dict(sims=sims, search=search, temperature=temp)
    if ckpt:
        return checkpoint_agent(ckpt, game, **options)
    return untrained_agent(game, preset, seed, **options)


def _gtp_from_options(game: Othello, cmd: str | None = None, timeout: float = 60.0) -> Agent:
    from othello_jax.gtp import gtp_agent

    if not cmd:
        raise AgentSpecError('gtp needs the engine command line, e.g. gtp:cmd="edax -gtp -l 6"')
    return gtp_agent(cmd, game, timeout=timeout)


def parse_agent(spec: str, game: Othello) -> Agent:
    """Build an agent from a spec ``KIND[:OPTION=VALUE,...]`` for the board of ``game``.

    Kinds and options: ``random``; ``greedy``; ``alphabeta:depth=D``; ``mcts:sims=S,rollouts=R,
    search=puct|gumbel``; ``net:ckpt=PATH|preset=NAME,seed=S,sims=S,search=gumbel|puct,temp=T``;
    ``gtp:cmd="ENGINE COMMAND LINE",timeout=SECONDS``. A bare first value sets the main option
    (``alphabeta:4``, ``mcts:200``, ``net:runs/o8``). Every kind also takes ``solve=E`` (exact
    endgame play with at most E empties; ``solver=jax|c|auto`` picks the solver, see
    :func:`with_exact_endgame`) and ``name=TEXT`` (the name in result tables).
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
    if solver is not None and solve is None:
        raise AgentSpecError("option solver=... only goes with solve=E")
    agent = _KINDS[kind][2](game, **options)
    if solve is not None:
        agent = with_exact_endgame(agent, game, solve, solver)
    if name is not None:
        agent = renamed(agent, name)
    elif kind in ("net", "gtp"):
        agent = renamed(agent, spec)  # the path or command line is the useful name
    return agent


_build_cached = functools.lru_cache(maxsize=64)(_build)
