"""Self-play: B games at once in one ``lax.scan`` over plies, moves chosen by the search.

The top-level function is :func:`play_games`; everything it does is jittable with static shapes::

    config = default_selfplay_config()
    resign = initial_resign_state(config)
    out, stats, resign = jax.jit(functools.partial(play_games, config, game, apply_fn,
                                                   search_config=search_config))(variables, key, resign)
    samples = out.training_samples()   # one flat Samples batch: game positions + harvested ones

Every ply all B games are searched; finished (or resigned) games keep their last state and their
rows are masked out. Per position the output keeps the policy target, the chosen value target
(``z``, ``q``, ``zq`` or ``lambda``), the search value ``q``, the final outcome ``z`` and the ply.
OLIVAW-style extra positions are harvested from each search tree (most visited non-root nodes).
Resignation ends a game when the searched value of the side to move falls below a threshold;
a fraction of games is always played out to measure false positives, and the threshold (an
explicit input and output, ``ResignState``) is adjusted to keep them under a target rate.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from othello_jax import search
from othello_jax.errors import InputError, need
from othello_jax.game import BLACK, Othello, State, play_transcript
from othello_jax.game.fusion import step_materialized
from othello_jax.game.lines import pad_lines, replay_lines
from othello_jax.search import keys as search_keys
from othello_jax.training.samples import Samples, final_boards, flatten, no_final_boards

VALUE_TARGETS = ("z", "q", "zq", "lambda")


# ---------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------
def default_selfplay_config() -> ml_collections.ConfigDict:
    """Self-play settings with defaults (the search itself is configured separately)."""
    c = ml_collections.ConfigDict()
    c.num_games = 256  # B, games played in parallel
    c.max_plies = 0  # scan length; 0 = squares - 4 placements + 6 passes; longer games are cut
    c.temperature = 1.0  # sample moves from target ** (1 / temperature) ...
    c.temperature_plies = 12  # ... while the game's ply is below this; then play the search's move
    c.value_target = "z"  # "z" outcome, "q" search value, "zq" their mean, "lambda" lambda-return
    c.td_lambda = 0.98
    c.exact_endgame_empties = 0  # > 0: value targets of positions with <= E empties solved exactly
    c.harvest = ml_collections.ConfigDict(dict(
        per_tree=0,  # extra positions taken from each search tree (OLIVAW); 0 = off
        min_visits=4,  # a node needs at least this many visits to be harvested
    ))
    c.resign = ml_collections.ConfigDict(dict(
        enabled=False,
        threshold=-0.9,  # initial threshold on the mover's searched value
        playout_fraction=0.1,  # games never resigned, to measure false positives
        target_false_positive_rate=0.05,
        min_threshold=-1.0,  # the adjusted threshold stays within [min, max]
        max_threshold=-0.5,
        max_change=0.05,  # per call
        min_triggered=4,  # playout games needed below a threshold to judge it
    ))
    return c


def check_selfplay_config(config: ml_collections.ConfigDict,
                          search_config: ml_collections.ConfigDict | None = None) -> None:
    """Raise a one-line ``InputError`` naming the first impossible setting.

    With ``search_config``, also the settings that self-play and the search must agree on.
    """
    need(int(config.num_games) >= 1, f"selfplay.num_games must be >= 1, got {config.num_games}")
    need(int(config.max_plies) >= 0, f"selfplay.max_plies must be >= 0, got {config.max_plies}")
    need(float(config.temperature) >= 0, f"selfplay.temperature must be >= 0, got {config.temperature}")
    need(config.value_target in VALUE_TARGETS,
         f"unknown selfplay.value_target {config.value_target!r}; choose from {', '.join(VALUE_TARGETS)}")
    need(0.0 <= float(config.td_lambda) <= 1.0, f"selfplay.td_lambda must be in [0, 1], got {config.td_lambda}")
    need(int(config.exact_endgame_empties) >= 0, "selfplay.exact_endgame_empties must be >= 0")
    need(int(config.harvest.per_tree) >= 0, "selfplay.harvest.per_tree must be >= 0")
    need(int(config.harvest.min_visits) >= 1, "selfplay.harvest.min_visits must be >= 1")
    r = config.resign
    need(0.0 <= float(r.playout_fraction) <= 1.0, "selfplay.resign.playout_fraction must be in [0, 1]")
    need(-1.0 <= float(r.min_threshold) <= float(r.max_threshold) <= 1.0,
         "selfplay.resign thresholds must satisfy -1 <= min_threshold <= max_threshold <= 1")
    need(0.0 < float(r.target_false_positive_rate) < 1.0,
         "selfplay.resign.target_false_positive_rate must be in (0, 1)")


def num_plies(config: ml_collections.ConfigDict, game: Othello) -> int:
    """Static length T of the self-play scan."""
    return int(config.max_plies) or game.num_squares - 4 + 6


# ---------------------------------------------------------------------------------------------
# resignation
# ---------------------------------------------------------------------------------------------
class ResignState(NamedTuple):
    """Resignation bookkeeping carried from one self-play call to the next (float32 scalars)."""

    threshold: jax.Array
    false_positive_rate: jax.Array  # measured on the last call's playout games


def initial_resign_state(config: ml_collections.ConfigDict) -> ResignState:
    return ResignState(jnp.float32(config.resign.threshold), jnp.float32(0.0))


_GRID = np.linspace(-1.0, 1.0, 201, dtype=np.float32)  # candidate thresholds, step 0.01


def false_positive_counts(min_value: jax.Array, result: jax.Array, counted: jax.Array,
                          thresholds: jax.Array) -> tuple[jax.Array, jax.Array]:
    """How many (game, side) pairs would resign below each threshold, and how many wrongly.

    min_value: [B, 2] lowest searched value each colour saw on its own moves.
    result: [B, 2] final result of each colour (+1 win, 0 draw, -1 loss).
    counted: [B] games that were played out (never resigned).
    Returns (triggered, false positives), int32 with the shape of ``thresholds``.
    """
    below = min_value[..., None] < thresholds  # [B, 2, K]
    below = below & counted[:, None, None]
    wrong = below & (result[..., None] >= 0)
    return jnp.sum(below, axis=(0, 1)), jnp.sum(wrong, axis=(0, 1))


def update_resign_state(config: ml_collections.ConfigDict, state: ResignState, min_value: jax.Array,
                        result: jax.Array, playout: jax.Array) -> ResignState:
    """Move the threshold toward the highest one whose false-positive rate is within target.

    A threshold is judged only where at least ``min_triggered`` played-out sides fell below it;
    if none qualifies and the current threshold is too aggressive, it is lowered. The change per
    call is at most ``max_change`` and the result stays within [min_threshold, max_threshold].
    """
    r = config.resign
    grid = jnp.asarray(_GRID)
    triggered, wrong = false_positive_counts(min_value, result, playout, grid)
    rate = wrong / jnp.maximum(triggered, 1)
    ok = (triggered >= int(r.min_triggered)) & (rate <= float(r.target_false_positive_rate))
    best = jnp.max(jnp.where(ok, grid, -jnp.inf))
    now_triggered, now_wrong = false_positive_counts(min_value, result, playout, state.threshold[None])
    now_rate = (now_wrong / jnp.maximum(now_triggered, 1))[0].astype(jnp.float32)
    too_many = now_rate > float(r.target_false_positive_rate)
    goal = jnp.where(jnp.isfinite(best), best, jnp.where(too_many, state.threshold - float(r.max_change),
                                                         state.threshold))
    step = jnp.clip(goal - state.threshold, -float(r.max_change), float(r.max_change))
    threshold = jnp.clip(state.threshold + step, float(r.min_threshold), float(r.max_threshold))
    return ResignState(threshold.astype(jnp.float32), now_rate)


# ---------------------------------------------------------------------------------------------
# openings
# ---------------------------------------------------------------------------------------------
def openings_from_transcripts(transcripts: Sequence[str], game: Othello) -> np.ndarray:
    """Transcripts (``"f5d6c3"``) -> int32 [K, L] action rows padded with -1, passes included.

    Raises ``NotationError`` (one line) for a malformed or illegal transcript.
    """
    return pad_lines([play_transcript(text, game)[1] for text in transcripts])


def play_openings(game: Othello, openings: jax.Array, index: jax.Array) -> State:
    """Start states after opening rows ``openings[index]`` (``NO_MOVE``-padded, passes written out)."""
    return replay_lines(jnp.asarray(openings, jnp.int32)[index], game).final


# ---------------------------------------------------------------------------------------------
# harvesting extra positions from search trees (OLIVAW)
# ---------------------------------------------------------------------------------------------
def harvest(tree, game: Othello, count: int, min_visits: int) -> Samples:
    """The ``count`` most visited non-root, non-terminal nodes of each tree ([B, count] Samples).

    Targets are the node's child visit distribution and its search value (mover's view).
    """
    batch, nodes = tree.node_visits.shape
    states: State = tree.embeddings
    visits = tree.node_visits
    child_visits = tree.children_visits  # [B, N, A]
    legal = game.legal_moves(states)  # [B, N, A]
    counts = jnp.where(legal, child_visits, 0)
    valid = (visits >= min_visits) & ~states.terminal & (jnp.sum(counts, axis=-1) > 0)
    valid = valid & (jnp.arange(nodes) > 0)
    score = jnp.where(valid, visits, -1)
    top, index = jax.lax.top_k(score, count)  # [B, count]
    take = lambda x: jnp.take_along_axis(x, index.reshape(index.shape + (1,) * (x.ndim - 2)), axis=1)
    picked_counts = take(counts).astype(jnp.float32)
    policy = picked_counts / jnp.maximum(jnp.sum(picked_counts, axis=-1, keepdims=True), 1.0)
    return Samples(
        state=jax.tree.map(take, states),
        policy=policy,
        value=take(tree.node_values).astype(jnp.float32),
        mask=top >= min_visits,
    )


# ---------------------------------------------------------------------------------------------
# value targets
# ---------------------------------------------------------------------------------------------
def lambda_returns(search_value: jax.Array, outcome: jax.Array, mask: jax.Array, td_lambda: float) -> jax.Array:
    """TD(lambda) targets over a game's positions, mover's view ([T, B] in, [T, B] out).

    ``G_t = -((1 - lambda) * q_{t+1} + lambda * G_{t+1})`` (the next position belongs to the
    other side), and ``G`` of a game's last position is its outcome. ``lambda = 1`` gives the
    outcome z, ``lambda = 0`` the negated search value of the next position.
    """
    last = mask & ~jnp.concatenate([mask[1:], jnp.zeros_like(mask[:1])], axis=0)

    def body(carry, xs):
        next_g, next_q = carry
        q, z, is_last = xs
        g = jnp.where(is_last, z, -((1.0 - td_lambda) * next_q + td_lambda * next_g))
        return (g, q), g

    zeros = jnp.zeros_like(search_value[0])
    _, g = jax.lax.scan(body, (zeros, zeros), (search_value, outcome, last), reverse=True)
    return jnp.where(mask, g, 0.0)


def value_targets(kind: str, search_value: jax.Array, outcome: jax.Array, mask: jax.Array,
                  td_lambda: float) -> jax.Array:
    """The value target chosen by ``kind`` (one of ``VALUE_TARGETS``), mover's view."""
    if kind == "z":
        return outcome
    if kind == "q":
        return search_value
    if kind == "zq":
        return 0.5 * (outcome + search_value)
    if kind == "lambda":
        return lambda_returns(search_value, outcome, mask, td_lambda)
    raise InputError(f"unknown value target {kind!r}; choose from {', '.join(VALUE_TARGETS)}")


