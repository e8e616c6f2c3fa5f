"""`othello-jax play`: a game against an agent in the terminal.

Type a square (``d3``) to move, ``pass`` when you have no legal move, ``undo`` to take back your
last move (and the agent's reply), ``hint`` for the legal moves, ``quit`` to stop. The board is
redrawn after every move and the game record is printed at the end. Reads standard input, so
it also works with piped moves.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, TextIO

import jax

from othello_jax.commands import agent_options
from othello_jax.game import NotationError, Othello, render, square_name
from othello_jax.session import GameSession, agent_action, color_name

HELP = "moves: a square like d3, `pass` (only when you have no move), `undo`, `hint`, `quit`"

# The agent's view of the position it just moved in (value, top moves), or "".
Commentary = Callable[[Any], str]


def play_game(session: GameSession, agent, human: int, key: jax.Array, stdin: TextIO, stdout: TextIO,
              commentary: Commentary | None = None) -> bool:
    """Alternate human input and agent moves until the game ends; False if the human quit
    or the input ended first."""
    size = session.game.size
    say = lambda text="": print(text, file=stdout, flush=True)
    say(f"You play {color_name(human)} ({'X' if human == 0 else 'O'}). {HELP}")
    while not session.is_over:
        if session.to_move != human:
            key, move_key = jax.random.split(key)
            action = agent_action(agent, session.state, move_key)
            session.play(action)
            verb = "passes" if action == session.game.pass_action else f"plays {square_name(action, size)}"
            say(f"{color_name(1 - human)} ({agent.name}) {verb}")
            if commentary is not None:
                note = commentary(agent)
                if note:
                    say(note)
            continue
        say()
        say(render(session.state, session.game))
        forced = session.must_pass()
        prompt = "You have no legal move; type pass" if forced else f"Your move ({color_name(human)})"
        stdout.write(prompt + ": ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            say("\ninput ended; game stopped")
            return False
        if not _is_terminal(stdin):
            say(line.strip())  # piped input is not echoed by a terminal: show what was read
        word = line.strip().lower()
        if not word:
            continue
        if word in ("quit", "exit", "resign", "q"):
            say("game stopped")
            return False
        if word in ("help", "?"):
            say(HELP)
        elif word == "hint":
            say("legal: " + ", ".join(square_name(a, size) for a in session.legal_actions()))
        elif word == "undo":
            say("took back your last move" if session.undo_turn(human) else "nothing to undo yet")
        else:
            try:
                session.play(session.parse_move(word))
            except NotationError as error:
                say(f"illegal: {error}")
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
    parser = argparse.ArgumentParser(prog="othello-jax play", description="Play a game against an agent.")
    agent_options.add_arguments(parser)
    parser.add_argument("--color", default="black", help="your colour: black (moves first) or white")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the agent")
    return parser


def main(argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    color = args.color.strip().lower()
    if color not in ("black", "white", "b", "w"):
        print(f"othello-jax play: --color must be black or white, got {args.color!r}", file=sys.stderr)
        return 2
    try:
        player = agent_options.build(args)
    except agent_options.AgentOptionError as error:
        print(f"othello-jax play: {error}", file=sys.stderr)
        return 2
    game = Othello(player.size)
    session = GameSession(game)
    completed = play_game(session, player.make_agent(game), 0 if color[0] == "b" else 1,
                          jax.random.PRNGKey(args.seed), stdin, stdout, player.commentary)
    finish(session, stdout)
    return 0 if completed else 1
