"""Self-play: games against itself in one ``lax.scan`` over plies that records; targets derived after.

One entry point, jittable with static shapes, for ``L`` explicit lanes of ``settings.num_games``
games each::

    settings = SelfPlaySettings.from_config(config.selfplay)
    search = SearchSettings.from_config(config.search)
    keys = jax.random.split(key, L)                       # one key per lane
    resign = lane_resign_states(settings, L)              # one threshold per lane
    out, stats, resign = jax.jit(functools.partial(play_games, settings, search, game, apply_fn))(
        variables, keys, resign)                          # leaves [L, T, G, ...], [L], [L]

The scan body plays one move of every game and records it (position, search target and value,
move, ply, colour, whether the game was running, entropies; harvested tree positions when on).
Everything else is derived from the record afterwards by small functions: each game's result,
the outcome per position, the value target (``z``, ``q``, ``zq`` or ``lambda``), exact endgame
values, final boards, the resignation threshold's update and the statistics. Every optional
feature enters through one seam and costs nothing when off.

Finished (or resigned) games keep their last state and their rows are masked out. Resignation
ends a game when the searched value of the side to move falls below its lane's threshold; a
fraction of games is always played out to measure false positives, and each lane's threshold
(an explicit input and output, ``ResignState``) is moved to keep them under a target rate.

Lanes are folded into one search batch of ``L * G`` roots, so the search's loops stay loops
(a ``vmap`` over lanes would run each until every lane is done). Every split and draw of the
game, the search and the move choice is per lane, with the lane's key and shape
(:mod:`othello_jax.search.keys`), so each lane plays exactly the games it would alone (up to
float reduction order in the network over a bigger batch) and the run does not depend on how
lanes are spread over devices. ``search.engine = "mctx"`` takes one key per batch: its lanes
are vmapped instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import BLACK, Othello, State, play_transcript
from othello_jax.game.fusion import step_materialized
from othello_jax.game.lines import pad_lines, replay_lines
from othello_jax.search import ApplyFn, run_search, select_action
from othello_jax.search import keys as search_keys
from othello_jax.search.search_settings import SearchSettings
from othello_jax.solver import exact_values
from othello_jax.training.compiled.samples import Samples, final_boards, flatten, no_final_boards
from othello_jax.training.settings.selfplay_settings import (
    VALUE_TARGETS,
    HarvestSettings,
    ResignSettings,
    SelfPlaySettings,
    check_selfplay_config,
    default_selfplay_config,
    num_plies,
)

__all__ = [
    "VALUE_TARGETS", "HarvestSettings", "ResignSettings", "ResignState", "SelfPlayOutput", "SelfPlaySettings",
    "SelfPlayStats", "check_selfplay_config", "default_selfplay_config", "false_positive_counts", "harvest",
    "initial_resign_state", "lambda_returns", "lane_resign_states", "num_plies", "openings_from_transcripts",
    "play_games", "play_openings", "update_resign_state", "value_targets", "with_exact_values",
]


# ---------------------------------------------------------------------------------------------
# resignation
# ---------------------------------------------------------------------------------------------
class ResignState(NamedTuple):
    """Resignation bookkeeping carried from one self-play call to the next (float32 scalars, or [L])."""

    threshold: jax.Array
    false_positive_rate: jax.Array  # measured on the last call's playout games


def initial_resign_state(settings: SelfPlaySettings) -> ResignState:
    """One lane's starting threshold."""
    return ResignState(jnp.float32(settings.resign.threshold), jnp.float32(0.0))