def with_exact_values(samples: Samples, game: Othello, max_empties: int) -> Samples:
    """Replace value targets of positions with <= ``max_empties`` empties by the solved result."""
    from othello_jax.solver import exact_values  # imported only when the option is on

    flat = flatten(samples).state
    value, solved = exact_values(flat, game, max_empties)
    value = jnp.sign(value).astype(jnp.float32).reshape(samples.value.shape)
    solved = solved.reshape(samples.value.shape)
    return samples._replace(value=jnp.where(solved & samples.mask, value, samples.value))


# ---------------------------------------------------------------------------------------------
# self-play
# ---------------------------------------------------------------------------------------------
class SelfPlayOutput(NamedTuple):
    """Everything self-play produced; leading axes [T, B] (T plies, B games).

    samples: game positions with policy target, chosen value target and mask (False after the
        game ended or was resigned).
    search_value: root search value q (mover's view).
    outcome: final result z of the game for the mover (+1/0/-1; a resignation loses).
    ply: the position's ply number in its game.
    action: the move played.
    prior_entropy, target_entropy: policy entropies (nats) of the network prior and the target.
    harvested: extra positions from the search trees, leading axes [T, B, H].
    """

    samples: Samples
    search_value: jax.Array
    outcome: jax.Array
    ply: jax.Array
    action: jax.Array
    prior_entropy: jax.Array
    target_entropy: jax.Array
    harvested: Samples

    def training_samples(self) -> Samples:
        """Game and harvested positions as one flat Samples batch (static size T*B*(1+H))."""
        game_rows, extra_rows = flatten(self.samples), flatten(self.harvested)
        return jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=0), game_rows, extra_rows)


