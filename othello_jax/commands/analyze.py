"""`othello-jax analyze`: what a trained network and its search think of one position.

    othello-jax analyze --checkpoint=runs/othello8/best --moves=f5d6c3 --sims=400
    othello-jax analyze --checkpoint=runs/othello6 --board="------------XXX----XO-----O--------- O"

Prints the board, the network's value, the search's value, and the top moves with their
search visits, network prior and search value (q), all from the side to move's view.
"""

from __future__ import annotations

import argparse

import jax

from othello_jax.commands import agent_options
from othello_jax.commands.command import failure, make_parser
from othello_jax.evaluation.analysis import format_analysis
from othello_jax.game import NotationError, Othello, render
from othello_jax.interface.session import GameSession, color_name
from othello_jax.notices import compiling, say_while, shapes


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("analyze", __doc__)
    agent_options.add_arguments(parser, spec_agents=False)
    parser.add_argument("--board", help='board string: squares a1..h8 row by row (X, O, -), a space, the side '
                                        'to move (X or O); default: the initial position')
    parser.add_argument("--moves", help="moves to play first (from --board or the start), e.g. f5d6c3")
    parser.add_argument("--top", type=int, default=8, help="how many moves to list (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the search")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("analyze")
    if args.top < 1:
        return fail(f"--top must be at least 1, got {args.top}")
    try:
        player = agent_options.build(args)
        session = GameSession.from_text(Othello(player.size), args.board, args.moves)
    except (agent_options.AgentOptionError, NotationError) as error:
        return fail(error)
    print(render(session.state, session.game))
    if session.is_over:
        print(f"game over: {session.result_text()}")
        return 0
    size = session.game.size
    analyzer = player.analyzer
    program = ("analyze", shapes(analyzer.variables), str(analyzer.search_config), analyzer.value_margin)
    with say_while(compiling(f"the search for {size}x{size}", key=program), done="searched"):
        analysis = analyzer.analyze(session.state, jax.random.PRNGKey(args.seed))
    print(f"{color_name(session.to_move)} to move; {player.name}")
    print(format_analysis(analysis, top=args.top))
    from othello_jax.agents.proof_player import state_verdict

    proved = state_verdict(session.state, session.game)
    if proved:
        print(f"{proved} (the shipped proof; `othello-jax verify-proof` checks it)")
    return 0
