"""A tiny GTP Othello engine for tests: its own plain-Python rules, and switches that make it
misbehave on purpose (illegal reply, crash, hang, garbage) at a chosen genmove.

    python tests/fake_gtp_engine.py [--seed S] [--sizes 4,6,8] [--illegal-at N] [--crash-at N]
                                    [--hang-at N] [--garbage-at N] [--log FILE]

Squares are written like ``d3`` (column letter, row number, a1 top left), passes as ``pass``.
It plays uniformly random legal moves (seeded) and answers ``pass`` when it has none.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]
EMPTY, BLACK, WHITE = ".", "b", "w"


class Board:
    def __init__(self, size: int):
        self.size = size
        self.cells = [[EMPTY] * size for _ in range(size)]
        h = size // 2
        self.cells[h - 1][h - 1] = self.cells[h][h] = WHITE
        self.cells[h - 1][h] = self.cells[h][h - 1] = BLACK
        self.to_move = BLACK

    def flips(self, color: str, row: int, col: int) -> list[tuple[int, int]]:
        if self.cells[row][col] != EMPTY:
            return []
        other = WHITE if color == BLACK else BLACK
        found = []
        for dr, dc in DIRECTIONS:
            run, r, c = [], row + dr, col + dc
            while 0 <= r < self.size and 0 <= c < self.size and self.cells[r][c] == other:
                run.append((r, c))
                r, c = r + dr, c + dc
            if run and 0 <= r < self.size and 0 <= c < self.size and self.cells[r][c] == color:
                found += run
        return found

    def moves(self, color: str) -> list[tuple[int, int]]:
        return [(r, c) for r in range(self.size) for c in range(self.size) if self.flips(color, r, c)]

    def place(self, color: str, row: int, col: int) -> None:
        for r, c in self.flips(color, row, col) + [(row, col)]:
            self.cells[r][c] = color
        self.to_move = WHITE if color == BLACK else BLACK


def vertex(row: int, col: int) -> str:
    return f"{chr(ord('a') + col)}{row + 1}"


def parse_vertex(text: str, size: int) -> tuple[int, int] | None:
    text = text.lower()
    if text == "pass":
        return None
    col, row = ord(text[0]) - ord("a"), int(text[1:]) - 1
    if not (0 <= row < size and 0 <= col < size):
        raise ValueError(text)
    return row, col


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default="4,6,8")
    for fault in ("illegal", "crash", "hang", "garbage"):
        parser.add_argument(f"--{fault}-at", type=int, default=0)
    parser.add_argument("--log")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    board = Board(8 if 8 in sizes else sizes[0])
    genmoves = 0
    log = open(args.log, "a") if args.log else None

    def answer(text: str = "", ok: bool = True) -> None:
        sys.stdout.write(("=" if ok else "?") + (" " + text if text else "") + "\n\n")
        sys.stdout.flush()

    for line in sys.stdin:
        words = line.split("#")[0].split()
        if not words:
            continue
        if log:
            log.write(" ".join(words) + "\n")
            log.flush()
        name, rest = words[0], words[1:]
        if name == "quit":
            answer()
            return
        if name in ("protocol_version",):
            answer("2")
        elif name == "name":
            answer("fake")
        elif name == "boardsize":
            if int(rest[0]) in sizes:
                board = Board(int(rest[0]))
                answer()
            else:
                answer("unacceptable size", ok=False)
        elif name == "clear_board":
            board = Board(board.size)
            answer()
        elif name == "play":
            color, where = rest[0][0].lower(), parse_vertex(rest[1], board.size)
            if color != board.to_move:
                answer("wrong color", ok=False)
            elif where is None:
                if board.moves(color):
                    answer("illegal pass", ok=False)
                else:
                    board.to_move = WHITE if color == BLACK else BLACK
                    answer()
            elif board.flips(color, *where):
                board.place(color, *where)
                answer()
            else:
                answer("illegal move", ok=False)
        elif name == "genmove":
            genmoves += 1
            color = rest[0][0].lower()
            if genmoves == args.crash_at:
                sys.stderr.write("fake engine: crashing on purpose\n")
                sys.stderr.flush()
                sys.exit(3)
            if genmoves == args.hang_at:
                time.sleep(3600)
            if genmoves == args.garbage_at:
                answer("banana")
                continue
            if color != board.to_move:
                answer("wrong color", ok=False)
                continue
            moves = board.moves(color)
            if genmoves == args.illegal_at:
                occupied = [(r, c) for r in range(board.size) for c in range(board.size) if board.cells[r][c] != EMPTY]
                reply = vertex(*occupied[0])
            elif not moves:
                board.to_move = WHITE if color == BLACK else BLACK
                reply = "pass"
            else:
                choice = rng.choice(moves)
                board.place(color, *choice)
                reply = vertex(*choice)
            if log:
                log.write(f"-> {reply}\n")
                log.flush()
            answer(reply)
        else:
            answer("unknown command", ok=False)


if __name__ == "__main__":
    main()
