"""`othello-jax serve` in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright, clicking the page as a person does: a whole 6x6 game against greedy to its result, an
illegal click refused with a message, exact hints on the squares, a network's hints while the
page says it prepares the search, undo and redo, a pasted transcript replayed, two engines
watched to the end, two tabs playing two games, and a bad request answered while the page plays on.

One server (greedy and alpha-beta depth 1, where nothing compiles but the rules, and a tiny
untrained 6x6 network searching 0.2 s a move, compiled once) and one browser for the module; each test
opens its own browser context (a fresh tab with its own game). Skipped, with the reason, where
Chromium or Playwright is missing, except under CI=true, where that fails (scripts/test.sh installs
Chromium where it can).
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from othello_jax.game import Othello
from othello_jax.interface.session import GameSession
from othello_jax.solver import empties_on_host
from tests.tiny_checkpoint import save_tiny_checkpoint
from tests.web_helpers import running_server


# In CI (CI=true) a missing browser is a failure, never a skip: scripts/test.sh installs it there.
def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)  # a collection error: the run fails
    pytest.skip(reason, allow_module_level=True)


try:
    from playwright import sync_api
except ImportError:
    _missing("the browser tests need playwright (the [dev] extra)")
CHROMIUM = os.environ.get("OTHELLO_JAX_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    _missing("no chromium on PATH (apt-get install -y chromium)")
WAIT_MS = 60_000  # a step of the page (a move and the engine's reply) on a loaded 2-core machine


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    network = save_tiny_checkpoint(tmp_path_factory.mktemp("network") / "tiny", board_size=6)
    with running_server(["--agent=greedy", "--agent=alphabeta:1", f"--agent={network}", "--seconds=0.2"]) as running:
        running.network = str(network)
        yield running


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser):
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    yield context
    context.close()


def open_page(context, server, size: int = 6, black: str = "you", white: str = "greedy"):
    """A new tab on the server, set up for a new game with these seats."""
    page = context.new_page()
    page.goto(server.url + "/")
    page.get_by_role("button", name="d4").wait_for()
    page.select_option("#size", str(size))
    page.select_option("#black", black)
    page.select_option("#white", white)
    page.click("#new-game")
    page.wait_for_function(f"document.querySelectorAll('#board button').length === {size * size} && "
                           "document.body.dataset.busy === 'false' && "
                           f"document.getElementById('status').textContent.includes('Black to move')")
    return page


def moves_on_page(page) -> int:
    return page.locator("#moves li").count()


def settle(page, more_than: int) -> None:
    """Wait until the move list is longer than ``more_than`` and no search runs."""
    page.wait_for_function(f"document.querySelectorAll('#moves li').length > {more_than} && "
                           "document.body.dataset.busy === 'false'")


def click_legal(page) -> None:
    """Click the first square marked legal, then wait for the engine's reply."""
    before = moves_on_page(page)
    page.locator("#board button[data-state=legal]").first.click()
    settle(page, before)


def test_a_whole_6x6_game_against_greedy_by_clicks_to_its_result(context, server):
    page = open_page(context, server)
    assert page.get_by_role("button", name="c2").get_attribute("data-state") == "legal"
    for _ in range(36):
        if page.evaluate("document.body.dataset.over") == "true":
            break
        click_legal(page)
        assert page.locator("#error").inner_text() == ""
    status = page.locator("#status").inner_text()
    assert status.startswith("Game over: ") and ("wins" in status or "draw" in status), status
    black, white = (int(page.locator(f"#count-{color}").inner_text()) for color in ("black", "white"))
    winner = "black" if black > white else "white"
    assert (f"{winner} wins" if black != white else "draw") in status  # the score counts the empties for the winner
    assert page.locator("#board button[data-state=legal]").count() == 0
    assert page.locator("#graph circle.exact").count() > 0  # the solver's values in the graph, the result last
    assert page.locator("#board button .last-move").count() == 1


def test_an_illegal_click_is_refused_with_a_message(context, server):
    page = open_page(context, server)
    page.get_by_role("button", name="a1").click()
    page.wait_for_function("document.getElementById('error').textContent !== ''")
    assert page.locator("#error").inner_text() == "a1 is illegal here; legal moves: c2, b3, e4, d5"
    assert page.get_by_role("button", name="a1").get_attribute("data-state") == "empty" and moves_on_page(page) == 0
    click_legal(page)  # the game goes on
    assert page.locator("#error").inner_text() == ""


def endgame_transcript(empties: int = 16) -> str:
    """A 6x6 transcript (first legal moves) with at most ``empties`` empties, black to move with a choice."""
    session = GameSession(Othello(6))
    while not (int(empties_on_host(session.state, session.game)) <= empties and session.to_move == 0
               and not session.must_pass()):
        assert not session.is_over
        session.play(session.legal_actions()[0])
    return session.transcript()