class SelfPlayStats(NamedTuple):
    """Scalar float32 metrics of one self-play call (``._asdict()`` for logging)."""

    games: jax.Array
    positions: jax.Array  # real game positions recorded for training
    moves: jax.Array  # moves played (= positions)
    harvested: jax.Array  # real harvested positions
    game_length: jax.Array  # mean plies per game
    black_win_rate: jax.Array
    white_win_rate: jax.Array
    draw_rate: jax.Array
    resign_rate: jax.Array  # games ended by resignation
    resign_false_positive_rate: jax.Array  # among played-out games that would have resigned
    resign_threshold: jax.Array  # after the update
    truncated_games: jax.Array  # still running after max_plies (scored by disc count)
    prior_entropy: jax.Array
    target_entropy: jax.Array
    search_value_abs: jax.Array  # mean |q|, a confidence gauge


class _Carry(NamedTuple):
    state: State
    active: jax.Array  # [B] game still running
    resigned: jax.Array  # [B] game ended by the mover resigning
    resigned_color: jax.Array  # [B] colour that resigned
    min_value: jax.Array  # [B, 2] lowest searched value per colour (its own moves)
    key: jax.Array


def _entropy(probs: jax.Array) -> jax.Array:
    return -jnp.sum(jnp.where(probs > 0, probs * jnp.log(jnp.maximum(probs, 1e-30)), 0.0), axis=-1)


