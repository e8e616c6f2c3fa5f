"""Environment steps per second: othello_jax vs pgx's Othello, side by side in one run.

Both environments run the same loop: a jitted ``lax.scan`` over plies of B games, each ply
choosing an action from the legal mask (uniformly at random, or deterministically the first
legal action), stepping, and restarting finished games. Usage::

    python -m experiments.bench_env [--batch 1024 8192] [--plies 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp

from experiments.timing import timed


def choose(legal: jax.Array, key: jax.Array, random_policy: bool) -> jax.Array:
    """Uniform random legal action (Gumbel-max over the mask) or the first legal one."""
    if random_policy:
        noise = jax.random.gumbel(key, legal.shape)
        return jnp.argmax(jnp.where(legal, noise, -jnp.inf), axis=-1).astype(jnp.int32)
    return jnp.argmax(legal, axis=-1).astype(jnp.int32)


def make_rollout(init_batch, policy_fn: Callable, step_fn: Callable, done_fn: Callable,
                 plies: int) -> Callable:
    """A jitted function running ``plies`` batched steps with auto-restart of finished games."""

    def rollout(state, key):
        def body(state, key):
            action = policy_fn(state, key)
            nxt = step_fn(state, action)
            done = done_fn(nxt)
            nxt = jax.tree.map(lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b),
                               init_batch, nxt)
            return nxt, done.sum()

        state, finished = jax.lax.scan(body, state, jax.random.split(key, plies))
        return state, finished.sum()

    return jax.jit(rollout)


def othello_jax_env(batch: int, random_policy: bool, native: bool):
    """othello_jax with the policy read from the bitboard (native) or from the action mask."""
    from othello_jax.game import Othello

    game = Othello(8)
    init = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init())
    if native:
        policy = game.random_legal_action if random_policy else (lambda s, key: game.first_legal_action(s))
    else:
        policy = lambda s, key: choose(game.legal_moves(s), key, random_policy)
    return init, policy, game.step, lambda s: s.terminal


def pgx_env(batch: int, random_policy: bool, native: bool = True):
    """pgx's Othello; its native form of the legal moves is the action mask."""
    import pgx

    env = pgx.make("othello")
    init = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), batch))
    policy = lambda s, key: choose(s.legal_action_mask, key, random_policy)
    return init, policy, jax.vmap(env.step), lambda s: s.terminated


def measure(env_factory, batch: int, plies: int, random_policy: bool, repeats: int, native: bool = True) -> float:
    """Best-of-``repeats`` environment steps per second."""
    init, policy_fn, step_fn, done_fn = env_factory(batch, random_policy, native)
    rollout = make_rollout(init, policy_fn, step_fn, done_fn, plies)
    state, _ = rollout(init, jax.random.key(1))
    jax.block_until_ready(state)
    best = float("inf")
    for r in range(repeats):
        (state, _), watch = timed(rollout, state, jax.random.key(r))
        best = min(best, watch.wall)
    return batch * plies / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1024, 8192])
    parser.add_argument("--plies", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"backend {jax.default_backend()}, {jax.device_count()} device(s), jax {jax.__version__}")
    print("policy: each env reads legal moves in its native form (othello_jax: bitboard; pgx: mask);")
    print("'mask' runs othello_jax through the same (N*N+1)-wide mask code as pgx, for reference.")
    header = (f"{'batch':>6} {'policy':>13} {'othello_jax/s':>14} {'pgx/s':>12} {'ratio':>7} "
              f"{'ojax mask/s':>12} {'ratio':>7}")
    print(header)
    for batch in args.batch:
        for random_policy in (True, False):
            ours = measure(othello_jax_env, batch, args.plies, random_policy, args.repeats, native=True)
            ours_mask = measure(othello_jax_env, batch, args.plies, random_policy, args.repeats, native=False)
            theirs = measure(pgx_env, batch, args.plies, random_policy, args.repeats)
            name = "random" if random_policy else "deterministic"
            print(f"{batch:>6} {name:>13} {ours:>14,.0f} {theirs:>12,.0f} {ours / theirs:>6.1f}x"
                  f" {ours_mask:>12,.0f} {ours_mask / theirs:>6.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
