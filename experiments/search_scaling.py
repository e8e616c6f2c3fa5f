"""Why more search stops helping: one 6x6 network's value against exact values, and its
test-set score across simulation counts and play-time search settings.

    python -m experiments.search_scaling --checkpoint runs/othello6_cpu [--sims 0 16 128 400]
        [--set maxvisit_init=5 ...] [--no-variants] [--testset FILE [--positions N]]

On the perfect-play test set (500 positions, 12-24 empties, every move's exact value known; or
``--testset``, e.g. a labelled set, whose rows solved in full count) it prints:

- value calibration, by band of empties: the network's value ``v`` (mover's view) against the
  exact outcome ``z`` (sign of the exact disc value: +1 win, 0 draw, -1 loss): mean ``|v - z|``,
  the share of decisive positions where ``sign(v)`` names the winner, the correlation of ``v``
  with the exact disc value; the same for the root value of the largest search;
- move choice without search: the policy's top move, and the move whose child the value head
  likes best (one ply of value look-ahead), as share of optimal moves and disc loss per move;
  a value head that picks worse moves than the policy caps what search can add;
- the test-set score at each simulation count (``0`` = raw policy), Gumbel as in the arena, and
  split by how decided the position is (its exact value's size): a value head trained on the
  result alone (win/draw/loss) sees no difference between losing by 2 and by 20, so where every
  move loses (or wins) the search can only follow the policy;
- at the largest count, play-time settings: considered actions, the q-transform's
  ``value_scale`` and ``maxvisit_init``, and PUCT.

Everything is deterministic (zero Gumbel scale, no Dirichlet noise, fixed key).
"""

from __future__ import annotations

import argparse
import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax import search as search_lib
from othello_jax.agents.neural import playing_search_config
from othello_jax.checkpoint import load_agent_variables
from othello_jax.evaluation.perfect_set import TESTSET_BANDS, score_actions
from othello_jax.game import Othello
from othello_jax.model import make_network
from othello_jax.solver import solved_moves as ts


def _line(label: str, report) -> str:
    t = report.total
    bands = "  ".join(f"{h}-{lo}: {line.optimal:.1%}/{line.disc_loss:.2f}"
                      for (h, lo), line in report.bands.items() if line.moves)
    return (f"  {label:<34} optimal {t.optimal:6.1%} +- {(t.optimal_interval[1] - t.optimal_interval[0]) / 2:.1%}"
            f"   loss/move {t.disc_loss:5.2f}   [{bands}]")


def calibration(values: np.ndarray, testset: ts.TestSet, keep: np.ndarray) -> list[str]:
    """Lines comparing ``values`` (mover's view) with the exact outcomes, overall and by band."""
    exact = testset.best.astype(np.float64)
    outcome = np.sign(exact)
    lines = []
    for label, rows in [("all", keep)] + [(f"{h}-{lo}", keep & (testset.empties <= h) & (testset.empties >= lo))
                                          for h, lo in TESTSET_BANDS]:
        v, z, d = values[rows], outcome[rows], exact[rows]
        decisive = z != 0
        sign_ok = float(np.mean(np.sign(v[decisive]) == z[decisive])) if decisive.any() else float("nan")
        corr = float(np.corrcoef(v, d)[0, 1]) if len(v) > 2 else float("nan")
        lines.append(f"    {label:>6}: n={int(rows.sum()):3d}  mean|v-z| {np.mean(np.abs(v - z)):.3f}  "
                     f"winner named {sign_ok:.1%}  corr(v, exact discs) {corr:+.3f}  mean v {np.mean(v):+.3f} "
                     f"(mean z {np.mean(z):+.3f})")
    return lines


MARGINS = ((0, 4, "close, |value| <= 4"), (5, 12, "5 <= |value| <= 12"), (13, 64, "decided, |value| >= 13"))


