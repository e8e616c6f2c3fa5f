"""Expert move-prediction data from a WThor database.

Every recorded move becomes one example: the position before it (from the mover's view, as
two bitboards), the expert's move, and the game's result for the mover (+1 win, 0 draw, -1
loss, from the recorded final score; for finished games that equals the replayed result).
With ``value_target="perfect_endgame"`` the positions with at least ``THEORY_EMPTIES`` (24) empty
squares take WThor's *theoretical* result instead: the game's result had its last 24 moves been
played perfectly, which is the exact value of the position at 24 empties and removes the
endgame's mistakes (a quarter of the games change sign) from the value targets of the others.

Examples are de-duplicated per (position, move): a pair seen in many games (the openings) is
kept once, with the mean result as its value target and the number of occurrences (so the
original examples can still be sampled, by count). Two splits: by year (``"year"``: games from
``test_from_year`` on are held out, the honest figure) or at random as Liskowski et al. did
(``"random"``: a ``test_share`` of the unique (position, move) rows is held out, whatever the
game). A test row also says whether its position occurs anywhere in the training split (book
positions do).

Rows are stored compactly (16 bytes of bitboards plus a few bytes) so the whole database fits
on an accelerator. :func:`load_expert_data` caches the result as an ``.npz`` in a directory of
your choice, keyed by the database contents and the split.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.data import game_replay, wthor
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.game.symmetry import NUM_SYMMETRIES, transform_action, transform_bitboard

FORMAT_VERSION = 1
DEFAULT_TEST_FROM_YEAR = 2015
SPLITS = ("year", "random")
VALUE_TARGETS = ("result", "perfect_endgame")
THEORY_EMPTIES = 24  # every WThor file's header computes its theoretical scores at this depth


class ExpertPositions(NamedTuple):
    """De-duplicated (position, expert move) rows; every field is a numpy or jax array [N]."""

    mover_lo: np.ndarray  # uint32 discs of the side to move, squares 0..31
    mover_hi: np.ndarray  # uint32 squares 32..63
    opponent_lo: np.ndarray  # uint32
    opponent_hi: np.ndarray  # uint32
    action: np.ndarray  # uint8 expert move (square row * 8 + col; never a pass)
    value: np.ndarray  # float32 mean game result for the mover, in [-1, 1]
    count: np.ndarray  # uint32 occurrences of this (position, move) in the split's games
    in_train: np.ndarray  # bool the position also occurs in the training split (True there)

    @property
    def size(self) -> int:
        return int(self.action.shape[0])

    @property
    def mover(self) -> bb.Bitboard:
        return bb.Bitboard(self.mover_lo, self.mover_hi)

    @property
    def opponent(self) -> bb.Bitboard:
        return bb.Bitboard(self.opponent_lo, self.opponent_hi)


def stage(rows: ExpertPositions) -> jax.Array:
    """Moves played before the position (discs on the board minus 4): 0..59."""
    return bb.popcount(rows.mover | rows.opponent) - 4


def to_state(rows: ExpertPositions, game: Othello = Othello(8)) -> State:
    """Game states for the rows (colour is not stored: positions are kept from the mover's
    view, so ``color`` is set to black; ``ply`` is the number of placements so far)."""
    mover = bb.Bitboard(jnp.asarray(rows.mover_lo), jnp.asarray(rows.mover_hi))
    opponent = bb.Bitboard(jnp.asarray(rows.opponent_lo), jnp.asarray(rows.opponent_hi))
    plies = bb.popcount(mover | opponent) - 4
    return game.from_discs(mover, opponent, jnp.zeros_like(plies, jnp.int8), ply=plies.astype(jnp.int16))


def to_device(rows: ExpertPositions) -> ExpertPositions:
    """The same rows as jax arrays (about 26 bytes per row on the device)."""
    return ExpertPositions(*(jnp.asarray(x) for x in rows))


def take(rows: ExpertPositions, index: np.ndarray | slice) -> ExpertPositions:
    """A subset of rows (host side)."""
    return ExpertPositions(*(np.asarray(x)[index] for x in rows))


@dataclasses.dataclass(frozen=True)
class ExpertData:
    """Train/test splits plus how they were made."""

    train: ExpertPositions
    test: ExpertPositions
    info: dict  # counts, split, rejected records (JSON-serialisable)

    def summary(self) -> str:
        i = self.info
        held = (f"games from {i['test_from_year']}" if i.get("split", "year") == "year"
                else f"{100 * i['test_share']:g}% of the unique rows at random")
        return (f"WThor: {i['games']} games ({i['rejected']['summary']}); "
                f"train {i['train_games']} games -> {self.train.size} unique (position, move) rows "
                f"from {i['train_moves']} moves; test ({held}) "
                f"{i['test_games']} games -> {self.test.size} rows, "
                f"{100 * float(np.mean(self.test.in_train)) if self.test.size else 0:.1f}% "
                "of them at positions also in train")


# ---- building ---------------------------------------------------------------------------------

def _group_starts(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sort rows by the given keys (first key most significant); return (order, group starts)."""
    order = np.lexsort(keys[::-1])
    change = np.zeros(order.size, bool)
    if order.size:
        change[0] = True
    for key in keys:
        sorted_key = key[order]
        change[1:] |= sorted_key[1:] != sorted_key[:-1]
    return order, np.flatnonzero(change)


