/* Exact Othello endgame solver on 64-bit bitboards, called from Python through ctypes.
 *
 * Board convention as in othello_jax.game: square = row * 8 + col, A1 = bit 0, H1 = bit 7.
 * Boards smaller than 8x8 sit in the top-left corner; `board` marks the playable squares.
 * Scores are final disc differences for the side to move with empty squares given to the
 * winner (the FFO convention), in -64..64.
 *
 * Search: negamax alpha-beta, principal-variation null windows, and at the root a series of
 * null-window searches closing in on the exact score (MTD(f)). With more than SHALLOW empty
 * squares a transposition table keeps bounds and best moves, the stored move is tried first,
 * child bounds in the table may cut a node at once (enhanced transposition cutoff), and the
 * other moves are ordered fastest-first: fewest replies for the opponent (corners counted
 * twice), fewest empty squares next to the mover's discs, corners first. With SORT_EMPTIES
 * or more empty squares the order comes instead from a shallow search of a rough value
 * (mobility, corners, frontier, X-squares), which pays for itself there. Near the leaves moves are tried
 * in odd regions first (parity) without move generation: each empty square is tried and
 * dropped if it flips nothing. The last empty square is scored from its flip count alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;

#define OJ_ABI_VERSION 4
#define SHALLOW 6          /* at most this many empties: parity search, no table */
#define ETC_EMPTIES 10     /* enhanced transposition cutoff from this many empties */
#define SORT_EMPTIES 14    /* order by shallow search from this many empties ... */
#define SORT_DEPTH 2       /* ... this deep, one ply more every SORT_STEP empties, */
#define SORT_STEP 3
#define SORT_MAX 4         /* at most this deep */
#define NO_SCORE 127
#define PASS_MOVE 64
#define NO_MOVE -1

typedef struct {
    u64 mover, opponent;
    int8_t lower, upper;
    int8_t move;
    uint8_t empties;
} Entry;

typedef struct {
    u64 nodes;
    u64 board; /* playable squares */
    u64 corners;
    u64 corner[4], x_square[4]; /* each corner and its diagonal neighbour */
    u64 quadrant[4];
    int num_squares;
    Entry *table;
    u64 table_mask;
} Solver;

typedef struct {
    int sq;
    int key;
    u64 mover, opponent; /* the child position, from the opponent's view */
} Child;

static u64 RAY[8][64];
static int rays_ready = 0;
/* (row step, column step): the first four point to higher square indices. */
static const int DIRS[8][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}, {0, -1}, {-1, 0}, {-1, -1}, {-1, 1}};

static void init_rays(void) {
    if (rays_ready) return;
    for (int d = 0; d < 8; d++) {
        for (int sq = 0; sq < 64; sq++) {
            u64 ray = 0;
            int r = sq / 8 + DIRS[d][0], c = sq % 8 + DIRS[d][1];
            while (r >= 0 && r < 8 && c >= 0 && c < 8) {
                ray |= 1ULL << (r * 8 + c);
                r += DIRS[d][0];
                c += DIRS[d][1];
            }
            RAY[d][sq] = ray;
        }
    }
    rays_ready = 1;
}

static inline int popcount(u64 x) { return __builtin_popcountll(x); }

/* Opponent discs flipped when the mover places on the empty square `sq` (0: illegal). */
static inline u64 flips(u64 mover, u64 opponent, int sq) {
    u64 flipped = 0;
    for (int d = 0; d < 4; d++) { /* toward higher indices: the nearest square is the lowest bit */
        u64 ray = RAY[d][sq];
        u64 blockers = ray & ~opponent;
        u64 first = blockers & (0 - blockers);
        if (first & mover) flipped |= ray & (first - 1);
    }
    for (int d = 4; d < 8; d++) { /* toward lower indices: the nearest square is the highest bit */
        u64 ray = RAY[d][sq];
        u64 blockers = ray & ~opponent;
        if (blockers) {
            u64 first = 1ULL << (63 - __builtin_clzll(blockers));
            if (first & mover) flipped |= ray & ~((first << 1) - 1);
        }
    }
    return flipped;
}

