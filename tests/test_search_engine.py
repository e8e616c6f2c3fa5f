"""The project's lockstep search engine builds the trees of mctx's public policies, bit for bit."""

from __future__ import annotations

import pathlib

import jax
import numpy as np
import pytest

from othello_jax import search
from othello_jax.game import Othello
from tests.conftest import slow_unless
from tests.test_search import BATCH, SIMS, config, pick_positions, random_positions, run, take

VARIANTS = sorted(search.VARIANTS)


def late_positions(size: int = 4, count: int = BATCH):
    """Non-terminal positions with few empties: games end inside the trees (and some roots pass)."""
    game = Othello(size)
    states = random_positions(size, games=64, seed=3)
    empties = game.num_squares - np.asarray(game.observation(states)).sum(axis=(1, 2, 3))
    late = np.nonzero(~np.asarray(states.terminal) & (empties <= 5) & (empties >= 3))[0]
    return game, take(states, late[np.linspace(0, len(late) - 1, count).astype(int)])


def passing_positions(size: int = 6):
    """A spread of 6x6 positions, about half of them with a forced pass at the root."""
    game = Othello(size)
    return game, pick_positions(game, random_positions(size), BATCH, want_pass=True)


POSITIONS = {"passes": passing_positions, "late": late_positions}


def depths(tree) -> np.ndarray:
    """Each node's depth ([B, N]); nodes are created after their parents, so one pass suffices."""
    parents = np.asarray(tree.parents)
    depth = np.zeros(parents.shape, int)
    rows = np.arange(len(parents))
    for node in range(1, parents.shape[1]):
        depth[:, node] = np.where(parents[:, node] >= 0, depth[rows, np.maximum(parents[:, node], 0)] + 1, 0)
    return depth


def assert_same_results(a, b):
    """Every field of two SearchResults, the whole tree included, is equal."""
    paths = jax.tree_util.tree_flatten_with_path(a)[0]
    for (path, x), y in zip(paths, jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=jax.tree_util.keystr(path))


# every variant, depth limit and kind of position with -m ""; CI (not slow) runs each variant with
# no depth limit on the passing positions and with a depth limit on the late ones, so every
# variant, limit and kind is compared there at least once (the depth limit on the passing positions
# is also compared by test_select_updates_build_the_same_trees)
CI_CASES = {(0, "passes"), (2, "late")}
CASES = slow_unless([(variant, max_depth, positions) for variant in VARIANTS for max_depth in (0, 2)
                     for positions in sorted(POSITIONS)],
                    lambda variant, max_depth, positions: (max_depth, positions) in CI_CASES)


@pytest.mark.parametrize(("variant", "max_depth", "positions"), CASES)
def test_lockstep_engine_builds_the_trees_of_public_mctx(variant, max_depth, positions):
    """With root noise (Gumbel / Dirichlet), depth cut-offs, passes and game ends inside the trees:
    the tree (every field), the action and the policy target equal mctx's, exactly."""
    game, states = POSITIONS[positions]()
    c = config(variant, max_depth=max_depth)
    assert c.engine == "lockstep" and c.tree_updates == "scatter"  # the defaults
    ours = run(c, game, states, key=3)
    plain = run(config(variant, max_depth=max_depth, engine="mctx"), game, states, key=3)
    assert_same_results(ours, plain)
    tree = ours.tree
    depth = depths(tree)
    visited = np.asarray(tree.node_visits) > 0
    assert (np.asarray(tree.node_visits)[:, 0] == SIMS + 1).all()
    assert depth.max() >= 2, "the trees grew"
    if max_depth:
        assert depth.max() <= max_depth
        # the cut-off re-evaluated nodes instead of adding new ones
        assert (visited.sum(-1) < SIMS + 1).any()
    if positions == "passes":
        assert (np.asarray(tree.action_from_parent)[visited & (depth > 0)] == game.pass_action).any()
    else:
        terminal = np.asarray(tree.embeddings.terminal) & visited
        assert (terminal & (depth >= 2)).any(), "games end below the root's children"