def _result_per_color(game: Othello, final: State, resigned: jax.Array, resigned_color: jax.Array) -> jax.Array:
    """[B, 2] final result for black and white (resignation loses; cut games by disc count)."""
    sign, _ = game.outcome(final)  # mover's view
    black = jnp.where(final.color == BLACK, sign, -sign)
    black = jnp.where(resigned, jnp.where(resigned_color == BLACK, -1, 1), black)
    return jnp.stack([black, -black], axis=-1).astype(jnp.float32)


def play_games(config: ml_collections.ConfigDict, game: Othello, apply_fn: search.ApplyFn,
               variables: dict, key: jax.Array, resign_state: ResignState, *,
               search_config: ml_collections.ConfigDict,
               openings: jax.Array | None = None) -> tuple[SelfPlayOutput, SelfPlayStats, ResignState]:
    """Play ``config.num_games`` games against itself; returns (output, stats, new resign state).

    apply_fn(variables, observation) -> (logits, value): the network in inference mode.
    openings: optional int32 [K, L] action rows (see ``openings_from_transcripts``); each game
        starts after a random row. Its ply count includes the opening moves.
    All shapes are static (T = ``num_plies(config, game)``), so this can be jitted with
    ``config``, ``game``, ``apply_fn`` and ``search_config`` static.

    Under ``jax.vmap`` over ``key`` and/or ``resign_state`` (replay lanes; ``variables`` and
    ``openings`` unbatched) the lanes are *folded* into the game batch instead of vmapping the
    search (whose loops and conds would turn into selects computing every branch): see
    :func:`play_lanes`, which the vmap rule calls. Vmapped over ``variables`` it falls back to a
    plain vmap.
    """
    check_selfplay_config(config, search_config)
    search.check_search_config(search_config)

    def plain(variables, key, resign_state, openings):
        return _play(config, game, apply_fn, variables, key, resign_state, None, search_config, openings)

    folded = jax.custom_batching.custom_vmap(plain)

    @folded.def_vmap
    def fold_rule(axis_size, in_batched, variables, key, resign_state, openings):
        var_b, key_b, resign_b, open_b = in_batched
        if (any(jax.tree.leaves(var_b)) or any(jax.tree.leaves(open_b))  # not lanes: plain vmap
                or search_config.engine == "mctx"):
            axes = jax.tree.map(lambda b: 0 if b else None, tuple(in_batched))
            out = jax.vmap(plain, in_axes=axes)(variables, key, resign_state, openings)
            return out, jax.tree.map(lambda _: True, out)
        lane = lambda x, b: x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))
        keys = jax.tree.map(lane, key, key_b)
        resign = jax.tree.map(lane, resign_state, resign_b)
        out = play_lanes(config, game, apply_fn, variables, keys, resign, search_config=search_config,
                         openings=openings, check=False)
        return out, jax.tree.map(lambda _: True, out)

    return folded(variables, key, resign_state, openings)