def test_hints_show_exact_values_on_the_squares(context, server):
    page = open_page(context, server)
    moves = endgame_transcript()
    page.fill("#paste-text", moves)
    page.click("#load")
    page.wait_for_function(f"document.getElementById('transcript').value === '{moves}'")
    page.click("#hint")
    page.wait_for_function("document.querySelectorAll('#board .hint-label').length > 0 && "
                           "document.body.dataset.busy === 'false'")
    assert page.locator("#exact").inner_text().startswith("exact: ")  # "exact: black wins by 4"
    labels = page.locator("#board .hint-label").all_text_contents()
    legal = page.locator("#board button.legal").count()
    assert len(labels) == legal and all(label[0] in "+-" and label[1:].isdigit() for label in labels), labels
    assert "exact: " in page.locator("#board button.best").first.get_attribute("title")
    assert page.locator("#hint-source").inner_text() == "hints from exact endgame solver"


def test_a_networks_hints_after_the_page_says_it_prepares_the_search(context, server):
    """The first search compiles: the page says so while it waits, then shows each legal square's
    share of the visits and winning chance, the network's value as a bar, and a graph point; the
    network's own move (it plays white) adds its search's point."""
    page = open_page(context, server, white=server.network)
    page.click("#hint")
    page.wait_for_function("document.getElementById('busy-text').textContent.startsWith('preparing the search: ')")
    page.wait_for_function("document.querySelectorAll('#board .hint-label').length === 4 && "
                           "document.body.dataset.busy === 'false'")
    labels = page.locator("#board .hint-label").all_text_contents()
    chances = page.locator("#board .hint-sub").all_text_contents()
    assert all(text.endswith("%") for text in labels + chances) and len(chances) == 4, (labels, chances)
    assert page.locator("#value-text").inner_text().startswith("network: ") and page.locator("#value").is_visible()
    source = page.locator("#hint-source").inner_text()  # the simulations that fit in 0.2 s
    assert re.fullmatch(f"hints from {re.escape(server.network)}, [0-9]+ simulations", source), source
    assert page.locator("#graph circle.point").count() == 1
    page.locator("#board button.best").first.click()
    settle(page, 1)
    assert page.locator("#graph circle.point").count() == 2 and page.locator("#error").inner_text() == ""


def test_undo_takes_back_the_move_and_the_reply_and_redo_plays_them_again(context, server):
    page = open_page(context, server)
    squares = lambda: page.eval_on_selector_all("#board button", "buttons => buttons.map(b => b.dataset.state)")
    start = squares()
    click_legal(page)
    assert moves_on_page(page) == 2
    page.click("#undo")
    page.wait_for_function("document.querySelectorAll('#moves li').length === 0")
    assert squares() == start and page.locator("#message").inner_text() == "took back 2 moves"
    page.click("#redo")
    settle(page, 1)
    assert moves_on_page(page) == 2


def test_a_pasted_transcript_is_replayed_then_the_engine_answers(context, server):
    page = open_page(context, server, size=8)
    page.fill("#paste-text", "f5d6c3d3c4")
    page.click("#load")
    settle(page, 5)  # greedy (white) answers the fifth move
    assert page.locator("#transcript").input_value().startswith("f5d6c3d3c4")
    assert page.locator("#moves li").all_inner_texts()[:5] == ["f5", "d6", "c3", "d3", "c4"]
    states = [page.get_by_role("button", name=name).get_attribute("data-state") for name in ("f5", "d6", "c3", "c4")]
    assert "empty" not in states and "legal" not in states, states  # played (greedy's reply may flip some)


def test_watching_two_engines_play_to_the_end(context, server):
    page = open_page(context, server)
    page.select_option("#black", "greedy")
    page.select_option("#white", "alphabeta:1")
    page.click("#new-game")
    page.wait_for_function("document.body.dataset.over === 'true'")
    assert page.locator("#status").inner_text().startswith("Game over: ") and moves_on_page(page) > 4


def test_two_tabs_play_two_games_at_once(context, server):
    first, second = open_page(context, server), open_page(context, server, white="alphabeta:1")
    first.get_by_role("button", name="c2").click()
    second.get_by_role("button", name="e4").click()
    settle(first, 1)
    settle(second, 1)
    first_moves = (tab.locator("#moves li").first.inner_text() for tab in (first, second))
    assert list(first_moves) == ["c2", "e4"]
    first.reload()  # each tab keeps its own game
    first.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    assert [tab.locator("#transcript").input_value()[:2] for tab in (first, second)] == ["c2", "e4"]
    assert second.get_by_role("button", name="c2").get_attribute("data-state") in ("empty", "legal")


def test_the_server_answers_a_bad_request_and_the_page_plays_on(context, server):
    page = open_page(context, server)
    json_type = {"Content-Type": "application/json"}
    answer = page.request.post(server.url + "/api/games", data=b"{not json", headers=json_type)
    assert answer.status == 400 and answer.json() == {"error": "the request body is not JSON"}
    answer = page.request.get(server.url + "/api/games/no-such-game")
    assert answer.status == 404 and "no game" in answer.json()["error"]
    click_legal(page)
    assert moves_on_page(page) == 2 and page.locator("#error").inner_text() == ""