def lane_resign_states(settings: SelfPlaySettings, lanes: int) -> ResignState:
    """The starting thresholds of ``lanes`` lanes ([L] arrays)."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (lanes,)), initial_resign_state(settings))


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


def update_resign_state(r: ResignSettings, state: ResignState, min_value: jax.Array,
                        result: jax.Array, playout: jax.Array) -> ResignState:
    """Move the threshold toward the highest one whose false-positive rate is within target.

    A threshold is judged only where at least ``min_triggered`` played-out sides fell below it;
    if none qualifies and the current threshold is too aggressive, it is lowered. The change per
    call is at most ``max_change`` and the result stays within [min_threshold, max_threshold].
    """
    grid = jnp.asarray(_GRID)
    triggered, wrong = false_positive_counts(min_value, result, playout, grid)
    rate = wrong / jnp.maximum(triggered, 1)
    ok = (triggered >= r.min_triggered) & (rate <= r.target_false_positive_rate)
    best = jnp.max(jnp.where(ok, grid, -jnp.inf))
    now_triggered, now_wrong = false_positive_counts(min_value, result, playout, state.threshold[None])
    now_rate = (now_wrong / jnp.maximum(now_triggered, 1))[0].astype(jnp.float32)
    too_many = now_rate > r.target_false_positive_rate
    goal = jnp.where(jnp.isfinite(best), best, jnp.where(too_many, state.threshold - r.max_change, state.threshold))
    step = jnp.clip(goal - state.threshold, -r.max_change, r.max_change)
    threshold = jnp.clip(state.threshold + step, r.min_threshold, r.max_threshold)
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
    """The value target chosen by ``kind`` (one of ``VALUE_TARGETS``, checked by the settings), mover's view."""
    targets: dict[str, Callable[[], jax.Array]] = {
        "z": lambda: outcome,
        "q": lambda: search_value,
        "zq": lambda: 0.5 * (outcome + search_value),
        "lambda": lambda: lambda_returns(search_value, outcome, mask, td_lambda),
    }
    return targets[kind]()


def with_exact_values(samples: Samples, game: Othello, max_empties: int) -> Samples:
    """Replace value targets of positions with <= ``max_empties`` empties by the solved result."""
    flat = flatten(samples).state
    value, solved = exact_values(flat, game, max_empties)
    value = jnp.sign(value).astype(jnp.float32).reshape(samples.value.shape)
    solved = solved.reshape(samples.value.shape)
    return samples._replace(value=jnp.where(solved & samples.mask, value, samples.value))


# ---------------------------------------------------------------------------------------------
# self-play: the record
# ---------------------------------------------------------------------------------------------
class SelfPlayOutput(NamedTuple):
    """Everything self-play produced; leading axes [T, B] (T plies, B games) within a lane.

    samples: game positions with policy target, chosen value target and mask (False after the
        game ended or was resigned).
    search_value: root search value q (mover's view).
    outcome: final result z of the game for the mover (+1/0/-1; a resignation loses).
    ply: the position's ply number in its game.
    action: the move played (-1 where none was: the game was over or the mover resigned).
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
    """Scalar float32 metrics of one lane's self-play (``._asdict()`` for logging)."""

    games: jax.Array
    positions: jax.Array  # real game positions recorded for training
    moves: jax.Array  # moves played (= positions)
    harvested: jax.Array  # extra positions harvested from search trees
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


class Ply(NamedTuple):
    """What the scan records of one ply of every game ([B] leading axis; [T, B] after the scan)."""

    state: State
    policy: jax.Array  # the search's policy target
    search_value: jax.Array  # root value, mover's view
    action: jax.Array  # the move played, -1 where none (game over, or the mover resigned)
    ply: jax.Array
    color: jax.Array  # the mover's colour
    mask: jax.Array  # the game was running at this ply
    prior_entropy: jax.Array
    target_entropy: jax.Array
    harvested: Samples | None  # [B, H] tree positions, None when harvesting is off


class Running(NamedTuple):
    """The scan's carry: every game's position, whether it still runs, the key."""

    state: State
    active: jax.Array
    key: jax.Array


def _entropy(probs: jax.Array) -> jax.Array:
    return -jnp.sum(jnp.where(probs > 0, probs * jnp.log(jnp.maximum(probs, 1e-30)), 0.0), axis=-1)


def _start(game: Othello, batch: int, openings: jax.Array | None, key: jax.Array) -> State:
    """Every game's first position: the initial board, or after a random opening row per game."""
    if openings is None:
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init())
    openings = jnp.asarray(openings, jnp.int32)
    index = search_keys.draw(lambda k, s: jax.random.randint(k, s, 0, openings.shape[0]), key, (batch,))
    return play_openings(game, openings, index)