@pytest.mark.parametrize("variant", VARIANTS)
def test_select_updates_build_the_same_trees(variant):
    """One-hot/select tree writes (for TPUs) build exactly the trees of scatters and of mctx."""
    game, states = passing_positions()
    select = run(config(variant, max_depth=2, tree_updates="select"), game, states, key=3)
    plain = run(config(variant, max_depth=2, engine="mctx"), game, states, key=3)
    assert_same_results(select, plain)
    game, states = late_positions()
    select = run(config(variant, tree_updates="select"), game, states, key=5)
    scatter = run(config(variant), game, states, key=5)
    assert_same_results(select, scatter)


@pytest.mark.parametrize("variant", VARIANTS)
def test_expansion_keys_match_mctx(variant):
    """With random symmetries the network's input depends on the expansion key: still equal trees."""
    game, states = passing_positions()
    ours = run(config(variant, symmetry=True), game, states, key=7)
    plain = run(config(variant, symmetry=True, engine="mctx"), game, states, key=7)
    assert_same_results(ours, plain)


def test_engine_settings_are_validated():
    with pytest.raises(ValueError, match="unknown search engine 'fast'; choose from lockstep, mctx"):
        search.check_search_config(config("gumbel", engine="fast"))
    with pytest.raises(ValueError, match="unknown search tree_updates 'gather'; choose from scatter, select"):
        search.check_search_config(config("gumbel", tree_updates="gather"))


def test_no_private_mctx_anywhere():
    """The project uses mctx's public API only (ruff's banned-api rule enforces it too)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    private = "mctx." + "_src"
    offenders = [str(path.relative_to(root)) for folder in ("othello_jax", "experiments", "tests", "scripts")
                 for path in (root / folder).rglob("*.py") if private in path.read_text()]
    assert not offenders, offenders


def test_compaction_phases_run_each_tier_while_it_is_the_smallest_that_holds_the_working_trees():
    """64 trees, 7 finishing per level: 5 levels on all trees (64..36 working), 2 on 32 lanes
    (29, 22), 1 on 16 (15), 2 on 8 (8, 1); compact levels see only working trees."""
    from othello_jax.search import compaction

    def full_level(carry):
        active, levels, too_many = carry
        return active & (np.cumsum(active) > 7), levels.at[0].add(1), too_many

    def compact_level(lanes):
        def run(carry):
            active, levels, too_many = carry
            lane = compaction.working_lanes(active, lanes)
            still = compaction.gather(active, lane) & (np.arange(lanes) >= 7)
            tier = 1 + compaction.tiers(64).index(lanes)
            return (compaction.scatter(active, lane, still), levels.at[tier].add(1),
                    too_many | (active.sum() > lanes))

        return run

    def loop(enabled):
        start = (np.ones(64, bool), jax.numpy.zeros(4, int), False)
        return jax.jit(lambda: compaction.in_phases(full_level, compact_level, lambda carry: carry[0], 64, start,
                                                    enabled))()

    active, levels, too_many = loop(True)
    assert not active.any() and not too_many
    assert levels.tolist() == [5, 2, 1, 2]
    assert compaction.tiers(32) == [16, 8] and compaction.tiers(8) == []
    _, levels, _ = loop(False)
    assert levels.tolist() == [10, 0, 0, 0]  # disabled: all levels on all trees


@pytest.mark.parametrize("variant", VARIANTS)
def test_compacted_walk_levels_build_the_trees_of_public_mctx(variant):
    """Walk and backup levels where only a few trees still work ran compacted (B/2 and B/8
    lanes), and the trees equal mctx's."""
    game, states = passing_positions()
    ours = run(config(variant), game, states, key=11)
    assert_same_results(ours, run(config(variant, engine="mctx"), game, states, key=11))
    assert_same_results(ours, run(config(variant, compact_levels=False), game, states, key=11))
    levels = np.maximum(depths(ours.tree)[:, 1:] - 1, 0)  # levels below the root walked by each simulation
    working = [int((levels[:, sim] >= level).sum()) for sim in range(levels.shape[1])
               for level in range(1, levels[:, sim].max() + 1)]
    assert any(0 < count <= BATCH // 8 for count in working), working
    assert any(BATCH // 4 < count <= BATCH // 2 for count in working), working