/* All legal placements of the mover (shift-and-fill in 8 directions). */
static inline u64 legal_moves(u64 mover, u64 opponent, u64 board) {
    const u64 inner = opponent & 0x7E7E7E7E7E7E7E7EULL; /* no wrapping across the A/H files */
    u64 moves = 0, t;
#define FILL(shift_op, n, through)      \
    t = (through) & shift_op(mover, n); \
    t |= (through) & shift_op(t, n);    \
    t |= (through) & shift_op(t, n);    \
    t |= (through) & shift_op(t, n);    \
    t |= (through) & shift_op(t, n);    \
    t |= (through) & shift_op(t, n);    \
    moves |= shift_op(t, n);
#define SHL(x, n) ((x) << (n))
#define SHR(x, n) ((x) >> (n))
    FILL(SHL, 1, inner)
    FILL(SHR, 1, inner)
    FILL(SHL, 8, opponent)
    FILL(SHR, 8, opponent)
    FILL(SHL, 7, inner)
    FILL(SHR, 7, inner)
    FILL(SHL, 9, inner)
    FILL(SHR, 9, inner)
#undef FILL
#undef SHL
#undef SHR
    return moves & board & ~(mover | opponent);
}

/* Empty squares next to a player's discs (where the other side may later find moves). */
static inline int frontier(const Solver *s, u64 discs, u64 other) {
    const u64 not_a = 0xFEFEFEFEFEFEFEFEULL, not_h = 0x7F7F7F7F7F7F7F7FULL;
    u64 row = discs | ((discs << 1) & not_a) | ((discs >> 1) & not_h);
    u64 near = row | (row << 8) | (row >> 8);
    return popcount(near & s->board & ~(discs | other));
}

/* Final score of a finished game for the mover: disc difference, empties to the winner. */
static inline int final_score(const Solver *s, u64 mover, u64 opponent) {
    int mine = popcount(mover), theirs = popcount(opponent);
    int diff = mine - theirs, empties = s->num_squares - mine - theirs;
    return diff > 0 ? diff + empties : diff < 0 ? diff - empties : 0;
}

/* Exact score with one empty square `sq` left. */
static inline int solve_last(Solver *s, u64 mover, u64 opponent, int sq) {
    s->nodes++;
    int diff = popcount(mover) - popcount(opponent);
    u64 f = flips(mover, opponent, sq);
    if (f) return diff + 2 * popcount(f) + 1;
    f = flips(opponent, mover, sq);
    if (f) return diff - 2 * popcount(f) - 1;
    return diff > 0 ? diff + 1 : diff < 0 ? diff - 1 : 0;
}

static inline u64 odd_regions(const Solver *s, u64 empty) {
    u64 odd = 0;
    for (int q = 0; q < 4; q++)
        if (popcount(empty & s->quadrant[q]) & 1) odd |= s->quadrant[q];
    return odd;
}

/* Search near the leaves (2 <= empties <= SHALLOW): parity ordering, no table. */
static int search_shallow(Solver *s, u64 mover, u64 opponent, int alpha, int beta, int empties, int passed) {
    s->nodes++;
    const u64 empty = s->board & ~(mover | opponent);
    const u64 odd = odd_regions(s, empty);
    const u64 groups[4] = {empty & odd & s->corners, empty & odd & ~s->corners,
                           empty & ~odd & s->corners, empty & ~odd & ~s->corners};
    int best = -NO_SCORE;
    for (int g = 0; g < 4; g++) {
        for (u64 todo = groups[g]; todo; todo &= todo - 1) {
            int sq = __builtin_ctzll(todo);
            u64 f = flips(mover, opponent, sq);
            if (!f) continue;
            u64 child_mover = opponent & ~f, child_opponent = mover | f | (1ULL << sq);
            int v;
            if (empties == 2) {
                int last = __builtin_ctzll(empty & ~(1ULL << sq));
                v = -solve_last(s, child_mover, child_opponent, last);
            } else {
                v = -search_shallow(s, child_mover, child_opponent, -beta, -alpha, empties - 1, 0);
            }
            if (v > best) {
                best = v;
                if (v > alpha) {
                    alpha = v;
                    if (alpha >= beta) return best;
                }
            }
        }
    }
    if (best == -NO_SCORE) {
        if (passed) return final_score(s, mover, opponent);
        return -search_shallow(s, opponent, mover, -beta, -alpha, empties, 1);
    }
    return best;
}