def play_lanes(config: ml_collections.ConfigDict, game: Othello, apply_fn: search.ApplyFn,
               variables: dict, keys: jax.Array, resign_states: ResignState, *,
               search_config: ml_collections.ConfigDict, openings: jax.Array | None = None,
               check: bool = True) -> tuple[SelfPlayOutput, SelfPlayStats, ResignState]:
    """``L`` lanes of ``config.num_games`` games each, played as ONE batch of ``L * num_games`` games.

    keys: ``[L]`` keys; resign_states: a ``ResignState`` of ``[L]`` arrays (one threshold per lane).
    Returns what ``jax.vmap(play_games)`` over the lanes returns (output leaves ``[L, T, G, ...]``,
    stats and resign state ``[L]``), but the search runs once over all ``L * G`` roots, so its
    loops and conds stay loops and conds. Each game resigns at its own lane's threshold, and each
    lane's threshold is updated from its own games only (the cheap update is vmapped).

    Randomness: each lane keeps its own key. Every split and draw of the game, the search and
    the move choice is done per lane with the lane's key and shape
    (:mod:`othello_jax.search.keys`), so each lane plays exactly the games it would play alone
    (up to float reduction order in the network over a bigger batch), and the run does not
    depend on how lanes are spread over devices. Needs the lockstep engine (``search.engine =
    "mctx"`` takes one key per batch: ``play_games`` then falls back to a plain vmap).
    """
    if check:
        check_selfplay_config(config, search_config)
        search.check_search_config(search_config)
    lanes = int(jax.tree.leaves(resign_states)[0].shape[0])
    return _play(config, game, apply_fn, variables, keys, resign_states, lanes, search_config, openings)