def _record(settings: SelfPlaySettings, search: SearchSettings, game: Othello, apply_fn: ApplyFn, variables: Any,
            may_resign: jax.Array | None):
    """The scan body: search every game, play (or resign) one move, record the ply.

    ``may_resign``: [B] each game's threshold on its searched value (-inf for played-out games),
    or None when resignation is off.
    """
    def body(carry: Running, _) -> tuple[Running, Ply]:
        key, search_key, act_key = search_keys.split(carry.key, 3)
        state, active = carry.state, carry.active
        result = run_search(search, apply_fn, variables, state, search_key, game)
        temperature = jnp.where(state.ply < settings.temperature_plies, settings.temperature, 0.0)
        action = select_action(result, temperature, act_key)
        resigns = active & (result.root_value < may_resign) if may_resign is not None else jnp.zeros_like(active)
        moving = active & ~resigns
        nxt = jax.tree.map(lambda a, b: jnp.where(moving, a, b), step_materialized(game, state, action), state)
        harvested = None
        if settings.harvest.per_tree:
            extra = harvest(result.tree, game, settings.harvest.per_tree, settings.harvest.min_visits)
            harvested = extra._replace(mask=extra.mask & active[:, None])
        prior = jax.nn.softmax(result.prior_logits)
        ply = Ply(state=state, policy=result.policy_target, search_value=result.root_value,
                  action=jnp.where(moving, action, -1), ply=state.ply.astype(jnp.int32),
                  color=state.color.astype(jnp.int32), mask=active,
                  prior_entropy=_entropy(jnp.where(result.legal, prior, 0.0)),
                  target_entropy=_entropy(result.policy_target), harvested=harvested)
        return Running(nxt, moving & ~nxt.terminal, key), ply

    return body


# ---------------------------------------------------------------------------------------------
# self-play: what is derived from the record
# ---------------------------------------------------------------------------------------------
class Ending(NamedTuple):
    """How each game ended ([B] leading axis)."""

    final: State  # the last position
    running: jax.Array  # still running after the last ply (cut at max_plies)
    resigned: jax.Array  # the mover resigned
    result: jax.Array  # [B, 2] float32 result for black and white (+1/0/-1)
    min_value: jax.Array  # [B, 2] lowest searched value each colour saw on its own moves (1 if none)


def _ending(game: Othello, final: Running, rec: Ply) -> Ending:
    """Each game's end from the last carry and the record: resignations, results, lowest values."""
    resign_at = rec.mask & (rec.action < 0)  # a running game whose mover did not move
    resigned = jnp.any(resign_at, axis=0)
    resigned_color = jnp.max(jnp.where(resign_at, rec.color, 0), axis=0)
    sign, _ = game.outcome(final.state)  # mover's view
    black = jnp.where(final.state.color == BLACK, sign, -sign)
    black = jnp.where(resigned, jnp.where(resigned_color == BLACK, -1, 1), black)
    result = jnp.stack([black, -black], axis=-1).astype(jnp.float32)
    own = jax.nn.one_hot(rec.color, 2, dtype=bool) & rec.mask[..., None]  # [T, B, 2]
    min_value = jnp.min(jnp.where(own, rec.search_value[..., None], 1.0), axis=0)
    return Ending(final.state, final.active, resigned, result, min_value)


def _samples(settings: SelfPlaySettings, game: Othello, rec: Ply, end: Ending) -> SelfPlayOutput:
    """Outcomes, value targets, final boards and exact values over the record ([T, B] leaves)."""
    mask = rec.mask
    outcome = jnp.where(mask, jnp.take_along_axis(end.result[None], rec.color[..., None], axis=-1)[..., 0], 0.0)
    search_value = jnp.where(mask, rec.search_value, 0.0)
    values = value_targets(settings.value_target, search_value, outcome, mask, settings.td_lambda)
    samples = Samples(state=rec.state, policy=rec.policy, value=values.astype(jnp.float32), mask=mask)
    # no harvest: an empty [T, B, 0] batch keeps the output structure the same
    harvested = rec.harvested if settings.harvest.per_tree else jax.tree.map(lambda x: x[:, :, None][:, :, :0],
                                                                             samples)
    if settings.final_board:  # score/ownership targets; tree nodes have no final board of their own
        ended = ~end.resigned & ~end.running
        samples = samples._replace(final=final_boards(end.final, rec.color, mask & ended[None]))
        harvested = harvested._replace(final=no_final_boards(harvested.mask.shape))
    if settings.exact_endgame_empties:
        samples = with_exact_values(samples, game, settings.exact_endgame_empties)
        if settings.harvest.per_tree:
            harvested = with_exact_values(harvested, game, settings.exact_endgame_empties)
    return SelfPlayOutput(samples=samples, search_value=search_value, outcome=outcome, ply=rec.ply,
                          action=rec.action, prior_entropy=rec.prior_entropy, target_entropy=rec.target_entropy,
                          harvested=harvested)