/* A rough midgame value for the mover, only for ordering moves: mobility, corners, frontier,
 * and X-squares next to an empty corner (they tend to give the corner away). */
static int rough_value(const Solver *s, u64 mover, u64 opponent) {
    u64 mine = legal_moves(mover, opponent, s->board), theirs = legal_moves(opponent, mover, s->board);
    u64 risky = 0;
    for (int k = 0; k < 4; k++)
        if (!((mover | opponent) & s->corner[k])) risky |= s->x_square[k];
    return 6 * (popcount(mine) - popcount(theirs))
         + 30 * (popcount(mover & s->corners) - popcount(opponent & s->corners))
         + 3 * (frontier(s, opponent, mover) - frontier(s, mover, opponent))
         - 25 * (popcount(mover & risky) - popcount(opponent & risky));
}

/* Depth-limited alpha-beta on rough_value. */
static int rough_search(const Solver *s, u64 mover, u64 opponent, int depth, int alpha, int beta, int passed) {
    if (depth == 0) return rough_value(s, mover, opponent);
    u64 moves = legal_moves(mover, opponent, s->board);
    if (!moves) {
        if (passed) return 1000 * final_score(s, mover, opponent);
        return -rough_search(s, opponent, mover, depth, -beta, -alpha, 1);
    }
    int best = -1000000;
    for (; moves; moves &= moves - 1) {
        int sq = __builtin_ctzll(moves);
        u64 f = flips(mover, opponent, sq);
        int v = -rough_search(s, opponent & ~f, mover | f | (1ULL << sq), depth - 1, -beta, -alpha, 0);
        if (v > best) {
            best = v;
            if (v > alpha) {
                alpha = v;
                if (alpha >= beta) break;
            }
        }
    }
    return best;
}

/* The children of a position, best-first for the mover (lowest key first). */
static int ordered_children(const Solver *s, u64 mover, u64 opponent, u64 moves, int empties, Child *out) {
    int depth = empties < SORT_EMPTIES ? 0 : SORT_DEPTH + (empties - SORT_EMPTIES) / SORT_STEP;
    if (depth > SORT_MAX) depth = SORT_MAX;
    int n = 0;
    for (; moves; moves &= moves - 1) {
        int sq = __builtin_ctzll(moves);
        u64 f = flips(mover, opponent, sq);
        Child c;
        c.sq = sq;
        c.mover = opponent & ~f;
        c.opponent = mover | f | (1ULL << sq);
        if (depth > 0) {
            c.key = rough_search(s, c.mover, c.opponent, depth, -1000000, 1000000, 0);
        } else {
            u64 replies = legal_moves(c.mover, c.opponent, s->board);
            c.key = 4 * (popcount(replies) + popcount(replies & s->corners)) - 3 * !!((1ULL << sq) & s->corners)
                  + frontier(s, c.opponent, c.mover);
        }
        int i = n++;
        while (i > 0 && out[i - 1].key > c.key) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = c;
    }
    return n;
}

