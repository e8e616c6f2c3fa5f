"""The paper's method end to end on 4x4 (solve-6x6 --size=4), the proof checker against
tampered proofs, resuming from the state file, and the shipped 6x6 proof."""

from __future__ import annotations

import json

import numpy as np
import pytest

from othello_jax.commands import solve_6x6, verify_proof
from othello_jax.solver import c_solver, proof_file
from othello_jax.solver.canonical import Rules, canonical, square_image, transform
from othello_jax.solver.proof_check import ProofRejected, verify

pytestmark = pytest.mark.skipif(not c_solver.available(), reason="needs the C solver")


@pytest.fixture(scope="module")
def proof4(tmp_path_factory):
    """A 4x4 proof made by the command, with the solver's evaluation predicting."""
    out = tmp_path_factory.mktemp("proof4") / "proof4.npz"
    assert solve_6x6.main(["--size=4", "--predictor=solver", f"--out={out}"]) == 0
    return out


def test_4x4_solved_end_to_end_by_the_paper_method(proof4, capsys):
    rules = Rules(4)
    direct = c_solver.CSolver(4).solve(*rules.start())[0]
    proof = proof_file.read(proof4)
    assert proof.value == direct == -10  # white wins 4x4 by 10 discs (3-13)
    assert proof.meta["predictor"] == "solver" and proof.meta["pivots"] == [10, 6]
    report = verify(proof)
    assert report.value == -10 and report.leaves > 0
    assert verify_proof.main([f"--proof={proof4}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["holds"] is True


def test_4x4_with_the_heuristic_and_a_resumed_state(tmp_path, capsys):
    out = tmp_path / "p.npz"
    argv = ["--size=4", "--predictor=heuristic", f"--out={out}", "--json"]
    assert solve_6x6.main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["value"] == -10 and first["solved"] > 0
    assert (tmp_path / "p.state.npz").is_file()
    assert solve_6x6.main(argv) == 0  # resumes a finished search: no new solves
    again = json.loads(capsys.readouterr().out)
    assert again["solved"] == first["solved"] and again["value"] == -10


def _tampered(source, target, change) -> proof_file.Proof:
    with np.load(source) as data:
        arrays = {name: data[name].copy() for name in data.files}
    change(arrays)
    np.savez_compressed(target, **arrays)
    return proof_file.read(target)


def test_tampered_proofs_are_rejected(proof4, tmp_path):
    def wrong_value(a):
        meta = json.loads(str(a["meta"]))
        meta["value"] = -8
        a["meta"] = np.asarray(json.dumps(meta))
        root = canonical(Rules(4).start(), 4)[0]
        row = [tuple(p) for p in a["positions"].tolist()].index(root)
        a["ge"][row], a["le"][row] = -8, -8

    def leaf_claims_more(a):
        row = int(np.flatnonzero(a["leaf"] & (a["ge"] != proof_file.NONE))[0])
        mover, opponent = (int(x) for x in a["positions"][row])
        a["ge"][row] = c_solver.CSolver(4).solve(mover, opponent)[0] + 2

    def wrong_move(a):
        rows = np.flatnonzero(~a["leaf"] & (a["ge"] != proof_file.NONE))
        a["move"][rows[0]] = (int(a["move"][rows[0]]) + 1) % 64

    def dropped_position(a):
        keep = np.ones(len(a["leaf"]), bool)
        keep[int(np.flatnonzero(a["leaf"])[0])] = False
        for name in ("positions", "ge", "le", "move", "leaf"):
            a[name] = a[name][keep]

    for change in (wrong_value, leaf_claims_more, wrong_move, dropped_position):
        proof = _tampered(proof4, tmp_path / f"{change.__name__}.npz", change)
        with pytest.raises(ProofRejected):
            verify(proof)
            pytest.fail(f"{change.__name__} was not rejected")
    assert verify_proof.main([f"--proof={tmp_path / 'wrong_value.npz'}"]) == 2


def test_bad_input_is_one_line(tmp_path, capsys):
    assert solve_6x6.main(["--size=4", "--pivots=6,10"]) == 2
    assert "--pivots must satisfy" in capsys.readouterr().err
    assert solve_6x6.main(["--predictor=oracle"]) == 2
    assert solve_6x6.main(["--size=4", "--target=3"]) == 2
    assert "--target must be an even number" in capsys.readouterr().err
    (tmp_path / "junk.npz").write_bytes(b"not a proof")
    assert solve_6x6.main(["--size=4", f"--state={tmp_path / 'junk.npz'}", f"--out={tmp_path / 'p.npz'}"]) == 2
    assert "is not a proof search's state" in capsys.readouterr().err
    with pytest.raises(proof_file.ProofFileError):
        proof_file.read(tmp_path / "junk.npz")


def test_canonical_forms_agree_with_their_symmetry():
    rules = Rules(6)
    position = rules.play(rules.start(), rules.moves(rules.start())[0])
    key, k = canonical(position, 6)
    assert key == (transform(position[0], k, 6), transform(position[1], k, 6))
    for square in rules.moves(position):  # a move maps with its position
        moved = rules.play(position, square)
        image = rules.play(key, square_image(square, k, 6))
        assert image == (transform(moved[0], k, 6), transform(moved[1], k, 6))


def test_the_shipped_6x6_proof_verifies():
    """Every leaf of the shipped proof solved again (about 30 s of CPU: 75 s on a loaded 2-core machine)."""
    proof = proof_file.read()
    assert proof.size == 6 and proof.value == -4  # white wins 6x6 by 4 discs (16-20)
    report = verify(proof)
    assert report.value == -4 and 0 < report.leaves <= sum(r.leaf for r in proof.records.values())


def _shipped_or_skip():
    if not proof_file.DEFAULT_PATH.is_file():
        pytest.skip("no shipped proof")
    return proof_file.read()


def test_the_proof_player_keeps_the_proved_result_against_any_replies():
    """From the start, as black and as white, against random replies: the proof plays the
    opening, the exact solver the last 22 empties, and the result is never below the proof's."""
    import jax

    from othello_jax.agents import random_agent, with_exact_endgame
    from othello_jax.agents.proof_player import proof_move, state_verdict, with_proof
    from othello_jax.game import Othello
    from othello_jax.solver.host import bitboards_from_u64

    proof = _shipped_or_skip()
    game, rules = Othello(6), Rules(6)
    start = rules.start()
    square, bound = proof_move(proof, rules, *start)
    assert square in rules.moves(start) and bound == -4
    assert state_verdict(game.init(), game) == "proved: white wins by 4"
    player = with_proof(with_exact_endgame(random_agent(game), game, 22, "c"), game, exact_from=22)
    opponent = random_agent(game)
    key = jax.random.PRNGKey(0)
    for colour in (0, 1):
        position, turn = start, 0
        while True:
            settled = rules.settle(position)
            if settled.final is not None:
                break
            if settled.sign < 0:
                position, turn = settled.position, 1 - turn
            state = game.from_discs(bitboards_from_u64([position[0]]), bitboards_from_u64([position[1]]), turn)
            agent = player if turn == colour else opponent
            key, sub = jax.random.split(key)
            action = int(np.asarray(agent.act(state, sub))[0])
            assert action < 36, "a pass when the mover has a move"
            position, turn = rules.play(position, (action // 6) * 8 + action % 6), 1 - turn
        final = rules.final_score(position) * (1 if turn == colour else -1)  # the proof player's view
        assert final >= (-4 if colour == 0 else 4), (colour, final)


def test_the_proof_answers_every_first_move_through_its_symmetry():
    """Black's four first moves are one position under symmetry: white's proof move is mapped
    back onto each board, legal there, and keeps white's win by 4."""
    from othello_jax.agents.proof_player import proof_move, verdict

    proof = _shipped_or_skip()
    rules = Rules(6)
    start = rules.start()
    assert verdict(proof, rules, *start, colour=0) == "proved: white wins by 4"
    replies = set()
    for square in rules.moves(start):
        after = rules.play(start, square)
        reply, bound = proof_move(proof, rules, *after)
        assert reply in rules.moves(after) and bound == 4
        assert verdict(proof, rules, *after, colour=1) == "proved: white wins by 4"
        replies.add(reply)
    assert len(replies) == 4  # one reply per symmetric board, each on its own board


def test_a_stopped_search_resumes_where_it_was(tmp_path):
    """A stop in the middle of a round keeps what was proved; the same search resumes from the
    state file and proves the same value without solving again what it had solved."""
    from othello_jax.solver.proof_search import ProofSearch

    predict = lambda positions: [0.0] * len(positions)
    full = ProofSearch(4, 10, 6, predict, say=lambda line: None).run()

    class Stop(Exception):
        pass

    class StoppingSolver:
        def __init__(self, after: int):
            self.inner, self.left = c_solver.CSolver(4), after

        def solve(self, *args):
            self.left -= 1
            if self.left < 0:
                raise Stop
            return self.inner.solve(*args)

    state = tmp_path / "state.npz"
    with pytest.raises(Stop):
        ProofSearch(4, 10, 6, predict, state, say=lambda line: None, solver=StoppingSolver(7)).run()
    resumed = ProofSearch(4, 10, 6, predict, state, say=lambda line: None).run()
    assert resumed.value == full.value == -10
    assert resumed.stats.solves == full.stats.solves  # the 7 solves before the stop were kept