def _as_u64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))


def deduplicate(mover_lo, mover_hi, opponent_lo, opponent_hi, action, value) -> ExpertPositions:
    """Merge identical (position, move) examples: mean value, occurrence count."""
    mover, opponent = _as_u64(mover_lo, mover_hi), _as_u64(opponent_lo, opponent_hi)
    order, starts = _group_starts([mover, opponent, action.astype(np.uint64)])
    count = np.diff(np.append(starts, order.size)).astype(np.uint32)
    total = np.add.reduceat(value[order].astype(np.float64), starts) if order.size else np.zeros(0)
    first = order[starts]
    return ExpertPositions(
        mover_lo=mover_lo[first], mover_hi=mover_hi[first], opponent_lo=opponent_lo[first],
        opponent_hi=opponent_hi[first], action=action[first].astype(np.uint8),
        value=(total / np.maximum(count, 1)).astype(np.float32), count=count,
        in_train=np.ones(first.size, bool))


def mark_seen(test: ExpertPositions, train: ExpertPositions) -> ExpertPositions:
    """Set ``in_train`` on test rows whose position (any move) occurs in the training rows."""
    board = lambda r: (_as_u64(r.mover_lo, r.mover_hi), _as_u64(r.opponent_lo, r.opponent_hi))
    (tm, to), (sm, so) = board(train), board(test)
    mover, opponent = np.concatenate([tm, sm]), np.concatenate([to, so])
    from_train = np.arange(mover.size) < tm.size
    order, starts = _group_starts([mover, opponent])
    group = np.cumsum(np.isin(np.arange(order.size), starts)) - 1
    group_has_train = np.zeros(starts.size, bool)
    np.logical_or.at(group_has_train, group, from_train[order])
    seen = np.empty(mover.size, bool)
    seen[order] = group_has_train[group]
    return test._replace(in_train=seen[tm.size:])


def black_results(scores: np.ndarray, game: Othello = Othello(8)) -> np.ndarray:
    """+1 / 0 / -1 for black from black's disc counts (the recorded or the theoretical ones)."""
    return np.sign(scores.astype(np.int32) * 2 - game.num_squares).astype(np.float32)


