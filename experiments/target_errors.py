"""How wrong is each value target, and how often is the policy target optimal? Exact answers on
the network's own self-play positions (6x6; the ceiling table's "targets" row).

Plays ``--games`` self-play games exactly as training does (the project's ``play_games`` with the
quickstart's search and temperature settings), solves every position with at most
``--max-empties`` empty squares exactly (the C solver, in a process pool), and prints per band of
empties, for each value target the project offers (``z``, ``q``, ``zq``, ``lambda``, and ``zq``
with exact values at <= 6 empties as ``othello6_cpu`` trains) and for the network's own value
head: the mean squared error against the exact result (win +1, draw 0, loss -1, the mover's
view) and the share whose sign is right. Then the share of positions where the search's policy
target (its highest-weight move) and the raw network prior's best move are optimal::

    python -m experiments.target_errors --checkpoint=builtin:6x6 --games=128 --max-empties=20

No timing here: the figures do not depend on the machine (only on the seed).
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents.neural import load_network, network_apply_fn
from othello_jax.search import SearchSettings, default_search_config
from othello_jax.solver.solved_moves import NO_VALUE, move_values, solver_pool
from othello_jax.training.compiled import selfplay
from othello_jax.training.settings.selfplay_settings import SelfPlaySettings, default_selfplay_config

BANDS = ((1, 6), (7, 12), (13, 16), (17, 20), (21, 24))
EXACT_EMPTIES = 6  # othello6_cpu's selfplay.exact_endgame_empties


def play(checkpoint: str, games: int, sims: int, temperature_plies: int, seed: int):
    """Self-play games of ``checkpoint``'s network as training plays them: the output lane, the
    game, the network's apply function and variables."""
    game, network_config, variables = load_network(checkpoint)
    apply_fn = network_apply_fn(game, network_config)
    config = default_selfplay_config()
    config.update(num_games=games, temperature_plies=temperature_plies)
    settings = SelfPlaySettings.from_config(config)
    search_config = default_search_config()
    search_config.update(variant="gumbel", num_simulations=sims, max_num_considered_actions=8)
    search = SearchSettings.from_config(search_config)
    resign = selfplay.lane_resign_states(settings, 1)
    run = jax.jit(lambda v, k, r: selfplay.play_games(settings, search, game, apply_fn, v, k, r))
    out, _, _ = run(variables, jax.random.PRNGKey(seed)[None], resign)
    return jax.tree.map(lambda x: np.asarray(x[0]), out), game, apply_fn, variables


def targets(out, td_lambda: float) -> dict[str, np.ndarray]:
    """Every value target of the recorded positions ([T, B], the mover's view)."""
    mask = jnp.asarray(out.samples.mask)
    q, z = jnp.asarray(out.search_value), jnp.asarray(out.outcome)
    return {kind: np.asarray(selfplay.value_targets(kind, q, z, mask, td_lambda)) for kind in selfplay.VALUE_TARGETS}


def measure(out, game, apply_fn, variables, max_empties: int, td_lambda: float, workers: int) -> dict:
    """Per position with <= ``max_empties`` empties: exact result, every target, the network's
    value, and whether the policy target's and the prior's best moves are optimal."""
    mask = out.samples.mask
    states = out.samples.state
    flat = lambda x: x.reshape((-1,) + x.shape[2:])
    flat_states = jax.tree.map(flat, states)
    empties = game.num_squares - np.asarray(jnp.sum(game.observation(flat_states), axis=(-1, -2, -3)))
    rows = np.flatnonzero(flat(mask) & (empties <= max_empties) & (empties >= 1))
    chosen = jax.tree.map(lambda x: x[rows], flat_states)
    with solver_pool(workers) or contextlib.nullcontext() as pool:
        values = move_values(chosen, game, "auto", pool, workers).astype(np.int32)
    legal = values != NO_VALUE
    best = np.where(legal, values, -1000).max(axis=1)
    exact = np.sign(best).astype(np.float32)
    logits, network_value = apply_fn(variables, game.observation(chosen))
    prior = np.where(legal, np.asarray(logits), -np.inf).argmax(axis=1)
    policy = np.where(legal, flat(out.samples.policy)[rows], -1.0).argmax(axis=1)
    picked = lambda moves: values[np.arange(len(rows)), moves] == best
    result = {f"target {kind}": flat(t)[rows] for kind, t in targets(out, td_lambda).items()}
    zq = result["target zq"]
    result[f"target zq, exact <= {EXACT_EMPTIES}"] = np.where(empties[rows] <= EXACT_EMPTIES, exact, zq)
    result["network value"] = np.asarray(network_value).reshape(-1)
    return dict(states=chosen, empties=empties[rows], exact=exact, values=result, policy_optimal=picked(policy),
                prior_optimal=picked(prior))


def report(measured: dict) -> str:
    """The table: per band, MSE / sign-right share of every value, and optimal-move shares."""
    empties, exact = measured["empties"], measured["exact"]
    bands = [(lo, hi) for lo, hi in BANDS if ((empties >= lo) & (empties <= hi)).any()]
    head = f"{'':36}" + "".join(f"{f'{lo}-{hi} empties':>22}" for lo, hi in bands)
    lines = [head, f"{'positions':36}" + "".join(f"{int(((empties >= lo) & (empties <= hi)).sum()):>22}"
                                                 for lo, hi in bands)]
    for name, value in measured["values"].items():
        cells = []
        for lo, hi in bands:
            rows = (empties >= lo) & (empties <= hi)
            mse = float(np.mean((value[rows] - exact[rows]) ** 2))
            sign = float(np.mean(np.sign(np.round(value[rows], 6)) == exact[rows]))
            cells.append(f"{f'{mse:.3f} / {100 * sign:.0f}%':>22}")
        lines.append(f"{name + ' (MSE / sign)':36}" + "".join(cells))
    for name in ("policy_optimal", "prior_optimal"):
        label = {"policy_optimal": "search's policy target optimal", "prior_optimal": "raw prior's best optimal"}[name]
        cells = [f"{100 * float(np.mean(measured[name][(empties >= lo) & (empties <= hi)])):>21.0f}%"
                 for lo, hi in bands]
        lines.append(f"{label:36}" + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="builtin:6x6", help="a network (builtin:6x6, a workdir, ...)")
    parser.add_argument("--games", type=int, default=128)
    parser.add_argument("--sims", type=int, default=16, help="self-play simulations (othello6_cpu: 16)")
    parser.add_argument("--temperature-plies", type=int, default=8, help="othello6_cpu: 8")
    parser.add_argument("--td-lambda", type=float, default=0.98)
    parser.add_argument("--max-empties", type=int, default=20, help="solve positions with at most this many empties")
    parser.add_argument("--workers", type=int, default=2, help="solver processes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out, game, apply_fn, variables = play(args.checkpoint, args.games, args.sims, args.temperature_plies, args.seed)
    measured = measure(out, game, apply_fn, variables, args.max_empties, args.td_lambda, args.workers)
    print(f"{args.checkpoint}: {args.games} self-play games, {args.sims} simulations, seed {args.seed}; "
          f"{len(measured['exact'])} positions with <= {args.max_empties} empties solved exactly")
    print(report(measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())