def by_margin(testset: ts.TestSet, chosen: dict[int, np.ndarray]) -> list[str]:
    """Lines: each simulation count's score on the positions of each size of exact value."""
    lines = []
    size = np.abs(testset.best.astype(np.int64))
    for low, high, label in MARGINS:
        rows = np.flatnonzero((size >= low) & (size <= high))
        lines.append(f"  {label}: {len(rows)} positions")
        if len(rows):
            lines += [_line(f"  {sims}", score_actions(testset.take(rows), actions[rows]))
                      for sims, actions in chosen.items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a 6x6 training workdir or checkpoint directory")
    parser.add_argument("--sims", type=int, nargs="+", default=[0, 16, 128, 400])
    parser.add_argument("--batch", type=int, default=100, help="positions per search call")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="search settings changed in every search (e.g. maxvisit_init=5 rescale_values=false)")
    parser.add_argument("--no-variants", action="store_true", help="skip the play-time settings variants")
    parser.add_argument("--testset", default=None, help="a 6x6 test set or labelled set (default: the shipped one)")
    parser.add_argument("--positions", type=int, default=0,
                        help="score this many of its informative positions (seeded; 0: all)")
    args = parser.parse_args(argv)

    changes = {}
    for item in args.set:
        key, _, value = item.partition("=")
        default = playing_search_config("gumbel", 1).get(key)
        if default is None or not value:
            print(f"error: --set {item!r}: expected KEY=VALUE with a search setting as KEY", file=sys.stderr)
            return 2
        changes[key] = value.lower() in ("1", "true") if isinstance(default, bool) else type(default)(value)

    def playing(variant: str, sims: int, **more):
        config = playing_search_config(variant, sims)
        config.update({**changes, **more})
        return config

    network_config, variables, size = load_agent_variables(args.checkpoint)
    if size != 6:
        print(f"error: the test set is 6x6; {args.checkpoint} plays {size}x{size}", file=sys.stderr)
        return 2
    game = Othello(6)
    apply_fn = functools.partial(make_network(6, network_config).apply, train=False)
    testset = ts.load(args.testset)
    if testset.size != 6:
        print(f"error: {args.testset} is {testset.size}x{testset.size}; the network plays 6x6", file=sys.stderr)
        return 2
    informative_rows = np.flatnonzero(ts.informative(testset))
    if args.positions and args.positions < len(informative_rows):
        informative_rows = np.sort(np.random.default_rng(0).choice(informative_rows, args.positions, replace=False))
    testset = testset.take(informative_rows)
    keep = ts.informative(testset)
    states = ts.to_states(testset)
    rows = len(testset)
    key = jax.random.key(0)

    logits, values = jax.jit(lambda s: apply_fn(variables, game.observation(s)))(states)
    legal = np.asarray(game.legal_moves(states))
    print(f"checkpoint {args.checkpoint}: {network_config}; test set {int(keep.sum())} informative positions; "
          f"search changes: {changes or 'none'}")
    print("network value against the exact outcome (z = sign of the exact disc value):")
    print("\n".join(calibration(np.asarray(values, np.float64), testset, keep)))

    print("moves without search:")
    policy_move = np.argmax(np.where(legal, np.asarray(logits), -np.inf), axis=-1)
    print(_line("policy's top move", score_actions(testset, policy_move)))

    @jax.jit
    def child_values(states):
        """Every child's value from the mover's view: minus the child's (a move always hands the
        turn over; a pass is a move of its own), the exact result where the child ends the game."""
        def one(action):
            child = game.step(states, jnp.full(states.terminal.shape, action, jnp.int32))
            _, v = apply_fn(variables, game.observation(child))
            final = game.result_value(game.outcome(child)[1], network_config.value_margin).astype(v.dtype)
            return -jnp.where(child.terminal, final, v)
        return jax.vmap(one, out_axes=1)(jnp.arange(game.num_actions))

    look = np.asarray(child_values(states))
    value_move = np.argmax(np.where(legal, look, -np.inf), axis=-1)
    print(_line("value head, one ply", score_actions(testset, value_move)))

    def searched(config) -> tuple[np.ndarray, np.ndarray]:
        run = jax.jit(lambda s, k: search_lib.run_search(config, apply_fn, variables, s, k, game,
                                                         network_config.value_margin))
        actions, roots = [], []
        for start in range(0, rows, args.batch):
            part = jax.tree.map(lambda x: x[start:start + args.batch], states)
            out = run(part, jax.random.fold_in(key, start))
            actions.append(np.asarray(out.action))
            roots.append(np.asarray(out.root_value))
        return np.concatenate(actions), np.concatenate(roots)

    print("test-set score by simulations (gumbel, as in the arena):")
    root_values, chosen = None, {}
    for sims in args.sims:
        if sims == 0:
            chosen[sims] = policy_move
            print(_line("0 (raw policy)", score_actions(testset, policy_move)))
            continue
        chosen[sims], root_values = searched(playing("gumbel", sims))
        print(_line(f"{sims}", score_actions(testset, chosen[sims])))
    print("the same, by the size of the position's exact value (discs; mover's view):")
    print("\n".join(by_margin(testset, chosen)))
    top = max(args.sims)
    if root_values is not None:
        print(f"search root value at {top} simulations against the exact outcome:")
        print("\n".join(calibration(root_values.astype(np.float64), testset, keep)))

    if args.no_variants:
        return 0
    print(f"play-time settings at {top} simulations:")
    variants = [("gumbel, considered 4", "gumbel", {"max_num_considered_actions": 4}),
                ("gumbel, value_scale 0.02", "gumbel", {"value_scale": 0.02}),
                ("gumbel, value_scale 0.5", "gumbel", {"value_scale": 0.5}),
                ("gumbel, maxvisit_init 5", "gumbel", {"maxvisit_init": 5.0}),
                ("gumbel, rescale_values off", "gumbel", {"rescale_values": False}),
                ("puct", "puct", {})]
    for label, variant, more in variants:
        print(_line(label, score_actions(testset, searched(playing(variant, top, **more))[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
