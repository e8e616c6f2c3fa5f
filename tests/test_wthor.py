"""WThor reader, batched replay and expert dataset: the shipped database, round trips,
corrupt and truncated input."""

from __future__ import annotations

import datetime
import json
import shutil

import jax
import numpy as np
import pytest

from othello_jax.data import expert, game_replay, wthor
from othello_jax.game import Othello, format_transcript, play_transcript
from othello_jax.game import bitboard as bb
from tests.game_helpers import to_int
from tests.wthor_helpers import write_games, write_players, write_tournaments

GAME = Othello(8)


@pytest.fixture(scope="module")
def database(shared_data) -> wthor.Database:
    return wthor.load_database(shared_data / "wthor")


@pytest.fixture(scope="module")
def full_replay(database):
    """Replay of every game in the shipped database: (error codes after score checks, error moves)."""
    actions = wthor.decode_moves(database.games.moves)
    finals = []
    error, error_move = game_replay.replay_in_chunks(actions, lambda _, out: finals.append(out.final))
    final = jax.tree.map(lambda *parts: np.concatenate(parts), *finals)
    return game_replay.check_scores(error, final, database.games.black_score), error_move, final


def _subset(games: wthor.Games, index) -> wthor.Games:
    return wthor.Games(*(np.asarray(x)[index] for x in games))


def test_database_loads_with_names(database):
    games = database.games
    assert games.num_games > 100_000
    assert len(database.files) == 44 and database.files[0] == "WTH_1977.wtb"
    assert set(np.unique(games.year)) == set(range(1977, 2021))
    assert len(database.players) == 3760 and len(database.tournaments) == 436
    # every record refers to known players and tournaments
    assert games.black.max() < len(database.players) and games.white.max() < len(database.players)
    assert games.tournament.max() < len(database.tournaments)
    assert database.tournament(1) == "World Championship"
    assert database.player(99999) == "#99999"


def test_every_shipped_game_replays_without_a_rules_error(database, full_replay):
    error, error_move, final = full_replay
    report = game_replay.describe_problems(error, error_move)
    print("\n" + report.summary())  # the number skipped as corrupt (0 for the shipped files)
    assert report.num_rejected == 0, report.examples
    # nearly all games are played out, and finished games end with the recorded score
    finished = np.asarray(final.terminal)
    assert finished.mean() > 0.99
    assert np.array_equal(game_replay.final_black_discs(final)[finished], database.games.black_score[finished])


def test_batched_replay_agrees_with_sequential_transcript_replay(database):
    """Against the one-move-at-a-time notation replay, on the games with the most passes."""
    actions = wthor.decode_moves(database.games.moves[:256])
    out = game_replay.replay_actions(actions)
    picks = np.argsort(-np.asarray(out.passes), kind="stable")[:3]
    assert out.passes[picks[0]] >= 2
    for row in picks:
        moves = actions[row]
        state, played = play_transcript(format_transcript(moves[moves >= 0]), GAME)  # inserts forced passes
        assert int(out.passes[row]) == played.count(GAME.pass_action)
        got = jax.tree.map(lambda x: x[row], out.final)
        assert to_int(got.mover) == to_int(state.mover)
        assert to_int(got.opponent) == to_int(state.opponent)
        assert int(got.color) == int(state.color) and int(got.ply) == int(state.ply)


def test_move_codes_decode_to_squares():
    codes = np.array([11, 18, 81, 88, 56, 0, 9, 19, 90, 255])
    actions = wthor.decode_moves(codes)
    assert actions.tolist() == [0, 7, 56, 63, 37, wthor.NO_MOVE] + [wthor.BAD_CODE] * 4
    assert wthor.encode_moves(actions[:6]).tolist() == [11, 18, 81, 88, 56, 0]


def test_game_file_round_trip(tmp_path, database):
    games = _subset(database.games, slice(1000, 1100))
    path = tmp_path / "WTH_1999.wtb"
    write_games(path, games, game_year=1999, created=datetime.date(2020, 4, 27), depth=24)
    header, back = wthor.read_games(path)
    assert header.num_games == 100 and header.game_year == 1999 and header.depth == 24
    assert header.created == datetime.date(2020, 4, 27) and header.board_size == 8
    for name in ("tournament", "black", "white", "black_score", "theoretical_score", "moves"):
        np.testing.assert_array_equal(getattr(back, name), getattr(games, name))
    assert (back.year == 1999).all()


