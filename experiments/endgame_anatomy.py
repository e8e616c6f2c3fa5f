"""Where a player's games are lost, with the C solver as ground truth: before the endgame, or
thrown away in it.

Reads the games of a match (``othello-jax eval ... --save-games=G``) and follows one player (the
side whose spec starts with ``--player``, default ``net``). For every game it did not win, the
exact result for that player (win/draw/loss, the solver's cheap window) at each of its moves
with at most ``--empties`` empty squares: a game is *thrown away* when one of its moves turned
a win into a draw or loss (or a draw into a loss), else *lost before* the endgame. With
``--checkpoint``, every position of the match where the player was to move, exactly won or
drawn, is replayed to the network at each of ``--sims``: the share of moves that keep the
result, by empties band, says whether more search (the counts) or a better evaluation would
save those games.

    othello-jax eval --size=8 --black="net:ckpt=NET,sims=128" --white=alphabeta:depth=4 --games=200 --save-games=G
    python -m experiments.endgame_anatomy --games=G --empties=20 --checkpoint=NET --sims=0,128,512
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents import parse_agent
from othello_jax.evaluation.arena import read_saved_games
from othello_jax.game import Othello, State, parse_transcript
from othello_jax.game import bitboard as bb
from othello_jax.game.rules import BLACK, WHITE
from othello_jax.solver import c_solver
from othello_jax.solver.cache import child
from othello_jax.solver.host import bitboards_from_u64, bitboards_u64, exact_signs

BANDS = ((17, 24), (13, 16), (9, 12), (1, 8))


@dataclasses.dataclass(frozen=True)
class PlayerMove:
    """One move of the followed player at a position with few empties: its exact result there
    (+1/0/-1 for the player), the solver squares (row * 8 + col) that keep that result, and the
    square it played."""
    empties: int
    mover: int
    opponent: int
    color: int
    result: int
    keeping: frozenset[int]
    played: int


@dataclasses.dataclass(frozen=True)
class Game:
    player_margin: int  # the followed player's final disc difference
    moves: tuple[PlayerMove, ...]

    @property
    def thrown_away(self) -> PlayerMove | None:
        """The first of the player's moves that worsened its exact result, if any."""
        return next((m for m in self.moves if m.played not in m.keeping), None)


def placements(mover: int, opponent: int, size: int) -> list[int]:
    """The mover's legal squares (solver numbering), or [64] for a pass when it has none."""
    legal = c_solver.library().oj_legal(mover, opponent, bb.board_mask_int(size))
    squares = [s for s in range(64) if legal >> s & 1]
    return squares or [64]


def solver_squares(actions: Sequence[int] | np.ndarray, game: Othello) -> list[int]:
    """Game actions as solver squares (row * 8 + col), a pass as 64 (what :func:`child` takes)."""
    squares = np.asarray(game.square_of_action(np.asarray(actions, np.int32)))
    return np.where(squares < 0, bb.PASS_SQUARE, squares).tolist()


def follow_game(transcript: str, player_black: bool, player_margin: int, size: int, max_empties: int) -> Game:
    """Replay one game, solving the player's positions with at most ``max_empties`` empties."""
    game = Othello(size)
    start = game.init()
    mover, opponent = (int(x) for x in (bitboards_u64(start.mover), bitboards_u64(start.opponent)))
    black_to_move, found = True, []
    for square in solver_squares(parse_transcript(transcript, size), game):
        legal = placements(mover, opponent, size)
        if legal == [64] and square != 64:  # a forced pass the transcript left out
            mover, opponent, black_to_move = opponent, mover, not black_to_move
            legal = placements(mover, opponent, size)
        empties = size * size - (mover | opponent).bit_count()
        if black_to_move == player_black and square != 64 and empties <= max_empties:
            result, *replies = exact_signs(size, [(mover, opponent)] + [child(mover, opponent, s) for s in legal])
            keeping = frozenset(s for s, reply in zip(legal, replies, strict=True) if -reply >= result)
            found.append(PlayerMove(empties, mover, opponent, BLACK if black_to_move else WHITE, result,
                                    keeping, square))
        mover, opponent = child(mover, opponent, square)
        black_to_move = not black_to_move
    return Game(player_margin, tuple(found))


