"""`othello-jax serve` over plain HTTP (no browser): a game through the JSON API, undo and redo,
pasted transcripts and boards, two engines playing each other, bad requests answered with a 4xx
and one line while the server serves on, a crashed search shown in one line with the next game
working, and the command's own errors (missing extra, bad agent, taken port) and its address line.

One server (greedy and alpha-beta depth 1: nothing to compile but the rules) for the module.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from othello_jax.commands import serve
from othello_jax.commands.command import run_command
from tests.web_helpers import running_server

AGENTS = ["--agent=greedy", "--agent=alphabeta:1"]


@pytest.fixture(scope="module")
def server():
    with running_server(AGENTS) as running:
        yield running


def new_game(server, **options) -> dict:
    status, view = server.call("/api/games", {"size": 6, **options})
    assert status == 201, view
    return server.settled(view["id"])


def test_a_whole_game_against_an_engine_through_the_api(server):
    view = new_game(server, black="you", white="greedy")
    assert view["status"] == "Black to move (your move)." and view["counts"] == {"black": 2, "white": 2}
    while not view["over"]:
        status, view = server.call(f"/api/games/{view['id']}/move", {"square": view["legal"][0]})
        assert status == 200, view
        view = server.settled(view["id"])
        assert not view["error"]
    assert view["status"].startswith("Game over: ") and ("wins" in view["status"] or "draw" in view["status"])
    assert view["evals"] and view["evals"][-1]["exact"]  # the solver's values in the endgame, the result last
    status, record = server.call(f"/api/games/{view['id']}/record")
    assert status == 200 and record.startswith("(;GM[Othello]") and "PW[greedy]" in record and "RE[?]" not in record


def test_undo_redo_and_a_pasted_transcript_or_board(server):
    view = new_game(server, black="you", white="alphabeta:1")
    _, view = server.call(f"/api/games/{view['id']}/load", {"text": "c2b2e4"})  # then alpha-beta (white) answers
    view = server.settled(view["id"])
    assert view["transcript"].startswith("c2b2e4") and len(view["moves"]) == 4 and view["to_move"] == "black"
    _, view = server.call(f"/api/games/{view['id']}/undo", {})
    assert view["transcript"] == "c2b2" and view["can_redo"]  # back to the person's last choice
    _, view = server.call(f"/api/games/{view['id']}/redo", {})
    assert len(view["moves"]) == 4 and not view["can_redo"]
    board = "------" "------" "--OX--" "--XXX-" "------" "------ X"  # black (the person) to move
    _, view = server.call(f"/api/games/{view['id']}/load", {"text": board})
    assert view["position"] == board and view["moves"] == [] and view["to_move"] == "black"
    _, view = server.call(f"/api/games/{view['id']}/load", {"text": "f5d6c3"})  # an 8x8 transcript
    assert view["size"] == 8 and view["transcript"].startswith("f5d6c3")


def test_two_engines_play_each_other_to_the_end(server):
    view = new_game(server, black="greedy", white="alphabeta:1")
    assert view["over"] and view["status"].startswith("Game over")
    assert sum(view["counts"].values()) <= 36 and view["seats"] == {"black": "greedy", "white": "alphabeta:1"}


@pytest.mark.parametrize("method, path, body, status, words", [
    ("POST", "/api/games", b"{not json", 400, "not JSON"),
    ("POST", "/api/games", b"[1, 2]", 400, "JSON object"),
    ("POST", "/api/games", b'{"size": 5}', 400, "board size must be 4, 6 or 8"),
    ("POST", "/api/games", b'{"size": "big"}', 400, "size must be a number"),
    ("POST", "/api/games", b'{"white": "edax"}', 400, "unknown engine 'edax'"),
    ("POST", "/api/games", b'{"white": "/bin/sh"}', 400, "unknown engine"),  # never a path from the page
    ("POST", "/api/games", b'{"sims": 0}', 400, "simulations must be between"),
    ("POST", "/api/games", b'{"seconds": "NaN"}', 400, "finite"),
    ("POST", "/api/games", b"x" * 70_000, 413, "too large"),
    ("GET", "/api/games/no-such-game", None, 404, "no game 'no-such-game'"),
    ("POST", "/api/games/no-such-game/move", b'{"square": "c2"}', 404, "no game"),
    ("GET", "/api/nothing-here", None, 404, "no such page"),
    ("DELETE", "/api/engines", None, 405, "DELETE is not allowed"),
    ("POST", "/api/games/GAME/move", b'{"square": "a1"}', 400, "a1 is illegal here; legal moves: c2, b3, e4, d5"),
    ("POST", "/api/games/GAME/move", b'{"square": "z9"}', 400, "z9"),
    ("POST", "/api/games/GAME/move", b'{"square": 3}', 400, "square must be text"),
    ("POST", "/api/games/GAME/undo", None, 400, "nothing to undo"),
    ("POST", "/api/games/GAME/redo", None, 400, "nothing to redo"),
    ("POST", "/api/games/GAME/hint", None, 400, "hints need a network for 6x6"),
    ("POST", "/api/games/GAME/load", b'{"text": "c2c2"}', 400, "cannot read that"),
    ("POST", "/api/games/GAME/load", b'{"text": "XXXX O"}', 400, "cannot read that"),
])
def test_bad_requests_get_a_4xx_with_one_line_and_the_server_serves_on(server, method, path, body, status, words):
    game = new_game(server, black="you", white="greedy")
    answer = server.call(path.replace("GAME", game["id"]), method=method, raw=body)
    assert answer[0] == status and words in answer[1]["error"] and "\n" not in answer[1]["error"], answer
    assert server.call("/api/engines")[0] == 200 and server.settled(game["id"])["board"] == game["board"]


def test_requests_another_site_could_send_are_refused(server):
    """A form or a script elsewhere can POST text/plain without asking (no CORS preflight), and a
    page on another name can reach 127.0.0.1 by DNS rebinding: both are refused."""
    form = urllib.request.Request(server.url + "/api/games", data=b'{"size": 6}', method="POST",
                                  headers={"Content-Type": "text/plain"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(form, timeout=30)
    assert refused.value.code == 415 and b"send JSON" in refused.value.read()
    rebound = urllib.request.Request(server.url + "/api/engines", headers={"Host": "attacker.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebound, timeout=30)
    assert refused.value.code == 400
    assert server.call("/api/engines")[0] == 200


def test_a_crashed_search_is_one_line_in_the_game_and_the_next_game_works(server, monkeypatch):
    lineup = server.table.lineup

    def broken(game):
        raise RuntimeError("the search broke\nmore")

    def crashing(sims):
        return dataclasses.replace(lineup.engines["greedy"](sims), make_agent=broken)

    monkeypatch.setitem(lineup.engines, "crash", crashing)
    monkeypatch.setitem(lineup.sizes, "crash", (6, 8))
    view = new_game(server, black="crash", white="you")
    assert view["error"].endswith("RuntimeError: the search broke") and view["moves"] == [] and not view["busy"]
    _, view = server.call(f"/api/games/{view['id']}/new", {"size": 6, "black": "greedy", "white": "you"})
    view = server.settled(view["id"])
    assert not view["error"] and len(view["moves"]) == 1 and view["your_turn"]


def test_the_command_without_the_web_extra_says_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert run_command("serve", serve.main, []) == 2
    assert capsys.readouterr().err == f"othello-jax serve: error: {serve.INSTALL_HINT}\n"


@pytest.mark.parametrize("argv, words", [
    (["--agent=alphabeta:x"], "--agent=alphabeta:x: option depth='x' must be an integer"),
    (["--agent=builtin:9x9"], "no built-in network '9x9'"),
    (["--port=70000"], "--port must be between 0 and 65535"),
    (["--sims=0", "--agent=greedy"], "--sims must be at least 1"),
])
def test_bad_options_are_one_line_and_exit_2(capsys, argv, words):
    assert run_command("serve", serve.main, argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("othello-jax serve: error: ") and words in err and err.count("\n") == 1, err


def test_a_taken_port_is_one_line_and_exit_2(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert run_command("serve", serve.main, ["--agent=greedy", f"--port={port}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"othello-jax serve: error: cannot listen on 127.0.0.1:{port}") and err.count("\n") == 1


def test_serve_prints_its_address_warns_on_an_open_host_and_stops_on_ctrl_c():
    process = subprocess.Popen([sys.executable, "-m", "othello_jax.cli", "serve", "--agent=greedy", "--host=0.0.0.0",
                                "--port=0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, OTHELLO_JAX_XLA_CACHE="off"))
    try:
        line = process.stdout.readline()
        assert line.startswith("othello-jax serve: open http://0.0.0.0:") and "engines: greedy" in line, line
        port = int(line.split("http://0.0.0.0:")[1].split("/")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
            assert b'<script type="module" src="/static/app.js">' in page.read()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    finally:
        process.kill()
    err = process.stderr.read()
    assert "warning: listening on 0.0.0.0" in err and code in (0, 130), (code, err)

