"""Exact value (and policy) targets solved on the host (``selfplay.host_exact_empties``,
``selfplay.host_exact_policy``): the optimal moves the solver names, the rows requested, the
guarded write-back, the loop (values and optimal moves equal an independent brute-force minimax;
a run stopped and resumed in the middle equals one never stopped), the settings and the
one-line errors.

The loop runs use the synthetic self-play of ``tests/synthetic_samples.py`` (random 6x6 games,
value targets the sign of the current disc difference, so exact labels visibly change them) and
share one compiled iteration.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import jax
import numpy as np
import pytest

from othello_jax import checkpoint
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.solver import c_solver
from othello_jax.solver.host import bitboards_u64, exact_signs, exact_signs_and_best
from othello_jax.training.compiled import replay
from othello_jax.training.compiled.iteration import make_mesh
from othello_jax.training.compiled.samples import Samples
from othello_jax.training.runner import host_labels, loop
from othello_jax.training.runner.metrics import read_records
from othello_jax.training.runner.program import TrainProgram, make_train
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.run_settings import check_config
from othello_jax.training.settings.selfplay_settings import SelfPlaySettings
from tests.solver_helpers import BruteForce, random_positions
from tests.synthetic_samples import synthetic_config, synthetic_program

REPO = Path(__file__).resolve().parents[1]
ABOVE, UPTO = 2, 6  # exact_endgame_empties (already exact in self-play) and host_exact_empties
GAMES, PLIES = 4, 32  # synthetic self-play per iteration: 6x6 games played to 1-4 empty squares


def popcount(boards: np.ndarray) -> np.ndarray:
    """Discs on each 64-bit board (numpy, written apart from the game's bit tricks)."""
    boards = np.ascontiguousarray(boards, np.uint64)
    return np.unpackbits(boards.view(np.uint8).reshape(boards.shape + (8,)), axis=-1).sum(axis=-1, dtype=np.int32)


def _rows(buffer: replay.ReplayBuffer) -> dict[str, np.ndarray]:
    """A one-lane 6x6 buffer's rows as host arrays: 64-bit boards, empties, the disc difference's
    sign (the synthetic value target), value, policy, mask."""
    data = jax.tree.map(lambda x: np.asarray(x)[0], jax.device_get(buffer.data))
    mover, opponent = bitboards_u64(data.state.mover), bitboards_u64(data.state.opponent)
    return dict(mover=mover, opponent=opponent, empties=36 - popcount(mover) - popcount(opponent),
                ahead=np.sign(popcount(mover) - popcount(opponent)), value=data.value, policy=data.policy,
                mask=data.mask)


# ---------------------------------------------------------------------------------------------
# the device side and the host rows
# ---------------------------------------------------------------------------------------------
def _random_rows(lanes: int, games: int, plies: int, seed: int) -> Samples:
    """``games`` random 6x6 games of ``plies`` plies per lane, played in Python (no compile), as
    replay rows ``[lanes, games * plies]``; finished games' rows are padding."""
    brute, rng = BruteForce(6), np.random.default_rng(seed)
    start = (1 << 19 | 1 << 26, 1 << 18 | 1 << 27)  # black to move on d3 and c4, white on c3 and d4
    rows = []
    for _ in range(lanes * games):
        me, you, passed = *start, False
        for ply in range(plies):
            moves = brute.moves(me, you)
            over = not moves and not brute.moves(you, me)
            rows.append((me, you, sum(1 << sq for sq in moves), ply % 2, passed, over, ply))
            square = int(rng.choice(moves)) if moves else 64
            passed = square == 64
            me, you = brute.child(me, you, square) if not over else (me, you)
    mover, opponent, legal, color, passed, over, ply = (np.asarray(x, np.uint64 if i < 3 else None)
                                                       for i, x in enumerate(zip(*rows, strict=True)))
    board = lambda x: bb.Bitboard((x & np.uint64(0xFFFFFFFF)).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32))
    state = State(board(mover), board(opponent), board(legal), color.astype(np.int8), passed.astype(bool),
                  over.astype(bool), ply.astype(np.int16))
    samples = Samples(state, np.zeros((len(rows), 37), np.float32), np.zeros(len(rows), np.float32),
                      ~over.astype(bool))
    return jax.tree.map(lambda x: x.reshape((lanes, games * plies) + x.shape[1:]), samples)