static inline Entry *probe(const Solver *s, u64 mover, u64 opponent) {
    u64 h = mover * 0x9E3779B97F4A7C15ULL ^ (opponent + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 31;
    return &s->table[h & s->table_mask];
}

static inline int found(const Entry *e, u64 mover, u64 opponent) { return e->mover == mover && e->opponent == opponent; }

static void store(Entry *e, u64 mover, u64 opponent, int empties, int lower, int upper, int move) {
    if (!found(e, mover, opponent)) {
        if (e->empties > empties + 2) return; /* keep a much deeper search's result */
        e->mover = mover;
        e->opponent = opponent;
        e->lower = -64;
        e->upper = 64;
    }
    if (lower > e->lower) e->lower = (int8_t)lower;
    if (upper < e->upper) e->upper = (int8_t)upper;
    e->move = (int8_t)move;
    e->empties = (uint8_t)empties;
}

static int search(Solver *s, u64 mover, u64 opponent, int alpha, int beta, int empties, int passed, int *best_move);

/* Search with more than SHALLOW empties (and the root, which reports its best move). */
static int search_deep(Solver *s, u64 mover, u64 opponent, int alpha, int beta, int empties, int passed,
                       int *best_move) {
    s->nodes++;
    u64 moves = legal_moves(mover, opponent, s->board);
    if (!moves) {
        if (best_move) { /* the root says whether it passes or the game is over */
            int over = passed || !legal_moves(opponent, mover, s->board);
            *best_move = over ? NO_MOVE : PASS_MOVE;
            if (over) return final_score(s, mover, opponent);
        }
        if (passed) return final_score(s, mover, opponent);
        return -search(s, opponent, mover, -beta, -alpha, empties, 1, NULL);
    }
    Entry *e = probe(s, mover, opponent);
    int table_move = NO_MOVE;
    if (found(e, mover, opponent)) {
        table_move = e->move;
        if (!best_move) { /* at the root the window stays, so the best move is exact */
            if (e->lower >= beta) return e->lower;
            if (e->upper <= alpha) return e->upper;
            if (e->lower == e->upper) return e->lower;
            if (e->lower > alpha) alpha = e->lower;
            if (e->upper < beta) beta = e->upper;
        }
    }
    const int alpha0 = alpha;
    int best = -NO_SCORE, best_sq = NO_MOVE;
    if (table_move >= 0 && ((moves >> table_move) & 1)) {
        /* The stored best move first: it often refutes the node before the others are ordered. */
        u64 f = flips(mover, opponent, table_move);
        best = -search(s, opponent & ~f, mover | f | (1ULL << table_move), -beta, -alpha, empties - 1, 0, NULL);
        best_sq = table_move;
        if (best > alpha) alpha = best;
        moves &= ~(1ULL << table_move);
    }
    if (alpha < beta && moves) {
        Child children[34];
        int n = ordered_children(s, mover, opponent, moves, empties, children);
        if (!best_move && empties >= ETC_EMPTIES) { /* a child's stored bound may refute this node */
            for (int i = 0; i < n; i++) {
                const Entry *ce = probe(s, children[i].mover, children[i].opponent);
                if (found(ce, children[i].mover, children[i].opponent) && -ce->upper >= beta) return -ce->upper;
            }
        }
        for (int i = 0; i < n; i++) {
            const Child *c = &children[i];
            int v;
            if (best_sq == NO_MOVE) {
                v = -search(s, c->mover, c->opponent, -beta, -alpha, empties - 1, 0, NULL);
            } else {
                v = -search(s, c->mover, c->opponent, -alpha - 1, -alpha, empties - 1, 0, NULL);
                if (v > alpha && v < beta) v = -search(s, c->mover, c->opponent, -beta, -v, empties - 1, 0, NULL);
            }
            if (v > best) {
                best = v;
                best_sq = c->sq;
                if (v > alpha) {
                    alpha = v;
                    if (alpha >= beta) break;
                }
            }
        }
    }
    if (best <= alpha0) store(e, mover, opponent, empties, -64, best, best_sq);
    else if (best >= beta) store(e, mover, opponent, empties, best, 64, best_sq);
    else store(e, mover, opponent, empties, best, best, best_sq);
    if (best_move) *best_move = best_sq;
    return best;
}

static int search(Solver *s, u64 mover, u64 opponent, int alpha, int beta, int empties, int passed, int *best_move) {
    if (empties > SHALLOW || best_move) return search_deep(s, mover, opponent, alpha, beta, empties, passed, best_move);
    if (empties == 0) {
        s->nodes++;
        return final_score(s, mover, opponent);
    }
    if (empties == 1) return solve_last(s, mover, opponent, __builtin_ctzll(s->board & ~(mover | opponent)));
    return search_shallow(s, mover, opponent, alpha, beta, empties, passed);
}

/* The exact score by null-window searches closing in on it from a guess of +1. A search
 * that fails high names a move reaching at least the new lower bound, so the move of the
 * last such search is a best move. */
static int root_exact(Solver *s, u64 mover, u64 opponent, int empties, int *best_move) {
    int lower = -64, upper = 64, test = 1;
    *best_move = NO_MOVE;
    while (lower < upper) {
        int move = NO_MOVE;
        int r = search_deep(s, mover, opponent, test - 1, test, empties, 0, &move);
        if (r >= test) {
            lower = r;
            *best_move = move;
            test = r + 1;
        } else {
            upper = r;
            if (*best_move == NO_MOVE) *best_move = move;
            test = r;
        }
    }
    return lower;
}

/* ---- interface -------------------------------------------------------------------------- */

int oj_abi_version(void) { return OJ_ABI_VERSION; }

void *oj_create(u64 board, int size, int table_bits) {
    init_rays();
    Solver *s = (Solver *)calloc(1, sizeof(Solver));
    if (!s) return NULL;
    s->board = board;
    s->num_squares = popcount(board);
    int h = size / 2, last = size - 1;
    const int corner_rc[4][2] = {{0, 0}, {0, last}, {last, 0}, {last, last}};
    for (int k = 0; k < 4; k++) {
        int r = corner_rc[k][0], c = corner_rc[k][1];
        s->corner[k] = 1ULL << (r * 8 + c);
        s->x_square[k] = 1ULL << ((r ? r - 1 : 1) * 8 + (c ? c - 1 : 1));
        s->corners |= s->corner[k];
    }
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) s->quadrant[(r >= h) * 2 + (c >= h)] |= 1ULL << (r * 8 + c);
    if (table_bits < 4) table_bits = 4;
    s->table = (Entry *)calloc((size_t)1 << table_bits, sizeof(Entry));
    if (!s->table) {
        free(s);
        return NULL;
    }
    s->table_mask = ((u64)1 << table_bits) - 1;
    return s;
}

