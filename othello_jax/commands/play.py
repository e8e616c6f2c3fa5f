"""`othello-jax play`: a game against an agent in the terminal.

Type a square (d3) to move, pass when you have no legal move, undo to take back your last move
(and the agent's reply), hint for the legal moves (against a checkpoint also what its search
thinks of your position), quit to stop. The board is redrawn after every move, the agent's
value estimate and most visited moves follow each of its moves, and the game record is printed
at the end. Reads standard input, so piped moves work too. The agent plays the last empty
squares perfectly with the C solver (how many: --solve=E; --no-solve turns it off). With
--seconds=S it thinks S seconds a move (--clock=T[+I]: a game clock) instead of --sims simulations.
Exit status 0 when the game ends, when you quit and when the input ends; 2 on bad options.

    othello-jax play --checkpoint=builtin:8x8-expert --color=white
    othello-jax play --checkpoint=runs/othello8/best --sims=200
    othello-jax play --checkpoint=builtin:8x8-expert --seconds=3
    othello-jax play --agent=alphabeta:depth=3 --size=6 --moves=c4
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

import jax

from othello_jax.commands import agent_options, clock_options
from othello_jax.commands.command import failure, make_parser
from othello_jax.evaluation.analysis import format_analysis
from othello_jax.game import NotationError, Othello, parse_board, render, square_name
from othello_jax.interface.session import GameSession, color_name

HELP = "moves: a square like d3, `pass` (only when you have no move), `undo`, `hint`, `quit`"

# The agent's view of the position it just moved in (value, top moves), or "".
Commentary = Callable[[Any], str]
# Advice for the human's position (e.g. the search's analysis), or None for the legal moves.
Hint = Callable[[GameSession], str]


def _say(stdout: TextIO, text: str = "") -> None:
    print(text, file=stdout, flush=True)


def agent_turn(session: GameSession, agent: Any, key: jax.Array, stdout: TextIO,
               commentary: Commentary | None) -> None:
    """The agent moves (passing when forced) and says what it played."""
    action = session.agent_move(agent, key)
    session.play(action)
    size = session.game.size
    verb = "passes" if action == session.game.pass_action else f"plays {square_name(action, size)}"
    _say(stdout, f"{color_name(session.states[-2].color)} ({agent.name}) {verb}")
    note = commentary(agent) if commentary is not None else ""
    if note:
        _say(stdout, note)


def human_turn(session: GameSession, human: int, stdin: TextIO, stdout: TextIO, hint: Hint | None) -> bool:
    """Read and carry out one line of input; False when the human quits or the input ends."""
    _say(stdout)
    _say(stdout, render(session.state, session.game))
    prompt = "You have no legal move; type pass" if session.must_pass() else f"Your move ({color_name(human)})"
    stdout.write(prompt + ": ")
    stdout.flush()
    line = stdin.readline()
    if not line:
        _say(stdout, "\ninput ended; game stopped")
        return False
    if not _is_terminal(stdin):
        _say(stdout, line.strip())  # piped input is not echoed by a terminal: show what was read
    word = line.strip().lower()
    if word in ("quit", "exit", "resign", "q"):
        _say(stdout, "game stopped")
        return False
    if word in ("help", "?"):
        _say(stdout, HELP)
    elif word == "hint":
        legal = "legal: " + ", ".join(square_name(a, session.game.size) for a in session.legal_actions())
        _say(stdout, legal if hint is None else legal + "\n" + hint(session))
    elif word == "undo":
        _say(stdout, "took back your last move" if session.undo_turn(human) else "nothing to undo yet")
    elif word:
        try:
            session.play(session.parse_move(word))
        except NotationError as error:
            _say(stdout, f"illegal: {error}")
    return True


def play_game(session: GameSession, agent: Any, human: int, key: jax.Array, stdin: TextIO, stdout: TextIO,
              commentary: Commentary | None = None, hint: Hint | None = None) -> bool:
    """Alternate human input and agent moves until the game ends; False if the human quit
    or the input ended first."""
    _say(stdout, f"You play {color_name(human)} ({'X' if human == 0 else 'O'}). {HELP}")
    while not session.is_over:
        if session.to_move == human:
            if not human_turn(session, human, stdin, stdout, hint):
                return False
        else:
            key, move_key = jax.random.split(key)
            agent_turn(session, agent, move_key, stdout, commentary)
    return True


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def finish(session: GameSession, stdout: TextIO) -> None:
    """Final board, result and the game record."""
    print(file=stdout)
    print(render(session.state, session.game, show_legal=False), file=stdout)
    if session.is_over:
        print(f"result: {session.result_text()}", file=stdout)
    print(f"record: {session.transcript() or '(no moves)'}", file=stdout, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("play", __doc__)
    agent_options.add_arguments(parser, endgame=True)
    clock_options.add_arguments(parser)
    parser.add_argument("--color", default="black", help="your colour: black (moves first) or white")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the agent")
    parser.add_argument("--board", help="start from this board string (squares row by row, X/O/-, a space, "
                                        "the side to move)")
    parser.add_argument("--moves", help="start after these moves (from --board or the start), e.g. f5d6")
    return parser


def main(argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    fail = failure("play")
    color = args.color.strip().lower()
    if color not in ("black", "white", "b", "w"):
        return fail(f"--color must be black or white, got {args.color!r}")
    try:
        player = clock_options.build(args, clock_options.move_budget(args), timed=True)
        size = player.size
        if args.board and not args.size and len(player.sizes) > 1:
            size = parse_board(args.board)[1].size  # an agent for any size: the board decides
        session = GameSession.from_text(Othello(size), args.board, args.moves)
    except (agent_options.AgentOptionError, NotationError) as error:
        return fail(error)
    game = session.game
    hint = None
    if player.analyzer is not None:
        from othello_jax.agents.proof_player import state_verdict

        def hint(session: GameSession) -> str:
            text = format_analysis(player.analyzer.analyze(session.state, jax.random.PRNGKey(args.seed)))
            proved = state_verdict(session.state, session.game)
            return text + (f"\n{proved}" if proved else "")
    agent = player.make_agent(game)
    try:
        play_game(session, agent, 0 if color[0] == "b" else 1, jax.random.PRNGKey(args.seed),
                  stdin, stdout, player.commentary, hint)
    finally:
        if getattr(agent, "close", None) is not None:
            agent.close()  # e.g. an external engine process
    finish(session, stdout)
    return 0  # stopping early (quit, end of input) is no error: 1 means a bug, 2 bad input