def test_name_files_round_trip(tmp_path, database):
    write_players(tmp_path / "WTHOR.JOU", database.players[:50])
    write_tournaments(tmp_path / "WTHOR.TRN", database.tournaments[:20])
    assert wthor.read_players(tmp_path / "WTHOR.JOU") == database.players[:50]
    assert wthor.read_tournaments(tmp_path / "WTHOR.TRN") == database.tournaments[:20]


def test_truncated_and_malformed_files_are_rejected_clearly(tmp_path, shared_data):
    data = (shared_data / "wthor" / "WTH_1980.wtb").read_bytes()
    cut = tmp_path / "WTH_1980.wtb"
    cut.write_bytes(data[:-30])
    with pytest.raises(wthor.WthorError, match=r"WTH_1980.wtb: truncated: the header announces \d+ games"):
        wthor.read_games(cut)
    cut.write_bytes(data + b"\0")
    with pytest.raises(wthor.WthorError, match="trailing bytes"):
        wthor.read_games(cut)
    cut.write_bytes(data[:10])
    with pytest.raises(wthor.WthorError, match="too short for the 16-byte WThor header"):
        wthor.read_games(cut)
    with pytest.raises(wthor.WthorError, match="no such WThor file"):
        wthor.read_games(tmp_path / "missing.wtb")
    (tmp_path / "empty").mkdir()
    with pytest.raises(wthor.WthorError, match="no WTH_YYYY.wtb game files"):
        wthor.load_database(tmp_path / "empty")
    # a truncated name file is reported the same way
    jou = (shared_data / "wthor" / "WTHOR.JOU").read_bytes()
    (tmp_path / "WTHOR.JOU").write_bytes(jou[:-5])
    with pytest.raises(wthor.WthorError, match="truncated: the header announces 3760 player names"):
        wthor.read_players(tmp_path / "WTHOR.JOU")


def _finished_early(database, games: int = 1024) -> int:
    """Index of a finished game with fewer than 60 moves (it ended with empty squares), among the
    first ``games`` (replayed apart from ``full_replay``: the test may run on another worker)."""
    finals = []
    game_replay.replay_in_chunks(wthor.decode_moves(database.games.moves[:games]),
                                 lambda _, out: finals.append(out.final), chunk=games)
    short = (database.games.moves[:games] == 0).any(axis=1) & np.asarray(finals[0].terminal)
    return int(np.flatnonzero(short)[0])


def test_corrupt_records_are_rejected_with_reasons(database):
    base = _subset(database.games, np.arange(8))
    moves, score = base.moves.copy(), base.black_score.copy()
    moves[0, 10] = 99  # not a square
    moves[1, 20] = moves[1, 5]  # an occupied square: illegal
    moves[2, 30:] = 0
    moves[2, 40] = 34  # moves resume after the list ended
    score[3] = 70  # impossible score
    score[4] = (score[4] + 2) % 64  # disagrees with the finished game
    early = _finished_early(database)
    extra = _subset(database.games, [early])
    first_empty = int(np.argmax(extra.moves[0] == 0))
    extra.moves[0, first_empty] = 11  # a move after the game ended
    games = wthor.concatenate([base._replace(moves=moves, black_score=score), extra])

    data = expert.build_expert_data(games, test_from_year=3000)
    reasons = data.info["rejected"]["reasons"]
    assert reasons == {
        game_replay.REASONS[game_replay.BAD_MOVE_CODE]: 1, game_replay.REASONS[game_replay.ILLEGAL_MOVE]: 1,
        game_replay.REASONS[game_replay.MOVE_AFTER_GAP]: 1, game_replay.REASONS[game_replay.BAD_SCORE]: 1,
        game_replay.REASONS[game_replay.SCORE_MISMATCH]: 1, game_replay.REASONS[game_replay.MOVE_AFTER_END]: 1}
    assert data.info["rejected"]["summary"].startswith("rejected 6 of 9 records as corrupt")
    assert data.info["rejected"]["examples"][0] == "game #0 (1977): move 11: move byte is not a square (11..88)"
    # only the 3 good games contribute positions
    assert data.info["train_games"] == 3
    assert data.info["train_moves"] == int((games.moves[5:8] != 0).sum())


