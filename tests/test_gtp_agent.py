"""The GTP agent against a small fake engine: full games (with passes), and every failure mode
(illegal reply, crash, time-out, garbage, refusal, missing binary) as a clear one-line error."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from othello_jax.agents import AgentSpecError, parse_agent
from othello_jax.agents.gtp import EngineError, GtpClient, parse_response
from othello_jax.evaluation.arena import play_match
from othello_jax.game import Othello, play_transcript

FAKE = Path(__file__).with_name("fake_gtp_engine.py")


def engine_spec(*flags: str, timeout: float = 20.0) -> str:
    command = " ".join([sys.executable, str(FAKE), *flags])
    return f'gtp:cmd="{command}",timeout={timeout}'


OPENINGS_8 = ["f5d6c3d3c4f4", "f5f6e6f4", "f5d6c5f4e3"]


def play(size: int, spec: str, pairs: int = 2):
    """Engine (first) vs random: from the start on small boards, from a few openings on 8x8."""
    game = Othello(size)
    engine = parse_agent(spec, game)
    lines = ([play_transcript(t, game)[1] for t in OPENINGS_8] if size == 8 else [[] for _ in range(pairs)])
    try:
        return play_match(game, engine, parse_agent("random", game), lines, jax.random.PRNGKey(1))
    finally:
        engine.close()


def test_parse_response():
    assert parse_response(["= d3"]) == (True, "", "d3")
    assert parse_response(["=12 pass"]) == (True, "12", "pass")
    assert parse_response(["?3 illegal move"]) == (False, "3", "illegal move")
    assert parse_response(["=", "a b", "c d"]) == (True, "", "a b\nc d")
    with pytest.raises(EngineError, match="must start with"):
        parse_response(["d3"])


@pytest.mark.parametrize("size", [4, 8])
def test_full_games_against_the_fake_engine(size, tmp_path):
    log = tmp_path / "engine.log"
    result = play(size, engine_spec("--log", str(log)), pairs=6)
    game = result.game
    for record in result.records():
        state, _ = play_transcript(record.transcript(size), game)
        assert bool(state.terminal)
        _, diff = game.outcome(state)
        assert (int(diff) if int(state.color) == 0 else -int(diff)) == record.black_disc_diff
    sent = log.read_text()
    assert f"boardsize {size}" in sent and "genmove b" in sent and "genmove w" in sent
    if size == 4:  # 4x4 games are full of passes: the engine announced some and was told of others
        assert "-> pass" in sent and ("play b pass" in sent or "play w pass" in sent)


def test_illegal_reply_is_an_error():
    with pytest.raises(EngineError, match=r"played illegal move [a-h]\d as (black|white) in [XO-]+ [XO]"):
        play(4, engine_spec("--illegal-at", "3"))


def test_crash_is_an_error_with_the_exit_code():
    with pytest.raises(EngineError, match=r"exited \(code 3\) while answering 'genmove [bw]'.*crashing on purpose"):
        play(4, engine_spec("--crash-at", "2"))


def test_time_out_is_an_error():
    with pytest.raises(EngineError, match=r"did not answer 'genmove [bw]' within 1 s"):
        play(4, engine_spec("--hang-at", "2", timeout=1.0))


def test_garbage_is_an_error():
    with pytest.raises(EngineError, match="'banana', not a move"):
        play(4, engine_spec("--garbage-at", "1"))


def test_engine_refusing_the_board_size():
    with pytest.raises(AgentSpecError, match="cannot play 6x6 Othello.*unacceptable size"):
        parse_agent(engine_spec("--sizes", "8"), Othello(6))


def test_missing_engine_binary():
    with pytest.raises(AgentSpecError, match="cannot start engine '/no/such/edax'"):
        parse_agent('gtp:cmd="/no/such/edax -gtp"', Othello(8))


def test_unknown_position_is_an_error():
    """GTP cannot set up a position, so one reached in an unannounced way cannot be played."""
    game = Othello(8)
    engine = parse_agent(engine_spec(), game)
    try:
        state, _ = play_transcript("f5d6c3d3c4", game)
        batch = jax.tree.map(lambda x: x[None], state)
        with pytest.raises(EngineError, match="cannot tell how this position was reached"):
            engine.act(batch, jax.random.PRNGKey(0))
        engine.start_games([play_transcript("f5d6c3d3c4", game)[1]])
        action = int(np.asarray(engine.act(batch, jax.random.PRNGKey(0)))[0])
        assert bool(game.legal_moves(state)[action])
    finally:
        engine.close()


def test_client_stops_after_a_failure_and_closes_cleanly():
    client = GtpClient([sys.executable, str(FAKE)], timeout=10)
    assert client.send("name") == "fake"
    with pytest.raises(EngineError, match="refused 'frobnicate': unknown command"):
        client.send("frobnicate")
    assert client.send("protocol_version") == "2"  # a refusal is not fatal
    client.close()
    with pytest.raises(EngineError, match="stopped"):
        client.send("name")
