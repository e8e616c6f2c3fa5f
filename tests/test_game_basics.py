"""Known facts on every board size, state size, and jit/vmap/shard_map compatibility."""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import Othello, parse_square, perft, play_transcript, state_nbytes
from tests.game_helpers import ReferenceOthello, random_games

pytestmark = pytest.mark.core


def legal_names(game, state):
    mask = np.asarray(game.legal_moves(state))
    from othello_jax.game import square_name
    return sorted(square_name(int(a), game.size) for a in np.nonzero(mask)[0])


@pytest.mark.parametrize("size,expected", [(8, ["c4", "d3", "e6", "f5"]), (6, ["b3", "c2", "d5", "e4"]),
                                           (4, ["a2", "b1", "c4", "d3"])])
def test_start_position_and_first_moves(size, expected):
    game = Othello(size)
    state = game.init()
    assert legal_names(game, state) == expected
    assert int(game.disc_difference(state)) == 0
    assert not bool(state.terminal) and int(state.color) == 0 and int(state.ply) == 0
    obs = np.asarray(game.observation(state))
    assert obs.shape == (size, size, 2) and obs.sum() == 4


def test_state_is_at_most_32_bytes():
    for size in (4, 6, 8):
        assert state_nbytes(Othello(size).init()) <= 32


def test_bad_board_size_is_rejected():
    with pytest.raises(ValueError, match="board size"):
        Othello(7)


@pytest.mark.parametrize("size", [4, 6, 8])
def test_full_random_games_end_correctly(size):
    game = Othello(size)
    rec = random_games(game, 64, seed=7)
    for g in range(64):
        end = int(np.argmax(rec["terminal"][g]))
        assert rec["terminal"][g, end]
        black, white = rec["black"][g, end], rec["white"][g, end]
        assert not (black & white).any()
        # at the end, neither side can move; before, the side to move always has an action
        assert not rec["legal"][g, end].any()
        assert rec["legal"][g, :end].any(axis=-1).all()
        # the final score counts discs and gives empties to the winner
        diff = int(black.sum()) - int(white.sum())
        diff += int(np.sign(diff)) * (size * size - int(black.sum()) - int(white.sum()))
        mover_sign = 1 if rec["color"][g, end] == 0 else -1
        assert rec["diff"][g, end] == mover_sign * diff


def reference_perft(ref: ReferenceOthello, depth: int) -> int:
    """perft on the plain reference implementation (finished games count once per level)."""
    if depth == 0 or ref.game_over():
        return 1
    moves = ref.moves(ref.to_move) or [ref.n * ref.n]
    total = 0
    for action in moves:
        child = copy.deepcopy(ref)
        child.play(action)
        total += reference_perft(child, depth - 1)
    return total


@pytest.mark.parametrize("size,depth", [(4, 20), (6, 5)])
def test_perft_small_boards_match_reference(size, depth):
    game = Othello(size)
    assert perft(game.init(), depth, game) == reference_perft(ReferenceOthello(size), depth)


def test_transcript_replay_and_pass_sequence():
    game = Othello(8)
    # the shortest possible game (9 moves): black wipes white out, 13-0 with 51 empties
    state, actions = play_transcript("E6F4E3F6G5D6E7F5C5", game)
    assert bool(state.terminal)
    black_view = int(game.disc_difference(state)) * (1 if int(state.color) == 0 else -1)
    assert black_view == 64
    assert len(actions) == 9 and actions[0] == parse_square("e6")


def test_functions_work_under_jit_vmap_and_shard_map():
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P
    try:
        from jax import shard_map
    except ImportError:  # jax < 0.8
        from jax.experimental.shard_map import shard_map
    game = Othello(8)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (8,) + x.shape), game.init())
    actions = jnp.full((8,), parse_square("d3"), jnp.int32)
    eager = game.step(batch, actions)
    vmapped = jax.jit(jax.vmap(game.step))(batch, actions)
    mesh = Mesh(np.array(jax.devices()[:1]), ("games",))
    sharded = jax.jit(shard_map(game.step, mesh=mesh, in_specs=(P("games"), P("games")),
                                out_specs=P("games")))(batch, actions)
    for other in (vmapped, sharded):
        for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(other), strict=False):
            assert np.array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(jax.vmap(game.legal_moves)(vmapped)).sum(axis=-1).tolist() == [3] * 8


def test_no_64_bit_types_in_state():
    for leaf in jax.tree.leaves(Othello(8).init()):
        assert leaf.dtype.itemsize <= 4


@pytest.mark.parametrize("size", [4, 6, 8])
def test_native_policies_pick_legal_actions(size):
    game = Othello(size)
    rec = random_games(game, 256, seed=21)
    from tests.test_symmetry import states_from_games
    states, _ = states_from_games(game, rec, 256)
    legal = np.asarray(game.legal_moves(states))
    live = ~np.asarray(states.terminal)
    first = np.asarray(jax.jit(game.first_legal_action)(states))
    assert np.array_equal(first[live], legal.argmax(axis=-1)[live])
    for seed in range(5):
        picked = np.asarray(jax.jit(game.random_legal_action)(states, jax.random.key(seed)))
        assert legal[np.arange(256), picked][live].all()


def test_random_legal_action_is_uniform():
    game = Othello(8)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (40000,) + x.shape), game.init())
    picked = np.asarray(jax.jit(game.random_legal_action)(batch, jax.random.key(0)))
    counts = np.bincount(picked, minlength=65)
    assert set(np.nonzero(counts)[0]) == {19, 26, 37, 44}
    assert np.all(np.abs(counts[[19, 26, 37, 44]] / 40000 - 0.25) < 0.015)  # > 6 sigma