@pytest.fixture(scope="module")
def small_data(database) -> expert.ExpertData:
    """Two years, one on each side of the split."""
    games = database.games
    pick = np.flatnonzero((games.year == 1990) | (games.year == 2016))
    return expert.build_expert_data(_subset(games, pick), test_from_year=2015)


def test_expert_rows_are_legal_unique_and_split_by_year(database, small_data):
    games = database.games
    n1990, n2016 = int((games.year == 1990).sum()), int((games.year == 2016).sum())
    assert small_data.info["train_games"] == n1990 and small_data.info["test_games"] == n2016
    assert small_data.info["train_moves"] == int((games.moves[games.year == 1990] != 0).sum())
    for rows in (small_data.train, small_data.test):
        state = expert.to_state(rows)
        legal = np.asarray(GAME.legal_moves(state))
        assert legal[np.arange(rows.size), rows.action].all()  # every expert move is legal there
        assert not (np.asarray(bb.popcount(rows.mover & rows.opponent)) > 0).any()
        keys = np.stack([rows.mover_lo, rows.mover_hi, rows.opponent_lo, rows.opponent_hi, rows.action], 1)
        assert np.unique(keys, axis=0).shape[0] == rows.size  # de-duplicated
        assert (np.abs(rows.value) <= 1).all() and (rows.count >= 1).all()
    # the start position: black plays f5 in every game (WThor normalises the first move)
    init, train = GAME.init(), small_data.train
    start = (train.mover_lo == init.mover.lo) & (train.mover_hi == init.mover.hi) & \
            (train.opponent_lo == init.opponent.lo) & (train.opponent_hi == init.opponent.hi)
    assert start.sum() == 1 and small_data.train.count[start][0] == n1990
    assert small_data.train.action[start][0] == 37  # f5
    assert small_data.train.in_train.all()
    assert 0 < small_data.test.in_train.mean() < 0.5  # openings repeat; middle games are new


def test_value_target_is_the_result_for_the_mover(database):
    """One game without passes: black moves at even stages, so values alternate in sign."""
    actions = wthor.decode_moves(database.games.moves[:256])
    out = game_replay.replay_actions(actions)
    index = int(np.flatnonzero((np.asarray(out.passes) == 0) & (database.games.black_score[:256] != 32))[0])
    game = _subset(database.games, [index])
    rows = expert.build_expert_data(game, test_from_year=3000).train
    black_result = 1.0 if game.black_score[0] > 32 else -1.0
    stage = np.asarray(expert.stage(rows))
    assert rows.size == int((game.moves != 0).sum()) and sorted(stage) == list(range(rows.size))
    np.testing.assert_array_equal(rows.value, np.where(stage % 2 == 0, black_result, -black_result))


def test_perfect_endgame_values_are_wthors_theoretical_results_up_to_24_empties(database, shared_data, tmp_path):
    """Games without passes whose theoretical result differs from the played one: up to the position
    at 24 empties the value is the theoretical result for the mover, after it the played one; and
    the exact solver agrees with WThor's theoretical result at that position (an independent check
    of what the field means)."""
    from othello_jax.solver import host

    games = database.games
    actions = wthor.decode_moves(games.moves[:2000])
    out = game_replay.replay_actions(actions)
    played, theory = (expert.black_results(x[:2000]) for x in (games.black_score, games.theoretical_score))
    long_enough = np.asarray(out.valid)[:, 60 - expert.THEORY_EMPTIES]  # a move played at 24 empties
    picks = np.flatnonzero((np.asarray(out.passes) == 0) & long_enough & (played != theory) & (theory != 0))[:3]
    assert len(picks) == 3
    for index in picks:
        game = _subset(games, [int(index)])
        rows = expert.build_expert_data(game, test_from_year=3000, value_target="perfect_endgame").train
        assert rows.size == int((game.moves != 0).sum())
        stage = np.asarray(expert.stage(rows))
        mover_sign = np.where(stage % 2 == 0, 1.0, -1.0)
        expected = np.where(stage <= 36, theory[index], played[index]) * mover_sign
        np.testing.assert_array_equal(rows.value, expected)
        at_24 = int(np.flatnonzero(stage == 36)[0])
        position = (int(rows.mover_lo[at_24]) | int(rows.mover_hi[at_24]) << 32,
                    int(rows.opponent_lo[at_24]) | int(rows.opponent_hi[at_24]) << 32)
        assert host.exact_signs(8, [position])[0] == rows.value[at_24]
    default = expert.build_expert_data(_subset(games, [int(picks[0])]), test_from_year=3000)
    assert "value_target" not in default.info  # caches and runs made before the option still match
    with pytest.raises(ValueError, match="unknown value target"):
        expert.build_expert_data(_subset(games, [0]), value_target="exact")
    # a database whose theoretical scores were computed at another depth is refused in one line
    data = bytearray((shared_data / "wthor" / "WTH_1980.wtb").read_bytes())
    data[14] = 22  # the header's depth byte
    (tmp_path / "WTH_1980.wtb").write_bytes(bytes(data))
    with pytest.raises(wthor.WthorError, match=r"WTH_1980.wtb: theoretical scores computed at 22 empties, not 24"):
        expert.load_expert_data(tmp_path, value_target="perfect_endgame")
    assert wthor.theory_depths(tmp_path) == {"WTH_1980.wtb": 22}


