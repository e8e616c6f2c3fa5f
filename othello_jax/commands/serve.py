"""`othello-jax serve`: play the engines in a web browser.

Starts a local web app and prints its address; open it in a browser. Play any engine named here
as either colour on 6x6 or 8x8, or watch two play each other, with hints (the search's top moves
on the squares, the network's value, exact values in the endgame), an evaluation graph, undo and
redo, transcripts and board strings pasted in, and the game downloaded as GGF. Each tab plays
its own game. Needs the web extra: pip install 'othello-jax[web]'.

    othello-jax serve
    othello-jax serve --agent=builtin:8x8-expert --agent=alphabeta:3 --port=8080

--agent takes a network (builtin:NAME, a .msgpack file, a training workdir) or an agent spec
(alphabeta:3, greedy, net:ckpt=...,sims=64; see `othello-jax eval --help`), once per engine;
the page never takes a path. Networks search by the clock, --seconds a move unless the page
sets its own (or a fixed number of simulations); their searches compile in the background as
the server starts. The server listens on 127.0.0.1 (this machine only) unless --host says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from othello_jax.commands import agent_options, clock_options
from othello_jax.commands.command import failure, make_parser
from othello_jax.commands.engine import exact_empties
from othello_jax.errors import InputError

if TYPE_CHECKING:
    from othello_jax.interface.web_games import GameTable

DEFAULT_AGENTS = ("builtin:8x8-expert", "builtin:6x6", "alphabeta:3", "greedy", "random")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
INSTALL_HINT = "othello-jax serve needs the web extra: pip install 'othello-jax[web]' (starlette and uvicorn)"


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("serve", __doc__)
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 lets others in)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    parser.add_argument("--agent", action="append", default=None, metavar="SPEC",
                        help=f"an engine the page offers (repeat for more; default: {', '.join(DEFAULT_AGENTS)})")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="seconds a move the networks search, unless the page says (default 3)")
    parser.add_argument("--sims", type=int, default=agent_options.PLAYING_SIMULATIONS,
                        help=f"simulations a move suggested by the page, whose networks search by the clock unless "
                             f"it is given a number (default {agent_options.PLAYING_SIMULATIONS})")
    parser.add_argument("--search", default="gumbel", help="search variant: gumbel or puct (default gumbel)")
    parser.add_argument("--solve", type=int, default=None, metavar="E",
                        help="engines play positions with at most E empties perfectly (default: the board's, "
                             "as in `play`; 0: never)")
    parser.add_argument("--no-solve", dest="solve", action="store_const", const=0,
                        help="no exact endgame play and no exact values in hints")
    return parser


def _is_spec(text: str) -> bool:
    """Whether ``text`` is an agent spec (its kind is known) rather than a network to load."""
    from othello_jax.agents import AgentSpecError, parse_spec

    try:
        parse_spec(text)
    except AgentSpecError as error:
        if str(error).startswith("unknown agent kind"):
            return False
        raise agent_options.AgentOptionError(f"--agent={text}: {error}") from None
    return True


@dataclasses.dataclass(frozen=True)
class WebEngine:
    """An engine of the page (``othello_jax.interface.web_games.Engine``): a player of the command
    line's options, and for a network its search on the clock."""

    name: str
    sizes: tuple[int, ...]
    make_agent: Callable
    analyzer: Any
    timed: Any = None


def lineup_entry(text: str, args: argparse.Namespace) -> tuple[Callable[[int], WebEngine], tuple[int, ...], bool]:
    """(build(sims) -> the engine, its board sizes, whether it is a network) for one --agent;
    a network is loaded now (a bad one fails at the start, not in the page)."""
    if _is_spec(text):
        player = agent_options.with_endgame_solve(agent_options.spec_player(text, 8), args.solve, text)
        engine = WebEngine(text, (6, 8), player.make_agent, None)
        return (lambda sims: engine), engine.sizes, False
    first = agent_options.with_endgame_solve(agent_options.checkpoint_player(text, args.sims, args.search), args.solve)
    try:
        # the opening book answers the first moves while the search still compiles, as in `play`; the
        # endgame is solved as the players solve it where the C solver builds (the hints' exact values need it)
        timed = clock_options.network_search(text, args.search, args.sims, args.solve, c_solver_only=True)
    except InputError as error:
        raise agent_options.AgentOptionError(str(error)) from None

    def build(sims: int) -> WebEngine:
        player = first if sims == args.sims else agent_options.with_endgame_solve(
            agent_options.checkpoint_player(text, sims, args.search), args.solve)
        return WebEngine(text, player.sizes, player.make_agent, player.analyzer, timed)

    return build, first.sizes, True


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (OSError when the port is taken or the host unknown)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(64)
    return sock


def local_names(host: str) -> list[str] | None:
    """The Host headers a server on ``host`` answers: the local names when it listens on this
    machine only (no page elsewhere reaches it by DNS rebinding), None (any) otherwise."""
    return [*LOCAL_HOSTS, "[::1]"] if host in LOCAL_HOSTS else None


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/"


def build_table(args: argparse.Namespace) -> tuple[GameTable, list[str]]:
    """The games' table for the parsed options and the engines' names (networks loaded now);
    :class:`~othello_jax.commands.agent_options.AgentOptionError` on bad options."""
    from othello_jax.interface.web_games import GameTable, Lineup

    if args.sims < 1:
        raise agent_options.AgentOptionError(f"--sims must be at least 1, got {args.sims}")
    if not 0 < args.seconds <= 600:
        raise agent_options.AgentOptionError(f"--seconds must be above 0 and at most 600, got {args.seconds:g}")
    if args.solve is not None and args.solve < 0:
        raise agent_options.AgentOptionError(f"--solve must be >= 0 empty squares, got {args.solve}")
    names = list(dict.fromkeys(args.agent or DEFAULT_AGENTS))
    engines, sizes, networks = {}, {}, set()
    for name in names:
        engines[name], sizes[name], network = lineup_entry(name, args)
        if network:
            networks.add(name)
    lineup = Lineup(engines, sizes, frozenset(networks), args.sims, args.seconds, exact_empties(args.solve))
    return GameTable(lineup), names


@contextlib.contextmanager
def in_background(table: GameTable, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """The app serving ``table`` on a thread until the block ends; yields its address (for the
    tests and the screenshot script: `serve` itself runs the server on the main thread)."""
    import uvicorn

    from othello_jax.interface import web_app

    sock = listen(host, port)
    app = web_app.create_app(table, local_names(host))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)
    try:
        yield address(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        table.close()
        sock.close()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("serve")
    try:
        import uvicorn

        from othello_jax.interface import web_app
    except ImportError:
        return fail(INSTALL_HINT)
    if not 0 <= args.port < 65536:
        return fail(f"--port must be between 0 and 65535, got {args.port}")
    try:
        table, names = build_table(args)
    except agent_options.AgentOptionError as error:
        return fail(error)
    sock = listen(args.host, args.port)
    table.lineup.prepare(table)  # the networks' searches compile while the page is drawn
    if args.host not in LOCAL_HOSTS:
        print(f"othello-jax serve: warning: listening on {args.host}: anyone who can reach this machine can open "
              "the page and use its CPU; there is no password", file=sys.stderr)
    print(f"othello-jax serve: open {address(sock)} in a browser (engines: {', '.join(names)}; Ctrl-C stops)",
          flush=True)
    config = uvicorn.Config(web_app.create_app(table, local_names(args.host)), log_level="warning", access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        table.close()
        sock.close()
    return 0