def _stats(out: SelfPlayOutput, end: Ending, resign: ResignState) -> SelfPlayStats:
    """One lane's statistics."""
    mask = out.samples.mask
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    positions = jnp.sum(mask)
    mean = lambda x: jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(positions, 1)
    black = end.result[:, 0]
    return SelfPlayStats(
        games=f32(mask.shape[1]),
        positions=f32(positions),
        moves=f32(jnp.sum(mask)),
        harvested=f32(jnp.sum(out.harvested.mask)),
        game_length=f32(jnp.mean(end.final.ply)),
        black_win_rate=f32(jnp.mean(black > 0)),
        white_win_rate=f32(jnp.mean(black < 0)),
        draw_rate=f32(jnp.mean(black == 0)),
        resign_rate=f32(jnp.mean(end.resigned)),
        resign_false_positive_rate=resign.false_positive_rate,
        resign_threshold=resign.threshold,
        truncated_games=f32(jnp.sum(end.running)),
        prior_entropy=f32(mean(out.prior_entropy)),
        target_entropy=f32(mean(out.target_entropy)),
        search_value_abs=f32(mean(jnp.abs(out.search_value))),
    )


def _by_lane(tree: Any, lanes: int, games: int, time_first: bool = False) -> Any:
    """The folded games axis split per lane: [L*G, ...] -> [L, G, ...], or [T, L*G, ...] -> [L, T, G, ...]."""
    if time_first:
        return jax.tree.map(lambda x: jnp.moveaxis(x.reshape(x.shape[:1] + (lanes, games) + x.shape[2:]), 1, 0), tree)
    return jax.tree.map(lambda x: x.reshape((lanes, games) + x.shape[1:]), tree)


def _per_lane(fn: Callable, lanes: int, *args: Any) -> Any:
    """``fn`` on each lane's slice of ``args`` (leading axis L), results stacked per lane."""
    if lanes == 1:  # no vmap: the one lane computes exactly what it computes alone
        return jax.tree.map(lambda x: x[None], fn(*jax.tree.map(lambda x: x[0], args)))
    return jax.vmap(fn)(*args)


# ---------------------------------------------------------------------------------------------
# self-play: the entry point
# ---------------------------------------------------------------------------------------------
def play_games(settings: SelfPlaySettings, search: SearchSettings, game: Othello, apply_fn: ApplyFn,
               variables: Any, keys: jax.Array, resign: ResignState,
               openings: jax.Array | None = None) -> tuple[SelfPlayOutput, SelfPlayStats, ResignState]:
    """``L`` lanes of ``settings.num_games`` games, played as one batch; returns (output, stats, resign).

    keys: ``[L]`` keys, one per lane; resign: a ``ResignState`` of ``[L]`` arrays (each lane's
    threshold, updated from its own games). Output leaves ``[L, T, G, ...]``, stats and resign
    ``[L]``. apply_fn(variables, observation) -> (logits, value): the network in inference mode.
    openings: optional int32 [K, M] action rows (``openings_from_transcripts``); each game
    starts after a random row (its ply count includes the opening moves).
    """
    lanes = int(resign.threshold.shape[0])
    if search.engine == "mctx" and lanes > 1:  # mctx draws one key per search batch: lanes vmapped
        one = lambda k, r: play_games(settings, search, game, apply_fn, variables, k[None],
                                      jax.tree.map(lambda x: x[None], r), openings)
        return jax.tree.map(lambda x: x[:, 0], jax.vmap(one)(keys, resign))
    batch = lanes * settings.num_games
    key, open_key, playout_key = search_keys.split(keys[0] if lanes == 1 else keys, 3)
    start = _start(game, batch, openings, open_key)
    may_resign = playout = None
    if settings.resign.enabled:  # played-out games never resign (-inf)
        playout = search_keys.draw(jax.random.uniform, playout_key, (batch,)) < settings.resign.playout_fraction
        may_resign = jnp.where(playout, -jnp.inf, jnp.repeat(resign.threshold, settings.num_games))
    body = _record(settings, search, game, apply_fn, variables, may_resign)
    final, rec = jax.lax.scan(body, Running(start, ~start.terminal, key), None, length=num_plies(settings, game))
    end = _ending(game, final, rec)
    out = _by_lane(_samples(settings, game, rec, end), lanes, settings.num_games, time_first=True)
    end = _by_lane(end, lanes, settings.num_games)
    if settings.resign.enabled:
        update = functools.partial(update_resign_state, settings.resign)
        played_out = _by_lane(playout, lanes, settings.num_games) & ~end.resigned
        resign = _per_lane(update, lanes, resign, end.min_value, end.result, played_out)
    return out, _per_lane(_stats, lanes, out, end, resign), resign