def test_mark_seen_and_deduplicate_on_small_arrays():
    u = lambda *v: np.array(v, np.uint32)
    rows = expert.deduplicate(u(1, 1, 1, 2), u(0, 0, 0, 0), u(4, 4, 4, 4), u(0, 0, 0, 0),
                              np.array([5, 5, 6, 5]), np.array([1.0, 0.0, -1.0, 1.0], np.float32))
    assert rows.size == 3
    merged = (rows.mover_lo == 1) & (rows.action == 5)
    assert rows.count[merged][0] == 2 and rows.value[merged][0] == 0.5
    test = expert.deduplicate(u(1, 3), u(0, 0), u(4, 4), u(0, 0), np.array([7, 7]), np.zeros(2, np.float32))
    seen = expert.mark_seen(test, rows)
    assert seen.in_train[seen.mover_lo == 1][0] and not seen.in_train[seen.mover_lo == 3][0]


def test_cache_round_trip(tmp_path, small_data):
    expert.save(small_data, tmp_path / "x.npz")
    back = expert.load(tmp_path / "x.npz")
    assert back.info == small_data.info
    for a, b in zip(back.test, small_data.test, strict=False):
        np.testing.assert_array_equal(a, b)


def test_the_random_split_holds_out_a_share_of_the_unique_rows_whatever_their_game(database, small_data):
    """Liskowski et al.'s split: the unique (position, move) rows of every game, a random share held out."""
    games = database.games
    pick = np.flatnonzero((games.year == 1990) | (games.year == 2016))
    data = expert.build_expert_data(_subset(games, pick), split="random", test_share=0.2, seed=3)
    key = lambda r: set(zip(r.mover_lo.tolist(), r.mover_hi.tolist(), r.opponent_lo.tolist(),
                            r.opponent_hi.tolist(), r.action.tolist(), strict=True))
    train, test = key(data.train), key(data.test)
    assert not train & test  # disjoint rows ...
    every = key(expert.build_expert_data(_subset(games, pick), test_from_year=3000).train)
    assert train | test == every  # ... that are all the unique rows of both years
    assert abs(len(test) / len(every) - 0.2) < 0.02
    assert data.info["split"] == "random" and data.info["train_moves"] + data.info["test_moves"] == \
        small_data.info["train_moves"] + small_data.info["test_moves"]
    assert 0 < data.test.in_train.mean() < 0.5  # positions with several expert moves: some in both splits
    again = expert.build_expert_data(_subset(games, pick), split="random", test_share=0.2, seed=3)
    assert key(again.test) == test  # the split is a function of the seed
    with pytest.raises(ValueError, match="unknown split"):
        expert.build_expert_data(_subset(games, pick[:2]), split="games")


def _grid(lo: int, hi: int) -> np.ndarray:
    bits = int(lo) | (int(hi) << 32)
    return np.array([(bits >> i) & 1 for i in range(64)], np.uint8).reshape(8, 8)