def _play(config: ml_collections.ConfigDict, game: Othello, apply_fn: search.ApplyFn, variables: dict,
          key: jax.Array, resign_state: ResignState, lanes: int | None,
          search_config: ml_collections.ConfigDict,
          openings: jax.Array | None) -> tuple[SelfPlayOutput, SelfPlayStats, ResignState]:
    """Self-play of ``num_games`` games, or with ``lanes``, of ``lanes * num_games`` games split per lane."""
    per_lane = int(config.num_games)
    batch, plies = per_lane * (lanes or 1), num_plies(config, game)
    harvest_count = int(config.harvest.per_tree)
    resign_on = bool(config.resign.enabled)
    key, open_key, playout_key = search_keys.split(key, 3)

    if openings is None:
        start = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init())
    else:
        openings = jnp.asarray(openings, jnp.int32)
        index = search_keys.draw(lambda k, s: jax.random.randint(k, s, 0, openings.shape[0]), open_key, (batch,))
        start = play_openings(game, openings, index)
    playout = search_keys.draw(jax.random.uniform, playout_key, (batch,)) < float(config.resign.playout_fraction)
    # one threshold (no lanes) or each game its lane's threshold
    threshold = resign_state.threshold if lanes is None else jnp.repeat(resign_state.threshold, per_lane)

    def ply_fn(carry: _Carry, _):
        key, search_key, act_key = search_keys.split(carry.key, 3)
        state = carry.state
        result = search.run_search(search_config, apply_fn, variables, state, search_key, game)
        temperature = jnp.where(state.ply < int(config.temperature_plies), float(config.temperature), 0.0)
        action = search.select_action(result, temperature, act_key)
        active = carry.active

        value = result.root_value
        color = state.color.astype(jnp.int32)
        own = jax.nn.one_hot(color, 2, dtype=bool) & active[:, None]
        min_value = jnp.where(own, jnp.minimum(carry.min_value, value[:, None]), carry.min_value)
        resign_now = active & (value < threshold) & ~playout if resign_on else jnp.zeros_like(active)

        nxt = step_materialized(game, state, action)
        moving = active & ~resign_now
        nxt = jax.tree.map(lambda a, b: jnp.where(moving, a, b), nxt, state)
        new_carry = _Carry(
            state=nxt,
            active=moving & ~nxt.terminal,
            resigned=carry.resigned | resign_now,
            resigned_color=jnp.where(resign_now, color, carry.resigned_color),
            min_value=min_value,
            key=key,
        )
        prior = jax.nn.softmax(result.prior_logits)
        record = dict(
            state=state, policy=result.policy_target, mask=active, search_value=value,
            ply=state.ply.astype(jnp.int32), action=jnp.where(moving, action, -1),
            prior_entropy=_entropy(jnp.where(result.legal, prior, 0.0)),
            target_entropy=_entropy(result.policy_target), color=color,
        )
        if harvest_count:
            extra = harvest(result.tree, game, harvest_count, int(config.harvest.min_visits))
            record["harvested"] = extra._replace(mask=extra.mask & active[:, None])
        return new_carry, record

    carry = _Carry(
        state=start,
        active=~start.terminal,
        resigned=jnp.zeros((batch,), bool),
        resigned_color=jnp.zeros((batch,), jnp.int32),
        min_value=jnp.ones((batch, 2), jnp.float32),
        key=key,
    )
    final, rec = jax.lax.scan(ply_fn, carry, None, length=plies)
    played = mask = rec["mask"]  # every searched position of a running game

    result = _result_per_color(game, final.state, final.resigned, final.resigned_color)  # [B, 2]
    outcome = jnp.where(played, jnp.take_along_axis(result[None], rec["color"][..., None], axis=-1)[..., 0], 0.0)
    search_value = jnp.where(played, rec["search_value"], 0.0)
    values = value_targets(config.value_target, search_value, outcome, played, float(config.td_lambda))
    samples = Samples(state=rec["state"], policy=rec["policy"], value=values.astype(jnp.float32), mask=mask)
    if config.get("final_board", False):  # score/ownership targets (set by the run for such heads)
        ended = ~final.resigned & ~final.active
        samples = samples._replace(final=final_boards(final.state, rec["color"], mask & ended[None]))
        if harvest_count:  # tree nodes have no final board of their own
            rec["harvested"] = rec["harvested"]._replace(final=no_final_boards(rec["harvested"].mask.shape))
    # no harvest: an empty [T, B, 0] batch keeps the output structure the same
    harvested = rec["harvested"] if harvest_count else jax.tree.map(lambda x: x[:, :, None][:, :, :0], samples)
    empties = int(config.exact_endgame_empties)
    if empties:
        samples = with_exact_values(samples, game, empties)
        if harvest_count:
            harvested = with_exact_values(harvested, game, empties)

    output = SelfPlayOutput(
        samples=samples, search_value=search_value, outcome=outcome, ply=rec["ply"], action=rec["action"],
        prior_entropy=rec["prior_entropy"], target_entropy=rec["target_entropy"], harvested=harvested,
    )
    if lanes is None:
        new_resign = update_resign_state(config, resign_state, final.min_value, result, playout & ~final.resigned)
        if not resign_on:
            new_resign = resign_state
        stats = _stats(output, final, result, new_resign, played)
        return output, stats, new_resign

    # split the folded batch back into lanes: [T, L*G, ...] -> [L, T, G, ...], [L*G, ...] -> [L, G, ...]
    by_lane = lambda x: x.reshape((lanes, per_lane) + x.shape[1:])
    by_lane_t = lambda x: jnp.moveaxis(x.reshape(x.shape[:1] + (lanes, per_lane) + x.shape[2:]), 1, 0)
    output = jax.tree.map(by_lane_t, output)
    final = jax.tree.map(by_lane, final._replace(key=None))
    played = by_lane_t(played)
    result, playout = by_lane(result), by_lane(playout)
    if resign_on:
        update = functools.partial(update_resign_state, config)
        new_resign = jax.vmap(update)(resign_state, final.min_value, result, playout & ~final.resigned)
    else:
        new_resign = resign_state
    stats = jax.vmap(_stats)(output, final, result, new_resign, played)
    return output, stats, new_resign


def _stats(out: SelfPlayOutput, final: _Carry, result: jax.Array, resign: ResignState,
           played: jax.Array) -> SelfPlayStats:
    mask = out.samples.mask
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    positions = jnp.sum(mask)
    mean = lambda x: jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(positions, 1)
    black = result[:, 0]
    return SelfPlayStats(
        games=f32(mask.shape[1]),
        positions=f32(positions),
        moves=f32(jnp.sum(played)),
        harvested=f32(jnp.sum(out.harvested.mask)),
        game_length=f32(jnp.mean(final.state.ply)),
        black_win_rate=f32(jnp.mean(black > 0)),
        white_win_rate=f32(jnp.mean(black < 0)),
        draw_rate=f32(jnp.mean(black == 0)),
        resign_rate=f32(jnp.mean(final.resigned)),
        resign_false_positive_rate=resign.false_positive_rate,
        resign_threshold=resign.threshold,
        truncated_games=f32(jnp.sum(final.active)),
        prior_entropy=f32(mean(out.prior_entropy)),
        target_entropy=f32(mean(out.target_entropy)),
        search_value_abs=f32(mean(jnp.abs(out.search_value))),
    )