def test_the_solver_names_every_optimal_move_and_only_those():
    """``exact_signs_and_best`` against brute-force minimax on random 6x6 positions with 4-9 empty
    squares: the result's sign, and the squares whose move keeps the position's exact score
    (ties between several optimal moves included)."""
    brute, rows = BruteForce(6), _random_rows(1, 40, 32, seed=3)
    mover, opponent = bitboards_u64(rows.state.mover).ravel(), bitboards_u64(rows.state.opponent).ravel()
    empties = 36 - popcount(mover) - popcount(opponent)
    take = np.asarray(rows.mask).ravel() & (empties >= 4) & (empties <= 9)
    positions = list(dict.fromkeys(zip(mover[take].tolist(), opponent[take].tolist(), strict=True)))
    got = exact_signs_and_best(6, positions)
    assert [sign for sign, _ in got] == exact_signs(6, positions)
    ties = 0
    for (me, you), (sign, best) in zip(positions, got, strict=True):
        value = brute.value(me, you)
        optimal = [sq for sq in brute.moves(me, you) if -brute.value(*brute.child(me, you, sq)) == value]
        assert (sign, best) == (np.sign(value), sum(1 << sq for sq in optimal)), (me, you)
        ties += len(optimal) > 1
    assert len(positions) > 100 and ties > 10


def _two_generations(game: Othello, lanes: int, capacity: int):
    """A buffer given two batches of random positions (16 rows per lane each), the first batch,
    its slots, the rows stored after it, and its requests with 25-28 empty squares (one compile)."""
    def run(first, second):
        buffer = replay.init(game, lanes, capacity, max_window=2)
        slots = replay.slots(buffer, first)
        buffer = replay.add(buffer, first)
        asked = host_labels.requests(first, slots, game, above=24, upto=28)
        return replay.add(buffer, second), first, slots, buffer.data, asked

    return jax.device_get(jax.jit(run)(_random_rows(lanes, 2, 8, seed=1), _random_rows(lanes, 2, 8, seed=2)))