def test_the_datasets_own_limits_count_as_the_paper_counts(small_data):
    """Original/Unique sizes and a perfect classifier's accuracy (independently recounted with Python
    dicts), and Unique-S's size against a brute-force count of every row under numpy's rot90/transpose."""
    from collections import Counter, defaultdict

    rows = expert.take(small_data.train, np.arange(3000))
    out = expert.ceilings(rows)
    moves: dict[tuple, Counter] = defaultdict(Counter)
    for ml, mh, ol, oh, a, c in zip(rows.mover_lo, rows.mover_hi, rows.opponent_lo, rows.opponent_hi, rows.action,
                                    rows.count, strict=True):
        moves[(int(ml), int(mh), int(ol), int(oh))][int(a)] += int(c)
    assert out["original"] == int(rows.count.sum()) and out["unique"] == 3000 and out["positions"] == len(moves)
    assert out["ceiling_original"] == pytest.approx(sum(max(m.values()) for m in moves.values()) / out["original"])
    assert out["ceiling_unique"] == pytest.approx(len(moves) / 3000)

    few = expert.take(rows, np.arange(300))
    seen = set()
    for ml, mh, ol, oh, a in zip(few.mover_lo, few.mover_hi, few.opponent_lo, few.opponent_hi, few.action,
                                 strict=True):
        move = np.zeros((8, 8), np.uint8)
        move.flat[int(a)] = 1
        for k in range(8):
            turn = lambda g: np.rot90(g.T if k >= 4 else g, k % 4)  # noqa: B023 (used at once)
            seen.add((turn(_grid(ml, mh)).tobytes(), turn(_grid(ol, oh)).tobytes(), turn(move).tobytes()))
    assert expert.symmetric_unique(few, chunk=128) == len(seen)


def test_the_reproduction_script_counts_a_small_database_and_names_the_papers_figures(shared_data, tmp_path, capsys):
    import shutil

    from experiments import wthor_reproduction

    for name in ("WTH_1980.wtb", "WTH_1981.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, tmp_path / name)
    assert wthor_reproduction.main(["--wthor", str(tmp_path), "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)["counts"]
    assert ours["original"] > ours["unique"] > ours["positions"] > 0
    assert ours["unique"] < ours["unique_s"] <= 8 * ours["unique"]
    assert 0.5 < ours["ceiling_original"] < 1 and 0.5 < ours["ceiling_unique"] < 1
    assert wthor_reproduction.main(["--wthor", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| Unique-S rows | 39,019,056 |" in out and "| perfect classifier on Unique | 97.49% |" in out
    assert wthor_reproduction.main(["--wthor", str(tmp_path / "missing")]) == 2


def test_the_reproduction_script_scores_networks_on_both_held_out_sets_beside_the_papers(shared_data, tmp_path, capsys):
    import shutil

    from experiments import wthor_reproduction

    for name in ("WTH_1980.wtb", "WTH_2020.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, tmp_path / name)
    argv = ["--wthor", str(tmp_path), "--skip-counts", "--cache-dir=", "--network", "zero=builtin:8x8"]
    assert wthor_reproduction.main(argv + ["--json"]) == 0
    results = json.loads(capsys.readouterr().out)["networks"]
    sizes = {split: expert.load_expert_data(tmp_path, split=split).test.size for split in ("random", "year")}
    assert [(r["network"], r["split"], r["positions"]) for r in results] == [("zero", s, n) for s, n in sizes.items()]
    for r in results:
        assert 0.2 < r["top1"] < r["top3"] < 1  # the self-play network predicts experts far above chance
        assert sum(b["positions"] for b in r["by_legal_moves"].values()) == r["positions"]
    assert wthor_reproduction.main(argv) == 0
    out = capsys.readouterr().out
    assert f"| zero | random 5% (theirs) | {sizes['random']:,} | {results[0]['top1']:.1%} |" in out
    assert "| Conv8+BN (Liskowski et al.) | random 5% of Unique-S | | 62.7% |" in out and "| 1 legal |" in out
    assert wthor_reproduction.main(argv[:-1] + ["zero=missing/run"]) == 2


def test_a_cache_dir_under_home_is_expanded_not_created_in_the_working_directory(tmp_path, monkeypatch, shared_data):
    """`othello-jax accuracy`'s default --cache-dir is "~/.cache/othello-jax": it must land in $HOME."""
    small = tmp_path / "wthor"
    small.mkdir()
    for name in ("WTH_1980.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, small / name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    expert.load_expert_data(small, test_from_year=1980, cache_dir="~/cache")
    assert list((tmp_path / "home" / "cache").glob("wthor_expert_*.npz")) and not (tmp_path / "~").exists()