void oj_destroy(void *handle) {
    Solver *s = (Solver *)handle;
    if (!s) return;
    free(s->table);
    free(s);
}

void oj_clear(void *handle) {
    Solver *s = (Solver *)handle;
    memset(s->table, 0, (size_t)(s->table_mask + 1) * sizeof(Entry));
}

/* Score of (mover, opponent): exact inside the window (alpha, beta), a bound outside it
 * (the full window -64..64 gives the exact score). best_move gets the square of a best move,
 * 64 for a forced pass, -1 if the game is over; nodes the positions searched. */
int oj_solve(void *handle, u64 mover, u64 opponent, int alpha, int beta, int *best_move, u64 *nodes) {
    Solver *s = (Solver *)handle;
    s->nodes = 0;
    int empties = popcount(s->board & ~(mover | opponent));
    int move = NO_MOVE;
    int v = (alpha <= -64 && beta >= 64) ? root_exact(s, mover, opponent, empties, &move)
                                        : search_deep(s, mover, opponent, alpha, beta, empties, 0, &move);
    if (best_move) *best_move = move;
    if (nodes) *nodes = s->nodes;
    return v;
}

/* The move generator, exposed for tests against the Python rules. */
u64 oj_flips(u64 mover, u64 opponent, int sq) {
    init_rays();
    return flips(mover, opponent, sq);
}

u64 oj_legal(u64 mover, u64 opponent, u64 board) { return legal_moves(mover, opponent, board); }