def test_requests_name_the_stored_rows_and_the_write_skips_slots_the_ring_reused():
    game = Othello(6)
    lanes, capacity = 2, 20
    buffer, first, slots, stored, asked = _two_generations(game, lanes, capacity)
    valid = np.asarray(first.mask)
    assert valid.any() and np.all(np.asarray(slots)[~valid] == capacity)
    for lane, row in zip(*np.nonzero(valid), strict=True):  # each valid row is where its slot says
        slot = int(slots[lane, row])
        assert int(stored.state.mover.lo[lane, slot]) == int(first.state.mover.lo[lane, row])
        assert int(stored.state.opponent.hi[lane, slot]) == int(first.state.opponent.hi[lane, row])

    empties = 36 - popcount(bitboards_u64(first.state.mover)) - popcount(bitboards_u64(first.state.opponent))
    np.testing.assert_array_equal(np.asarray(asked.valid), valid & (empties > 24) & (empties <= 28))
    pending = host_labels.Pending.from_requests(asked)
    assert len(pending) == int(np.sum(np.asarray(asked.valid))) > 0
    pending.value = np.where(np.arange(len(pending)) % 2, 1, -1).astype(np.int8)
    # "optimal moves": the first legal square on odd rows (one move), none on even rows (policy kept)
    brute = BruteForce(6)
    first_move = [1 << brute.moves(int(m), int(o))[0] for m, o in zip(pending.mover, pending.opponent, strict=True)]
    pending.best = np.where(np.arange(len(pending)) % 2, np.asarray(first_move, np.uint64), np.uint64(0))
    again = host_labels.Pending.from_json(json.loads(json.dumps(pending.to_json())))
    assert all(np.array_equal(a, b) for a, b in zip(again.to_json().values(), pending.to_json().values(),
                                                     strict=True))

    # the ring moved on before the labels came back: rows holding another position keep their value
    before = buffer.data
    labels, dropped = pending.label_rows(lanes, 16)
    assert dropped == 0
    written, metrics = jax.jit(host_labels.write)(buffer, labels)
    after, after_policy = np.asarray(written.data.value), np.asarray(written.data.policy)
    expected, expected_policy = np.asarray(before.value).copy(), np.asarray(before.policy).copy()
    for lane, slot, mover, opponent, value, best in zip(pending.lane, pending.slot, pending.mover,
                                                        pending.opponent, pending.value, pending.best, strict=True):
        held = (bitboards_u64(before.state.mover)[lane, slot], bitboards_u64(before.state.opponent)[lane, slot])
        if before.mask[lane, slot] and held == (mover, opponent):
            expected[lane, slot] = value
            if best:
                square = int(best).bit_length() - 1  # row * 8 + column -> the 6x6 action
                expected_policy[lane, slot] = np.eye(37)[square // 8 * 6 + square % 8]
    np.testing.assert_array_equal(after, expected)
    np.testing.assert_array_equal(after_policy, expected_policy)
    written_count, stale = int(metrics["host_exact/written"]), int(metrics["host_exact/stale"])
    assert written_count + stale == len(pending) and written_count > 0 and stale > 0
    policies = int(metrics["host_exact/policies"])
    assert 0 < policies < written_count and policies == int(np.sum(np.any(after_policy != before.policy, axis=-1)))
    per_lane = np.bincount(pending.lane, minlength=lanes)
    assert pending.label_rows(lanes, 2)[1] == int(np.sum(np.maximum(per_lane - 2, 0)))  # rows that do not fit


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------
_EXECUTABLES: dict = {}
REAL_COMPILE = TrainProgram.compile


def host_config(iterations: int = 4):
    config = synthetic_config(steps_per_iteration=1, batch_size=16)
    config.iterations = iterations
    config.selfplay.update(exact_endgame_empties=ABOVE, host_exact_empties=UPTO, host_exact_policy=True)
    config.eval.every = 0
    config.checkpoint.update(every=1000, keep=5)  # saves only at a stop and at the end
    return config


@pytest.fixture
def synthetic_loop(monkeypatch):
    """The loop with the synthetic self-play; runs of one config share one compiled iteration."""
    monkeypatch.setattr(loop, "make_train", lambda config: synthetic_program(config, make_mesh(1), GAMES, PLIES))

    def compile_once(program, index, state, key):
        name = repr(program.stage_configs[index])
        if name not in _EXECUTABLES:
            _EXECUTABLES[name] = REAL_COMPILE(program, index, state, key)
        return _EXECUTABLES[name]

    monkeypatch.setattr(TrainProgram, "compile", compile_once)


def restore(workdirs: list[Path], step: int) -> list[tuple]:
    """``(state, key, meta)`` of each run's checkpoint ``step``."""
    program = synthetic_program(host_config(), make_mesh(1), GAMES, PLIES)
    template, key = program.start(0)
    out = []
    for workdir in workdirs:
        ckpts = checkpoint.Checkpoints(workdir)
        try:
            out.append(ckpts.restore(template, key, program.meta(), step=step))
        finally:
            ckpts.close()
    return out


def test_the_loop_writes_exact_values_and_a_stopped_run_resumes_to_the_same_buffer(tmp_path, synthetic_loop):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    loop.run(host_config(), straight, print_fn=lambda _: None)

    def interrupt(line: str) -> None:
        if line.startswith("[2/4]"):
            os.kill(os.getpid(), signal.SIGINT)  # between iterations, like Ctrl-C

    with pytest.raises(loop.TrainingInterrupted):
        loop.run(host_config(), stopped, print_fn=interrupt)
    pending = checkpoint.latest_saved_meta(stopped)[host_labels.META_KEY]["pending"]
    assert [item["value"] is not None for item in pending] == [True, False]  # solved / requested in flight
    loop.run(host_config(), stopped, print_fn=lambda _: None)

    # the stopped and resumed run equals the straight one: every array, the labels still pending, the metrics
    mine, theirs = restore([stopped, straight], 4)
    for a, b in zip(jax.tree.leaves((mine[0], mine[1])), jax.tree.leaves((theirs[0], theirs[1])), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert mine[2][host_labels.META_KEY] == theirs[2][host_labels.META_KEY]
    untimed = lambda records: [{k: v for k, v in r.items() if not k.endswith("_s")} for r in records]
    records = read_records(straight)
    assert untimed(read_records(stopped)) == untimed(records)
    assert [r["host_exact/written"] for r in records][:2] == [0, 0] and records[2]["host_exact/written"] > 0
    assert 0 < records[2]["host_exact/policies"] <= records[2]["host_exact/written"]
    assert all(r["host_exact/stale"] == 0 and r["host_exact/dropped"] == 0 for r in records)
    assert all(r["host_exact/solve_s"] >= 0 and r["host_exact/host_wait_s"] >= 0 for r in records)

    # the rows of the first two iterations hold exact values; the last two iterations' are pending
    state, _, meta = theirs
    rows = _rows(state.buffer)
    labelled = np.arange(len(rows["mask"])) < int(state.buffer.ends[0, 1])  # one lane, no wrap: slot = row
    asked = rows["mask"] & (rows["empties"] > ABOVE) & (rows["empties"] <= UPTO)
    brute = BruteForce(6)
    exact = np.array([np.sign(brute.value(int(m), int(o))) if a else 0
                      for m, o, a in zip(rows["mover"], rows["opponent"], asked, strict=True)])
    synthetic = rows["ahead"]
    np.testing.assert_array_equal(rows["value"][labelled & asked], exact[labelled & asked])
    assert np.any(exact[labelled & asked] != synthetic[labelled & asked])  # the labels changed something
    others = rows["mask"] & ~(labelled & asked)  # too many or too few empties, or pending
    np.testing.assert_array_equal(rows["value"][others], synthetic[others])
    # policy targets: uniform over the optimal moves where labelled (kept at a forced pass), else the
    # synthetic one (all on the first legal action)
    action, changed = lambda square: square // 8 * 6 + square % 8, 0
    for row in np.flatnonzero(rows["mask"]):
        me, you = int(rows["mover"][row]), int(rows["opponent"][row])
        moves, expected = brute.moves(me, you), np.zeros(37, np.float32)
        optimal = [sq for sq in moves if -brute.value(*brute.child(me, you, sq)) == brute.value(me, you)] \
            if labelled[row] and asked[row] else []
        expected[[action(sq) for sq in optimal] if optimal else [action(moves[0]) if moves else 36]] = 1
        np.testing.assert_allclose(rows["policy"][row], expected / expected.sum(), err_msg=str(row))
        changed += bool(optimal) and optimal != moves[:1]
    assert changed > 0
    in_flight = sorted(s for item in meta[host_labels.META_KEY]["pending"] for s in item["slot"])
    assert in_flight == sorted(np.flatnonzero(asked & ~labelled).tolist())


# ---------------------------------------------------------------------------------------------
# settings and errors
# ---------------------------------------------------------------------------------------------
def test_off_by_default_validated_and_old_configs_read_it_as_off():
    config = default_config()
    assert config.selfplay.host_exact_empties == 0 and not config.selfplay.host_exact_policy
    assert not make_train(synthetic_config(), make_mesh(1)).host_exact
    old = config.selfplay.to_dict()
    del old["host_exact_empties"], old["host_exact_workers"], old["host_exact_policy"]  # written before them
    settings = SelfPlaySettings.from_config(old)
    assert settings.host_exact_empties == 0 and settings.host_exact_workers == 1 and not settings.host_exact_policy
    for change, message in [(dict(host_exact_empties=-1), "host_exact_empties must be >= 0"),
                            (dict(host_exact_empties=6, exact_endgame_empties=6), "must exceed"),
                            (dict(host_exact_empties=8, host_exact_workers=0), "host_exact_workers must be >= 1"),
                            (dict(host_exact_policy=True), "host_exact_policy needs selfplay.host_exact_empties > 0")]:
        bad = default_config()
        bad.selfplay.update(change)
        with pytest.raises(InputError, match=message) as error:
            check_config(bad)
        assert "\n" not in str(error.value)


def test_the_solve_runs_while_a_blocking_dispatch_has_not_returned(monkeypatch):
    """On a GPU the iteration's call returns only once its loops have run (measured on an H200:
    solved after the call, labels at <= 16 empties made the 5 s iteration 8-11 s). Here the
    call blocks until the solve has begun: a solve that waited for the call would never begin."""
    game = Othello(6)
    positions = random_positions(game, [8, 9, 10, 11], seed=3)
    mover, opponent = bitboards_u64(positions.mover), bitboards_u64(positions.opponent)
    labeller = host_labels.HostLabeller(game, lanes=1, workers=1)
    labeller.pending = [host_labels.Pending(np.zeros(4, np.int32), np.arange(4, dtype=np.int32), mover, opponent)]
    solving, solve = threading.Event(), labeller._labels

    def labels_noting_the_start(todo, look):
        solving.set()
        return solve(todo, look)

    def blocking_call(state, key, *schedule, labels):
        began = solving.wait(timeout=30)
        return state, {"solve_began_before_return": began}, jax.device_put(host_labels.no_labels(1, 2))

    monkeypatch.setattr(labeller, "_labels", labels_noting_the_start)
    try:
        state, metrics = labeller.iterate(blocking_call, "state", None, (), rows=2)
    finally:
        labeller.close()
    assert state == "state" and metrics["solve_began_before_return"]
    assert metrics["host_exact/solved"] == 4
    exact = exact_signs(6, list(zip(mover.tolist(), opponent.tolist(), strict=True)))
    assert labeller.pending[0].value.tolist() == exact
    assert len(labeller.pending) == 2 and len(labeller.pending[1]) == 0  # the call's (empty) requests


def test_several_processes_or_no_c_solver_is_a_one_line_error(monkeypatch, tmp_path):
    config = host_config()
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    with pytest.raises(InputError, match=r"^selfplay.host_exact_empties is not supported with several processes"):
        host_labels.HostLabeller(Othello(6), 1, 1)
    monkeypatch.undo()

    def unavailable():
        raise c_solver.CSolverUnavailable("no C compiler found")

    monkeypatch.setattr(c_solver, "library", unavailable)
    with pytest.raises(InputError, match=r"^selfplay.host_exact_empties needs the C solver: no C compiler found$"):
        loop.run(config, tmp_path, print_fn=lambda _: None)
    assert not (tmp_path / "checkpoints").exists()


# ---------------------------------------------------------------------------------------------
# two devices (a subprocess: the device count is fixed when JAX starts)
# ---------------------------------------------------------------------------------------------
TWO_DEVICES = textwrap.dedent(f"""
    import jax, numpy as np
    from othello_jax import checkpoint
    from othello_jax.solver.host import bitboards_u64
    from othello_jax.training.runner import loop
    from othello_jax.training.compiled.iteration import make_mesh
    from tests.solver_helpers import BruteForce
    from tests.synthetic_samples import synthetic_program
    from tests.test_host_labels import host_config, popcount

    assert len(jax.devices()) == 2
    config = host_config(3)
    config.selfplay.host_exact_workers = 2  # a pool of solver processes
    config.replay.lanes = 2
    make = lambda c: synthetic_program(c, make_mesh(2), {GAMES}, {PLIES})
    loop.make_train = make
    record = loop.run(config, "RUN", print_fn=lambda _: None)
    assert record["host_exact/written"] > 0 and record["host_exact/stale"] == 0, record
    program = make(config)
    template, key = program.start(0)
    state, _, _ = checkpoint.Checkpoints("RUN").restore(template, key, program.meta())
    assert len(state.buffer.data.value.sharding.device_set) == 2
    data = jax.device_get(state.buffer.data)
    empties = 36 - popcount(bitboards_u64(data.state.mover)) - popcount(bitboards_u64(data.state.opponent))
    labelled = np.arange(data.mask.shape[1])[None] < np.asarray(state.buffer.ends)[:, :1]  # the first iteration's
    asked = data.mask & (empties > {ABOVE}) & (empties <= {UPTO}) & labelled
    movers, opponents = bitboards_u64(data.state.mover)[asked], bitboards_u64(data.state.opponent)[asked]
    brute = BruteForce(6)
    exact = [np.sign(brute.value(int(m), int(o))) for m, o in zip(movers, opponents)]
    assert len(exact) and np.array_equal(data.value[asked], exact), (data.value[asked], exact)
    assert set(np.nonzero(asked)[0]) == {{0, 1}}  # both lanes, one on each device
    print("ok", len(exact))
""")


@pytest.mark.slow  # ~1 minute: JAX started again with two devices, the iteration compiled for them
def test_two_devices_label_both_lanes(tmp_path):
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2", JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    script = TWO_DEVICES.replace("RUN", str(tmp_path / "run"))
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ok ")


def test_the_label_cost_benchmark_times_every_method_and_checks_the_optimal_moves(tmp_path, capsys):
    """``python -m experiments.bench_labels`` on a small labels file: one row per band, and the
    policy labels agree with the optimal moves of every move's exact value (the script checks)."""
    from experiments import bench_labels

    rows = _random_rows(1, 6, 32, seed=4)
    mover, opponent = bitboards_u64(rows.state.mover).ravel(), bitboards_u64(rows.state.opponent).ravel()
    live = np.asarray(rows.mask).ravel()
    path = tmp_path / "labels.npz"
    np.savez(path, size=np.int32(6), mover=mover[live], opponent=opponent[live],
             empties=(36 - popcount(mover) - popcount(opponent))[live].astype(np.int8))
    assert bench_labels.main(["--labels", str(path), "--bands", "5-8,9-12", "--per-band", "6"]) == 0
    out = capsys.readouterr().out
    for band in ("5-8", "9-12"):
        assert re.search(rf"^ +{band} +6( +\d+\.\d\d){{4}}$", out, re.M), out
    assert "optimal move sets agree" in out
    assert bench_labels.main(["--labels", str(tmp_path / "missing.npz")]) == 2
