"""Wipeout traps: root moves after which the opponent forces a wipeout within four or six plies.

With game-ending moves valued exactly (``exact_endings``), the search sees a move that lets the
opponent take every disc at once. It does not see one ply deeper: a move after which the
opponent has a quiet reply that leaves every answer of ours open to a wipeout. All of the
wipeouts ``othello8_cpu``'s two-hour network still lost to greedy were of this kind (RESULTS.md,
2026-11-28): the prior puts little weight on the quiet reply, so 128 simulations never visit the
three plies below it. The rules prove such a trap in four plies, whatever the network thinks.
The one wipeout the shipped network still lost with that check was the same two moves deeper
(a reply after which every answer of ours is lost in four plies): :func:`trapped_deep` proves
that in six, where we have at most ``DEEP_DISCS`` discs. Moves lost in six plies and not in four
stood before the network with 2 discs in 400 games against greedy and with 3-5 in 200 against
alpha-beta 4, never with more (``experiments/trap_census.py``, RESULTS.md 2026-11-28).

The checks are bounded so that their cost is fixed: the search's top ``CANDIDATES`` root moves,
the opponent's first ``REPLIES`` legal replies (a trap found among them is a trap) and our
answers when we have at most ``ANSWERS`` (``DEEP_ANSWERS`` two plies below the root) of them
(with more, the position is not called a trap). So a move called trapped is always lost to a
wipeout by force; a trap outside those bounds is missed.

The checks are most of a player's compiled search (its first move's compile time follows the
program's size), so the program holds each piece once: the candidates' moves are played once
for both depths, one wipeout test serves a position and the lines after it, the crowded case
reuses the first group's loop body.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

CANDIDATES = 4  # root moves checked, in the search's order of preference
REPLIES = 16  # opponent replies tried per candidate
ANSWERS = 8  # our answers examined; with more legal answers a position is not a trap
DEEP_ANSWERS = 16  # our answers examined two plies below the root in the six-ply check
DEEP_DISCS = 6  # the six-ply check runs where we have at most this many discs
DEEP_LANES = 8  # roots checked six plies deep at once
WIPE_SQUARES = 4  # squares whose placement is played out per position in the wipeout test


@functools.cache
def _rays(size: int) -> tuple[np.ndarray, np.ndarray]:
    """uint32[N*N] (low and high words): the squares on the eight lines through each action's
    square, the square itself excluded: the only discs a placement there can flip."""
    lo, hi = np.zeros(size * size, np.uint32), np.zeros(size * size, np.uint32)
    for action in range(size * size):
        row, col, bits = action // size, action % size, 0
        for dr, dc in [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]:
            r, c = row + dr, col + dc
            while 0 <= r < size and 0 <= c < size:
                bits |= 1 << (r * 8 + c)
                r, c = r + dr, c + dc
        lo[action], hi[action] = bits & 0xFFFFFFFF, bits >> 32
    return lo, hi


def wipeout_available(game: Othello, states: State) -> jax.Array:
    """bool[...]: whether the mover has a legal move that flips every disc the opponent has.

    Only a square whose lines hold every opponent disc can; those are few once the opponent has
    two discs or more (any legal move takes a single one), so they are played out
    ``WIPE_SQUARES`` at a time, a group more only while some position has more of them (64
    placements per position would be most of the trap checks' cost). One loop body plays every
    group: the program holds the placement code once (the checks' compile time follows their
    size)."""
    squares = game.num_squares
    rays_lo, rays_hi = (jnp.asarray(words) for words in _rays(game.size))
    opponent = states.opponent
    covered = (((opponent.lo[..., None] & ~rays_lo) == 0) & ((opponent.hi[..., None] & ~rays_hi) == 0))
    legal = game.legal_moves(states)[..., :squares]
    single = bb.popcount(opponent) == 1
    candidates = legal & covered & ~single[..., None]
    # kth_legal's ranking, the cumulative sum taken once for all ranks (per rank: 2x the check's time)
    rank = jnp.cumsum(candidates, axis=-1, dtype=jnp.int32)
    widen = lambda b: bb.Bitboard(b.lo[..., None], b.hi[..., None])

    def group_takes_all(group: jax.Array) -> jax.Array:
        """Whether one of the candidates ranked group * WIPE_SQUARES + 1 .. + WIPE_SQUARES takes all."""
        ranks = group * WIPE_SQUARES + jnp.arange(1, WIPE_SQUARES + 1, dtype=jnp.int32)
        hit = candidates[..., None, :] & (rank[..., None, :] == ranks[:, None])
        action = jnp.argmax(hit, axis=-1).astype(jnp.int32)
        _, remaining = bb.play(widen(states.mover), widen(opponent), bb.square_bit(game.square_of_action(action)),
                               game.size)
        return jnp.any(jnp.any(hit, axis=-1) & ~bb.any_set(remaining), axis=-1)

    most = jnp.max(rank[..., -1], initial=0)  # candidates of the most crowded position
    _, takes_all = jax.lax.while_loop(
        lambda carry: carry[0] * WIPE_SQUARES < most,
        lambda carry: (carry[0] + 1, carry[1] | group_takes_all(carry[0])),
        (jnp.zeros((), jnp.int32), jnp.zeros(single.shape, bool)))
    return (takes_all | (single & jnp.any(legal, axis=-1))) & bb.any_set(opponent)


def kth_legal(legal: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The ``k``-th (0-based, in action order) legal action of each row of ``legal`` (bool[..., A];
    ``k`` broadcasts against [...]) and whether the row has that many (int32[...], bool[...])."""
    rank = jnp.cumsum(legal, axis=-1, dtype=jnp.int32)
    k = jnp.broadcast_to(k, rank.shape[:-1])
    hit = legal & (rank == k[..., None] + 1)
    return jnp.argmax(hit, axis=-1).astype(jnp.int32), jnp.any(hit, axis=-1)


def _widen(states: State, count: int) -> State:
    """Every leaf of a [B, ...] batch with ``count`` copies of each root: [B, count, ...]."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], count) + x.shape[1:]), states)


def _flat(states: State, dims: int) -> State:
    """The first ``dims`` axes of every leaf merged into one."""
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[dims:]), states)


def _after(game: Othello, states: State, moves: jax.Array) -> State:
    """The position after each of ``moves`` (int32[B, C]) at its root, flat: [B * C]."""
    return _flat(game.step(_widen(states, moves.shape[1]), moves), 2)


def _reply_then_answer(game: Othello, positions: State, replies: int,
                       answers: int) -> tuple[State, jax.Array, jax.Array]:
    """Every line of two plies from ``positions`` ([N], the opponent to move): the opponent's
    first ``replies`` legal replies, then our first ``answers`` legal answers.

    Returns the positions after each line [N, replies, answers], whether the line exists (bool,
    same shape) and whether we have at most ``answers`` answers after each reply (bool[N, replies]).
    One compiled ply for both (the rules composed in one expression take XLA minutes to compile)."""
    count = positions.mover.lo.shape[0]
    slot = np.arange(replies * answers)
    rank = jnp.asarray(np.stack([slot // answers, slot % answers]), jnp.int32)

    def ply(level: jax.Array, carry: tuple[State, jax.Array, jax.Array]) -> tuple[State, jax.Array, jax.Array]:
        at, real, few_answers = carry
        legal = game.legal_moves(at)
        action, exists = kth_legal(legal, rank[level])
        few_answers = jnp.where(level == 1, jnp.sum(legal, axis=-1) <= answers, few_answers)
        return game.step(at, action), real & exists, few_answers

    start = jnp.ones((count, slot.size), bool)
    after, real, few = jax.lax.fori_loop(0, 2, ply, (_widen(positions, slot.size), start, start))
    shape = (count, replies, answers)
    return jax.tree.map(lambda x: x.reshape(shape + x.shape[2:]), after), real.reshape(shape), \
        few.reshape(shape)[..., 0]


def _with_lines(positions: State, lines: State) -> State:
    """``positions`` ([N]) followed by the ``lines`` after them ([N, R, A], flat): one batch, so one
    check (compiled once) serves both."""
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b.reshape((-1,) + b.shape[3:])]), positions, lines)


def _a_reply_refutes_every_answer(refuted: jax.Array, real: jax.Array, few: jax.Array) -> jax.Array:
    """bool[N]: some reply after which every one of our (at most the examined) answers is
    ``refuted`` (bool[N, R, A]); ``real`` and ``few`` as :func:`_reply_then_answer` returns them."""
    every = jnp.all(refuted | ~real, axis=-1) & jnp.any(real, axis=-1) & few
    return jnp.any(every, axis=-1)


def forces_wipeout(game: Othello, positions: State, answers: int = ANSWERS) -> jax.Array:
    """bool[N]: at ``positions`` ([N], the opponent to move) the opponent takes every disc of ours
    at once, or has a reply (of its first ``REPLIES``) after which each of our legal answers (a
    pass included; at most ``answers`` of them) allows that. Four plies, proven by the rules."""
    after, real, few = _reply_then_answer(game, positions, REPLIES, answers)
    count = positions.mover.lo.shape[0]
    available = wipeout_available(game, _with_lines(positions, after))
    now, later = available[:count], available[count:].reshape(real.shape)
    return now | _a_reply_refutes_every_answer(later, real, few)


def trapped(game: Othello, states: State, moves: jax.Array) -> jax.Array:
    """bool[B, C]: whether each of ``moves`` (int32[B, C], legal at ``states``, leading axis B)
    loses to a wipeout by force within four plies: the opponent takes every disc at once, or has
    a reply after which each of our legal answers (a pass included) allows that."""
    batch, count = moves.shape
    after = _after(game, states, moves)
    return forces_wipeout(game, after).reshape(batch, count)


def trapped_deep(game: Othello, states: State, moves: jax.Array) -> jax.Array:
    """bool[B, C]: whether each of ``moves`` loses to a wipeout by force within six plies: it is
    :func:`trapped`, or the opponent has a reply after which each of our legal answers (at most
    ``DEEP_ANSWERS``) is itself lost that way within the next four plies.

    The four-ply check runs on the lines (reply, answer) that exist only, a quarter of the slots
    at a time: most of the 256 slots of a root are empty. Still ~100 times :func:`trapped`'s
    work: the players run it where we have few discs only (:func:`avoid_traps`)."""
    batch, count = moves.shape
    return _lost_within_six(game, _after(game, states, moves)).reshape(batch, count)


def _lost_within_six(game: Othello, after: State) -> jax.Array:
    """bool[N]: :func:`trapped_deep` of the positions ``after`` ([N], the opponent to move) our moves."""
    number = after.mover.lo.shape[0]
    lines, real, few = _reply_then_answer(game, after, REPLIES, DEEP_ANSWERS)
    # the roots' own four-ply check rides with the lines': one compiled check for both
    wanted = jnp.concatenate([jnp.ones(number, bool), (real & few[..., None]).reshape(-1)])
    forced = _where_in_chunks(lambda positions: forces_wipeout(game, positions), _with_lines(after, lines), wanted,
                              max(wanted.size // 4, 1))
    now, later = forced[:number], forced[number:].reshape(real.shape)
    return now | _a_reply_refutes_every_answer(later, real, few)


def _where_in_chunks(check: Callable[[Any], jax.Array], items: Any, wanted: jax.Array, size: int) -> jax.Array:
    """``check`` (a function of a batch of ``items``, leading axis N, returning bool[N]) on the
    items where ``wanted`` (bool[N]), False elsewhere: those are gathered ``size`` at a time, so
    the cost follows their number (none costs nothing) and the shapes stay static."""
    number = wanted.shape[0]
    chunks = -(-number // size)
    order = jnp.argsort(~wanted, stable=True).astype(jnp.int32)  # the wanted items first
    order = jnp.concatenate([order, jnp.zeros(chunks * size - number, jnp.int32)])
    positions = jnp.arange(number, dtype=jnp.int32)

    def chunk(index: jax.Array, found: jax.Array) -> jax.Array:
        pick = jax.lax.dynamic_slice(order, (index * size,), (size,))
        result = check(jax.tree.map(lambda x: x[pick], items)) & wanted[pick]
        return found | jnp.any((pick[:, None] == positions) & result[:, None], axis=0)

    todo = (jnp.sum(wanted, dtype=jnp.int32) + size - 1) // size
    return jax.lax.fori_loop(0, todo, chunk, jnp.zeros(number, bool))


def avoid_traps(game: Othello, states: State, action: jax.Array, policy: jax.Array, legal: jax.Array,
                lost: jax.Array) -> jax.Array:
    """The search's ``action`` (int32[B]), unless it is trapped or proven ``lost`` (bool[B, A]): then
    the first of the search's next preferred moves (by ``policy``, [B, A]) that is neither; the
    ``action`` stays where none of the ``CANDIDATES`` checked is safe.

    Where we have at most ``DEEP_DISCS`` discs, the move so chosen is also checked six plies deep
    (:func:`trapped_deep`); if it is lost there, the next safe candidate that is not is played
    (the four-ply choice stays if none is)."""
    preference = jnp.where(jax.nn.one_hot(action, policy.shape[-1], dtype=bool), 2.0, policy)
    preference = jnp.where(legal, preference, -1.0)
    _, candidates = jax.lax.top_k(preference, CANDIDATES)
    candidates = candidates.astype(jnp.int32)
    real = jnp.take_along_axis(legal, candidates, axis=-1) & (candidates < game.num_squares)
    # the positions after the candidates, made once for both depths' checks (the program holds one step)
    after = _after(game, states, candidates)
    trapped_now = forces_wipeout(game, after).reshape(candidates.shape)  # trapped(game, states, candidates)
    safe = real & ~trapped_now & ~jnp.take_along_axis(lost, candidates, axis=-1)
    chosen = jnp.where(jnp.any(safe, axis=-1), _first(candidates, safe), action)
    few_discs = bb.popcount(states.mover) <= DEEP_DISCS
    after_by_rank = jax.tree.map(lambda x: x.reshape(candidates.shape + x.shape[1:]), after)

    def next_candidate(rank: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        settled, move = carry  # settled: a candidate safe at both depths was found
        candidate, open_ = candidates[:, rank], ~settled & safe[:, rank]
        deep = _where_in_chunks(lambda positions: _lost_within_six(game, positions),  # trapped_deep's
                                jax.tree.map(lambda x: x[:, rank], after_by_rank), open_ & few_discs,
                                min(candidate.size, DEEP_LANES))
        accept = open_ & ~deep
        return settled | accept, jnp.where(accept, candidate, move)

    # in order of preference: most roots settle on their first safe candidate, checked once
    _, move = jax.lax.fori_loop(0, CANDIDATES, next_candidate, (jnp.zeros_like(few_discs), chosen))
    return move.astype(action.dtype)


def _first(candidates: jax.Array, allowed: jax.Array) -> jax.Array:
    """int32[B]: the first of ``candidates`` ([B, C]) that is ``allowed`` (the first one if none)."""
    return jnp.take_along_axis(candidates, jnp.argmax(allowed, axis=-1)[:, None], axis=-1)[:, 0]