def _collect(games: wthor.Games, progress: Callable[[int, int], None] | None, game: Othello,
             value_target: str = "result"):
    """Replay all games; return per-move columns of the valid moves and the replay errors."""
    actions = wthor.decode_moves(games.moves)
    black_result = black_results(games.black_score, game)
    black_theory = black_results(games.theoretical_score, game)
    theory_move = game.num_squares - 4 - THEORY_EMPTIES  # the recorded moves before the 24-empty position
    columns: dict[str, list[np.ndarray]] = {k: [] for k in ("game", "mlo", "mhi", "olo", "ohi", "action", "value")}
    finals: list[State] = []

    def consume(offset: int, out: game_replay.Replayed) -> None:
        finals.append(out.final)
        g, t = np.nonzero(out.valid)
        pos = out.positions
        columns["game"].append(g + offset)
        columns["mlo"].append(pos.mover.lo[g, t])
        columns["mhi"].append(pos.mover.hi[g, t])
        columns["olo"].append(pos.opponent.lo[g, t])
        columns["ohi"].append(pos.opponent.hi[g, t])
        columns["action"].append(actions[g + offset, t])
        sign = np.where(pos.color[g, t] == 0, 1.0, -1.0).astype(np.float32)
        result = black_result[g + offset]
        if value_target == "perfect_endgame":  # games reaching 24 empties: their theoretical result up to there
            reaches = np.asarray(out.valid)[:, theory_move]  # WThor records hold 60 move slots
            result = np.where(reaches[g] & (t <= theory_move), black_theory[g + offset], result)
        columns["value"].append(result * sign)

    error, error_move = game_replay.replay_in_chunks(actions, consume, game=game, progress=progress)
    final = jax.tree.map(lambda *parts: np.concatenate(parts), *finals)
    error = game_replay.check_scores(error, final, games.black_score, game)
    return {k: np.concatenate(v) for k, v in columns.items()}, error, error_move


