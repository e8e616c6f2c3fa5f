"""``search/traps.py``: root moves that lose to a wipeout by force within four or six plies, checked
against a plain-Python Othello (no bitboard shifts, no JAX) on the positions where
``othello8_cpu``'s two-hour network lost to greedy, and the players' rule that avoids them."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import search
from othello_jax.agents import parse_agent
from othello_jax.agents.neural import load_network, network_apply_fn, playing_search_config
from othello_jax.agents.specs import AgentSpecError
from othello_jax.game import Othello, State, play_transcript
from othello_jax.game.notation import parse_square
from othello_jax.search import traps
from othello_jax.solver.host import bitboards_from_u64

GAME = Othello(8)
DIRECTIONS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]
# games the network lost to greedy by a wipeout (RESULTS.md, 2026-11-28), cut where it walked into
# the trap: each cut position has a move that loses by force and one that does not
TRAP_LINES = {
    "d3c3f5f6c4c5e6f4d6c6": "e3",
    "e6f6c4c3f5f4d3c5e3f3": "d6",
    "c4e3f4g3e2c3d3f3c2c6e6d6h3": "c5",
    "d3c3e6f6c4e3f5d6f4g5c6c5b4a4f3g3b5b6": "b3",
    "e6d6c4f6d7c6c7e3c5b6b5a5f5d8f3g4d3e2c3c2": "b4",
}
# the game the shipped network still lost to greedy with the four-ply rule (RESULTS.md, 2026-11-28),
# cut where it played d3 with 2 discs against 11: greedy's g3 leaves all 14 of its answers lost in
# four plies; b7 is lost in four, the other five moves are not lost
DEEP_TRAP_LINE, DEEP_TRAP_MOVE = "e6d6c7f3c5c6e3c4c3", "d3"
# the only other position of 400 games against greedy with a move lost in six plies but not in four
OTHER_DEEP_TRAP_LINE = "f5f4g3c6e3f3c5d3c3"  # c4


def flipped(mover: int, opponent: int, square: int) -> int:
    """Discs flipped by the mover placing on ``square`` (plain Python, one direction at a time)."""
    row, col, out = square // 8, square % 8, 0
    for dr, dc in DIRECTIONS:
        r, c, run = row + dr, col + dc, 0
        while 0 <= r < 8 and 0 <= c < 8 and opponent >> (8 * r + c) & 1:
            run |= 1 << (8 * r + c)
            r, c = r + dr, c + dc
        if run and 0 <= r < 8 and 0 <= c < 8 and mover >> (8 * r + c) & 1:
            out |= run
    return out


def moves(mover: int, opponent: int) -> list[int]:
    """Legal placements, or [64] (a pass) when there are none but the opponent can move, or []."""
    empty = [s for s in range(64) if not (mover | opponent) >> s & 1]
    placements = [s for s in empty if flipped(mover, opponent, s)]
    if placements:
        return placements
    return [64] if any(flipped(opponent, mover, s) for s in empty) else []


def play(mover: int, opponent: int, square: int) -> tuple[int, int]:
    """The position after the move, from the other side."""
    if square == 64:
        return opponent, mover
    flips = flipped(mover, opponent, square)
    return opponent & ~flips, mover | flips | 1 << square


def can_wipe_out(mover: int, opponent: int) -> bool:
    return any(s < 64 and play(mover, opponent, s)[0] == 0 for s in moves(mover, opponent))


def forces_wipeout(mover: int, opponent: int, answers: int = traps.ANSWERS) -> bool:
    """The reference, four plies: the side to move wipes the other out at once, or has one of its
    first ``REPLIES`` replies after which every move of the other (a pass included; at most
    ``answers`` of them, the JAX check's bounds) allows a wipeout."""
    if can_wipe_out(mover, opponent):
        return True
    for reply in moves(mover, opponent)[: traps.REPLIES]:
        us = play(mover, opponent, reply)
        replies_to_it = moves(*us)
        if 0 < len(replies_to_it) <= answers and all(can_wipe_out(*play(*us, a)) for a in replies_to_it):
            return True
    return False


def loses_by_force(mover: int, opponent: int, square: int) -> bool:
    """After ``square`` the opponent forces a wipeout within its next two moves."""
    return forces_wipeout(*play(mover, opponent, square))


def loses_by_force_deep(mover: int, opponent: int, square: int) -> bool:
    """The reference, six plies: ``loses_by_force``, or the opponent has a reply (of its first
    ``REPLIES``) after which every answer of ours (at most ``DEEP_ANSWERS``) loses that way."""
    them = play(mover, opponent, square)
    if forces_wipeout(*them):
        return True
    for reply in moves(*them)[: traps.REPLIES]:
        us = play(*them, reply)
        answers = moves(*us)
        if 0 < len(answers) <= traps.DEEP_ANSWERS and all(forces_wipeout(*play(*us, a)) for a in answers):
            return True
    return False


def discs(state: State) -> tuple[int, int]:
    word = lambda b: int(np.asarray(b.lo)) | int(np.asarray(b.hi)) << 32
    return word(state.mover), word(state.opponent)


@functools.cache
def compiled_trapped():
    return jax.jit(functools.partial(traps.trapped, GAME))


def trapped_moves(state: State) -> tuple[np.ndarray, np.ndarray]:
    legal = np.flatnonzero(np.asarray(GAME.legal_moves(state)))
    padded = np.zeros(16, np.int32)  # one compiled shape for every position
    padded[: legal.size] = legal
    found = compiled_trapped()(jax.tree.map(lambda x: x[None], state), jnp.asarray(padded)[None])
    return legal, np.asarray(found)[0, : legal.size]


@pytest.mark.parametrize("line", sorted(TRAP_LINES))
def test_trapped_moves_match_a_plain_python_lookahead_where_the_network_lost(line):
    state, _ = play_transcript(line, GAME)
    legal, found = trapped_moves(state)
    mover, opponent = discs(state)
    expected = [loses_by_force(mover, opponent, int(square)) for square in legal]
    assert found.tolist() == expected
    played = parse_square(TRAP_LINES[line])
    assert found[legal.tolist().index(played)] and not found.all()  # the move it played was lost; one was not


def test_trapped_is_never_claimed_without_proof_on_random_positions():
    """Random games (plies 6-40): every move called trapped loses by force in the plain-Python
    lookahead (a trap beyond the bounds may be missed, a safe move is never called trapped)."""
    rng = np.random.default_rng(0)
    checked = 0
    for _game in range(12):
        state = GAME.init()
        for _ in range(int(rng.integers(6, 40))):
            legal = np.flatnonzero(np.asarray(GAME.legal_moves(state)))
            if legal.size == 0:
                break
            state = GAME.step(state, jnp.int32(rng.choice(legal)))
        legal, found = trapped_moves(state)
        if legal.size == 0 or legal.size > 16 or legal[0] == GAME.pass_action:
            continue
        mover, opponent = discs(state)
        for square, claim in zip(legal, found, strict=True):
            if claim:
                assert loses_by_force(mover, opponent, int(square))
        checked += 1
    assert checked >= 8


def test_kth_legal_counts_in_action_order():
    legal = jnp.array([[False, True, False, True, True], [False] * 5])
    action, exists = traps.kth_legal(legal, jnp.array([2, 0]))
    assert action.tolist() == [4, 0] and exists.tolist() == [True, False]


def test_the_rule_replaces_a_trapped_choice_by_the_next_safe_preference():
    """The search prefers the move that lost; the rule plays its next preferred move the rules
    cannot refute, and leaves a safe choice alone."""
    line = "d3c3f5f6c4c5e6f4d6c6"
    state, _ = play_transcript(line, GAME)
    legal_mask = GAME.legal_moves(state)[None]
    trap, other = parse_square("e3"), parse_square("b6")
    legal, found = trapped_moves(state)
    assert found[legal.tolist().index(trap)] and not found[legal.tolist().index(other)]
    third = next(int(m) for m, bad in zip(legal, found, strict=True) if not bad and m != other)
    policy = jnp.zeros((1, GAME.num_actions)).at[0, trap].set(0.6).at[0, other].set(0.3).at[0, third].set(0.1)
    rule = jax.jit(functools.partial(traps.avoid_traps, GAME))
    batch = jax.tree.map(lambda x: x[None], state)
    nothing_lost = jnp.zeros((1, GAME.num_actions), bool)
    assert int(rule(batch, jnp.array([trap]), policy, legal_mask, nothing_lost)[0]) == other
    assert int(rule(batch, jnp.array([other]), policy, legal_mask, nothing_lost)[0]) == other
    # a move the search proved lost is skipped like a trapped one
    assert int(rule(batch, jnp.array([trap]), policy, legal_mask, nothing_lost.at[0, other].set(True))[0]) == third


def test_the_players_search_walks_into_no_trap_of_the_lost_games():
    """``builtin:8x8``'s playing search on every cut position at once (the six-ply trap's too): with
    the rule no chosen move loses by force within six plies, and where the search's own choice
    (the rule off, same tree) was safe the rule kept it."""
    game, network_config, variables = load_network("builtin:8x8")
    apply_fn = network_apply_fn(game, network_config)
    states = [play_transcript(line, GAME)[0] for line in sorted(TRAP_LINES) + [DEEP_TRAP_LINE]]
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    chosen = {}
    for traps_on in (True, False):
        config = playing_search_config("gumbel", 32, traps=traps_on)
        assert config.avoid_traps == traps_on
        searched = jax.jit(functools.partial(search.run_search, config, apply_fn, game=game))
        chosen[traps_on] = np.asarray(searched(variables, batch, jax.random.key(0)).action)
    for state, with_rule, without in zip(states, chosen[True], chosen[False], strict=True):
        assert not loses_by_force_deep(*discs(state), int(with_rule))
        assert loses_by_force_deep(*discs(state), int(without)) or with_rule == without


def test_the_net_spec_turns_the_rule_off_and_refuses_other_values():
    assert parse_agent("net:preset=tiny,sims=2,traps=0", GAME) is not None
    with pytest.raises(AgentSpecError, match="traps must be 0"):
        parse_agent("net:preset=tiny,sims=2,traps=2", GAME)


def greedy_against_random(rng: np.random.Generator, plies: int) -> tuple[int, int]:
    """(mover, opponent) after ``plies`` moves of greedy (most discs flipped) against random, in
    plain Python: the random side runs short of discs, where the six-ply check runs."""
    mover, opponent = discs(GAME.init())
    for ply in range(plies):
        legal = moves(mover, opponent)
        if not legal:
            break
        most_flips = max(legal, key=lambda s: bin(flipped(mover, opponent, s)).count("1"))
        choice = most_flips if ply % 2 == 0 and legal != [64] else int(rng.choice(legal))
        mover, opponent = play(mover, opponent, choice)
    return mover, opponent


def as_states(positions: list[tuple[int, int]]) -> State:
    """(mover, opponent) pairs as one batch of states."""
    movers, opponents = zip(*positions, strict=True)
    return GAME.from_discs(bitboards_from_u64(movers), bitboards_from_u64(opponents), color=0)


def on_lines(square: int) -> int:
    """The squares on the eight lines through ``square`` (plain Python)."""
    bits = 0
    for dr, dc in DIRECTIONS:
        r, c = square // 8 + dr, square % 8 + dc
        while 0 <= r < 8 and 0 <= c < 8:
            bits |= 1 << (8 * r + c)
            r, c = r + dr, c + dc
    return bits


@pytest.mark.parametrize("squares_played_out", [traps.WIPE_SQUARES, 1])
def test_wipeout_available_matches_the_rules(monkeypatch, squares_played_out):
    """Against every placement played out in plain Python, on positions where wipeouts are near;
    with one square played out per position, the positions with more candidate squares take the
    every-square path, so both paths are checked."""
    monkeypatch.setattr(traps, "WIPE_SQUARES", squares_played_out)
    rng = np.random.default_rng(1)
    positions = [greedy_against_random(rng, int(rng.integers(4, 30))) for _ in range(200)]
    positions += [(opponent, mover) for mover, opponent in positions]  # greedy's side to move too
    found = np.asarray(jax.jit(lambda s: traps.wipeout_available(GAME, s))(as_states(positions)))
    expected = [can_wipe_out(*position) for position in positions]
    assert found.tolist() == expected
    assert 10 <= sum(expected) < len(positions)

    def crowded(mover: int, opponent: int) -> bool:
        covering = [s for s in moves(mover, opponent) if s < 64 and not opponent & ~on_lines(s)]
        return bin(opponent).count("1") > 1 and len(covering) > squares_played_out

    assert any(crowded(*position) for position in positions) == (squares_played_out == 1)


@functools.cache
def compiled_trapped_deep():
    return jax.jit(functools.partial(traps.trapped_deep, GAME))


def test_trapped_deep_matches_a_plain_python_six_ply_lookahead():
    """Every legal move of the position where the shipped network walked into a six-ply trap, of
    another such position, and of positions where greedy has taken most discs: the same verdict as
    the reference."""
    rng = np.random.default_rng(2)
    positions = [play_transcript(line, GAME)[0] for line in (DEEP_TRAP_LINE, OTHER_DEEP_TRAP_LINE)]
    while len(positions) < 10:
        mover, opponent = greedy_against_random(rng, int(rng.integers(7, 14)))
        if bin(mover).count("1") <= traps.DEEP_DISCS and moves(mover, opponent) not in ([], [64]):
            positions.append(jax.tree.map(lambda x: x[0], as_states([(mover, opponent)])))
    lost_found = 0
    for state in positions:
        legal = np.flatnonzero(np.asarray(GAME.legal_moves(state)))
        padded = np.zeros(8, np.int32)
        padded[: legal.size] = legal[:8]
        found = np.asarray(compiled_trapped_deep()(jax.tree.map(lambda x: x[None], state), jnp.asarray(padded)[None]))
        mover, opponent = discs(state)
        expected = [loses_by_force_deep(mover, opponent, int(square)) for square in legal[:8]]
        assert found[0, : min(legal.size, 8)].tolist() == expected
        lost_found += sum(expected) - sum(loses_by_force(mover, opponent, int(s)) for s in legal[:8])
    assert lost_found >= 2  # moves lost in six plies and not in four were there to be found
    state = positions[0]
    legal = np.flatnonzero(np.asarray(GAME.legal_moves(state))).tolist()
    verdict = np.asarray(compiled_trapped_deep()(jax.tree.map(lambda x: x[None], state),
                                                 jnp.asarray((legal + [0])[:8], jnp.int32)[None]))[0]
    assert verdict[legal.index(parse_square(DEEP_TRAP_MOVE))]
    assert not loses_by_force(*discs(state), parse_square(DEEP_TRAP_MOVE))  # the four-ply check cannot see it


def test_the_rule_checks_six_plies_deep_only_with_few_discs(monkeypatch):
    """With 2 discs the rule refuses the six-ply trap the search prefers; with the deep check's
    disc limit below our count it plays it (the four-ply check alone cannot see it)."""
    state, _ = play_transcript(DEEP_TRAP_LINE, GAME)
    trap = parse_square(DEEP_TRAP_MOVE)
    legal = [s for s in moves(*discs(state))]
    safe = next(s for s in legal if not loses_by_force_deep(*discs(state), s))
    policy = jnp.zeros((1, GAME.num_actions)).at[0, trap].set(0.7).at[0, safe].set(0.3)
    batch = jax.tree.map(lambda x: x[None], state)
    legal_mask = GAME.legal_moves(state)[None]
    nothing_lost = jnp.zeros((1, GAME.num_actions), bool)
    chosen, shipped_limit = {}, traps.DEEP_DISCS
    for limit in (shipped_limit, 1):
        monkeypatch.setattr(traps, "DEEP_DISCS", limit)
        rule = jax.jit(functools.partial(traps.avoid_traps, GAME))
        chosen[limit] = int(rule(batch, jnp.array([trap]), policy, legal_mask, nothing_lost)[0])
    assert chosen == {shipped_limit: safe, 1: trap}