def read_games(path: str, player: str, size: int, max_empties: int) -> list[Game]:
    """Every game of a saved match, followed from the side of the player named ``player``."""
    games = []
    for saved in read_saved_games(path):
        player_black = saved.side_of(player) == 0
        margin = saved.black_disc_diff if player_black else -saved.black_disc_diff
        games.append(follow_game(saved.transcript, player_black, margin, size, max_empties))
    return games


def band(empties: int) -> str:
    low, high = next((lo, hi) for lo, hi in BANDS if lo <= empties <= hi)
    return f"{low}-{high}"


def keep_table(moves: Sequence[PlayerMove], chosen: Sequence[int]) -> str:
    """'17-24: 268/298 90% ...': moves that kept a won or drawn result, by empties band."""
    total, kept = collections.Counter(), collections.Counter()
    for move, square in zip(moves, chosen, strict=True):
        total[band(move.empties)] += 1
        kept[band(move.empties)] += square in move.keeping
    cells = [f"{b}: {kept[b]}/{total[b]} {kept[b] / total[b]:.0%}" for b in (f"{lo}-{hi}" for lo, hi in BANDS)
             if total[b]]
    return "  ".join(cells + [f"all: {sum(kept.values())}/{len(moves)} {sum(kept.values()) / len(moves):.1%}"])


def as_states(moves: Sequence[PlayerMove], game: Othello) -> State:
    """The positions as one batched state for agents."""
    movers, opponents = bitboards_from_u64([m.mover for m in moves]), bitboards_from_u64([m.opponent for m in moves])
    return game.from_discs(movers, opponents, jnp.asarray([m.color for m in moves], jnp.int8))


def network_choices(checkpoint: str, sims: int, moves: Sequence[PlayerMove], game: Othello) -> list[int]:
    """The squares (solver numbering) the network's player chooses at each position."""
    agent = parse_agent(f"net:ckpt={checkpoint},sims={sims}", game)
    act, states, out = jax.jit(agent.act), as_states(moves, game), []
    for begin in range(0, len(moves), 256):
        chunk = jax.tree.map(lambda x: x[begin:begin + 256], states)
        out += solver_squares(act(chunk, jax.random.PRNGKey(begin)), game)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", required=True, help="a match's saved games (eval --save-games)")
    parser.add_argument("--player", default="net", help="the followed side: its spec starts with this")
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--empties", type=int, default=20, help="solve the player's positions up to this many empties")
    parser.add_argument("--checkpoint", help="replay the won/drawn positions to this network")
    parser.add_argument("--sims", default="0,128,512", help="simulation counts for --checkpoint (0: raw policy)")
    args = parser.parse_args(argv)
    if not 1 <= args.empties <= 24:
        parser.error("--empties must be in 1..24 (beyond that one solve takes minutes)")
    if not Path(args.games).is_file():
        parser.error(f"--games: {args.games} does not exist")
    begin = time.process_time()
    try:
        games = read_games(args.games, args.player, args.size, args.empties)
    except ValueError as error:
        parser.error(str(error))
    not_won = [g for g in games if g.player_margin <= 0]
    thrown = [g for g in not_won if g.thrown_away is not None]
    print(f"{len(games)} games, {len(not_won)} not won by {args.player}: {len(thrown)} thrown away at <= "
          f"{args.empties} empties (a won or drawn result worsened by its own move), "
          f"{len(not_won) - len(thrown)} lost before; {time.process_time() - begin:.0f} CPU s of solving")
    drops = collections.Counter(band(g.thrown_away.empties) for g in thrown)
    print("  where thrown away:", "  ".join(f"{b}: {drops[b]}" for b in (f"{lo}-{hi}" for lo, hi in BANDS)))
    ahead = [m for g in games for m in g.moves if m.result >= 0]
    if not ahead:
        return
    print(f"{len(ahead)} of its moves from won or drawn positions (all games); kept the result:")
    print(f"  {'played in the games':>22}  {keep_table(ahead, [m.played for m in ahead])}")
    if args.checkpoint:
        game = Othello(args.size)
        for sims in (int(s) for s in args.sims.split(",")):
            begin = time.time()
            chosen = network_choices(args.checkpoint, sims, ahead, game)
            label = f"sims={sims} ({time.time() - begin:.0f} s)"
            print(f"  {label:>22}  {keep_table(ahead, chosen)}", flush=True)


if __name__ == "__main__":
    main()