def build_expert_data(games: wthor.Games, test_from_year: int = DEFAULT_TEST_FROM_YEAR,
                      progress: Callable[[int, int], None] | None = None, split: str = "year",
                      test_share: float = 0.05, seed: int = 0, value_target: str = "result") -> ExpertData:
    """Replay, validate, split and de-duplicate (see the module docstring)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    if value_target not in VALUE_TARGETS:
        raise ValueError(f"unknown value target {value_target!r}; choose from {', '.join(VALUE_TARGETS)}")
    game = Othello(8)
    cols, error, error_move = _collect(games, progress, game, value_target)
    labels = [f"game #{i} ({y})" for i, y in enumerate(games.year)]
    report = game_replay.describe_problems(error, error_move, labels)
    good_game = error[cols["game"]] == game_replay.OK
    fields = ("mlo", "mhi", "olo", "ohi", "action", "value")
    ok = error == game_replay.OK
    info = {
        "games": int(games.num_games),
        "rejected": {"summary": report.summary(), "count": report.num_rejected, "reasons": report.rejected,
                     "examples": list(report.examples)},
        "split": split,
        "format_version": FORMAT_VERSION,
    }
    if value_target != "result":  # named only when chosen: runs and caches made before the option still match
        info["value_target"] = value_target
    if split == "year":
        is_test = games.year[cols["game"]] >= test_from_year
        parts = {}
        for name, mask in (("train", good_game & ~is_test), ("test", good_game & is_test)):
            parts[name] = deduplicate(*(cols[k][mask] for k in fields))
            info[name + "_moves"] = int(mask.sum())
        train, test = parts["train"], parts["test"]
        info.update(test_from_year=int(test_from_year),
                    train_games=int((ok & (games.year < test_from_year)).sum()),
                    test_games=int((ok & (games.year >= test_from_year)).sum()))
    else:  # Liskowski et al.: a random share of the unique examples, whatever their game
        rows = deduplicate(*(cols[k][good_game] for k in fields))
        held = np.random.default_rng(seed).random(rows.size) < test_share
        train, test = take(rows, ~held), take(rows, held)
        info.update(test_share=float(test_share), seed=int(seed), train_games=int(ok.sum()), test_games=int(ok.sum()),
                    train_moves=int(train.count.sum()), test_moves=int(test.count.sum()))
    return ExpertData(train=train, test=mark_seen(test, train), info=info)


# ---- the dataset's own limits -----------------------------------------------------------------

def ceilings(rows: ExpertPositions) -> dict:
    """How the rows count in Liskowski et al.'s terms: *Original* examples (every move played),
    *Unique* (position, move) rows, distinct positions, and the accuracy a perfect classifier
    reaches on each (the most played move of a position on Original; one of its distinct moves
    on Unique), since the same position carries different expert moves."""
    board = (_as_u64(rows.mover_lo, rows.mover_hi), _as_u64(rows.opponent_lo, rows.opponent_hi))
    order, starts = _group_starts(list(board))
    count = np.asarray(rows.count, np.int64)[order]
    most = np.maximum.reduceat(count, starts) if starts.size else np.zeros(0, np.int64)
    examples = int(count.sum())
    return {"original": examples, "unique": int(rows.size), "positions": int(starts.size),
            "ceiling_original": float(most.sum() / max(examples, 1)),
            "ceiling_unique": float(starts.size / max(rows.size, 1))}


def symmetric_unique(rows: ExpertPositions, chunk: int = 1 << 20) -> int:
    """The number of distinct (position, move) rows once every row is added under each of the 8
    board symmetries (Liskowski et al.'s *Unique-S*, "cleared also of the duplicates resulting from
    symmetric transformations"); counted in chunks, never held as training rows."""
    @functools.partial(jax.jit, static_argnums=5)
    def turned(mover_lo, mover_hi, opponent_lo, opponent_hi, action, k):
        mover = transform_bitboard(bb.Bitboard(mover_lo, mover_hi), k, 8)
        opponent = transform_bitboard(bb.Bitboard(opponent_lo, opponent_hi), k, 8)
        return mover.lo, mover.hi, opponent.lo, opponent.hi, transform_action(action.astype(jnp.int32), k, 8)

    keys = []
    for k in range(NUM_SYMMETRIES):
        for start in range(0, rows.size, chunk):
            part = [np.asarray(x)[start:start + chunk] for x in rows[:5]]
            ml, mh, ol, oh, a = (np.asarray(x) for x in turned(*part, k))
            keys.append(np.stack([_as_u64(ml, mh), _as_u64(ol, oh), a.astype(np.uint64)], 1))
    every = np.concatenate(keys)
    return int(np.unique(every, axis=0).shape[0])


# ---- caching -----------------------------------------------------------------------------------

def _fingerprint(directory: Path, test_from_year: int, split: str = "year", test_share: float = 0.05,
                 value_target: str = "result") -> str:
    key = f"v{FORMAT_VERSION}:{test_from_year}" + ("" if split == "year" else f":{split}:{test_share!r}")
    key += "" if value_target == "result" else f":{value_target}"  # caches made before the option keep their name
    digest = hashlib.sha1(key.encode())
    for path in wthor.game_files(directory):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def save(data: ExpertData, path: str | os.PathLike) -> None:
    """Write both splits and the info to one ``.npz``."""
    arrays = {f"{split}_{field}": np.asarray(getattr(getattr(data, split), field))
              for split in ("train", "test") for field in ExpertPositions._fields}
    tmp = Path(str(path) + ".tmp.npz")
    np.savez(tmp, info=np.array(json.dumps(data.info)), **arrays)
    os.replace(tmp, path)


def load(path: str | os.PathLike) -> ExpertData:
    """Read an ``.npz`` written by :func:`save`."""
    with np.load(path) as z:
        splits = {s: ExpertPositions(*(z[f"{s}_{f}"] for f in ExpertPositions._fields)) for s in ("train", "test")}
        return ExpertData(train=splits["train"], test=splits["test"], info=json.loads(str(z["info"])))


def load_expert_data(wthor_dir: str | os.PathLike, test_from_year: int = DEFAULT_TEST_FROM_YEAR,
                     cache_dir: str | os.PathLike | None = None,
                     progress: Callable[[int, int], None] | None = None, split: str = "year",
                     test_share: float = 0.05, value_target: str = "result") -> ExpertData:
    """Build the expert data from a WThor directory (split by year or at random, see
    :func:`build_expert_data`), or read it from ``cache_dir`` if cached."""
    directory = Path(wthor_dir)
    if value_target == "perfect_endgame":
        other = {name: depth for name, depth in wthor.theory_depths(directory).items() if depth != THEORY_EMPTIES}
        if other:
            name, depth = next(iter(other.items()))
            raise wthor.WthorError(f"{directory / name}: theoretical scores computed at {depth} empties, not "
                                   f"{THEORY_EMPTIES}; value_target=perfect_endgame needs {THEORY_EMPTIES}")
    cache = None
    if cache_dir is not None:
        name = _fingerprint(directory, test_from_year, split, test_share, value_target)
        cache = Path(cache_dir).expanduser() / f"wthor_expert_{name}.npz"
        if cache.is_file():
            return load(cache)
    data = build_expert_data(wthor.load_database(directory).games, test_from_year, progress, split, test_share,
                             value_target=value_target)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        save(data, cache)
    return data
