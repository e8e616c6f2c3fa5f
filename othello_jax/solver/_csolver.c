/* Exact Othello endgame solver on 64-bit bitboards, called from Python through ctypes.
 *
 * Board convention as in othello_jax.game: square = row * 8 + col, A1 = bit 0, H1 = bit 7.
 * Boards smaller than 8x8 sit in the top-left corner; `board` marks the playable squares.
 * Scores are final disc differences for the side to move with empty squares given to the
 * winner (the FFO convention), in -64..64.
 *
 * Search: every node is searched with a null window (alpha, alpha + 1); the root closes in on
 * the exact score (or the score inside a requested window) by a series of such searches
 * (MTD(f)), starting from the score a shallow search of the fitted evaluation expects. The
 * layers, from the leaves up:
 *
 *  - 1 to 4 empty squares: specialised code without move generation (solve_1 .. solve_4): each
 *    empty square next to an opponent disc is tried, squares alone in their quadrant first
 *    (parity); the last square is scored from its flip count alone, read from line tables.
 *  - 5 to SHALLOW empty squares: the generated moves in odd quadrants first, corners first
 *    within each group; no table.
 *  - more: a transposition table (two-entry buckets on one cache line: one kept by depth, one
 *    always replaced, prefetched) keeps bounds and best moves; the stored move is tried first;
 *    children's stored bounds may cut a node at once (enhanced transposition cutoff); the other
 *    moves are ordered fastest-first (fewest replies for the opponent, corners counted twice,
 *    fewest empty squares next to the mover's discs, corners first). From EVAL_SORT_EMPTIES
 *    the key is a shallow search of the fitted evaluation plus the opponent's replies (with no
 *    fitted weights for the board size: a shallow search of a rough value from SORT_EMPTIES).
 *
 * At every layer from 4 empty squares up, a stability cutoff: discs of the opponent that can
 * never be flipped (edges from a table computed once per edge length, full lines, and discs
 * held in place by those) bound the mover's score from above; when that bound is at most
 * alpha the node fails low without a search. It is tried only when alpha is high enough for
 * the bound to have a chance.
 *
 * The evaluation (patterns read from the board's 8 symmetric images, plus mobility and frontier
 * counts) has weights fitted to exact scores by experiments/fit_solver_eval.py, kept in
 * _csolver_eval.h; oj_features gives the fit the same features the search reads.
 *
 * Flips and move generation use AVX2 (and AVX-512's leading-zero count) when the compiler
 * targets them (-march=native), portable 64-bit code otherwise; both give the same results.
 * Compile with -DOJ_PROFILE for node counts by empties and a trace of the root's searches.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h> /* madvise: huge pages for the table, fewer TLB misses */
#endif
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

typedef uint64_t u64;

#define OJ_ABI_VERSION 6
/* Tunables (each may be overridden with -DNAME=value for experiments; the defaults were
 * measured on FFO #20-#44 and random 6x6 positions at 22-24 empties). */
#ifndef SHALLOW
#define SHALLOW 6 /* at most this many empties: parity search over generated moves, no table */
#endif
#ifndef TABLE_EMPTIES
#define TABLE_EMPTIES 7 /* the transposition table from this many empties */
#endif
#ifndef ETC_EMPTIES
#define ETC_EMPTIES 10 /* enhanced transposition cutoff from this many empties */
#endif
/* Below EVAL_SORT_EMPTIES (or without fitted weights) moves are ordered fastest-first: the
 * key is W_MOB per reply of the opponent (corners twice), W_POT per empty square next to the
 * mover's discs, less W_CORNER for taking a corner. */
#ifndef W_MOB
#define W_MOB 4
#endif
#ifndef W_POT
#define W_POT 1
#endif
#ifndef W_CORNER
#define W_CORNER 3
#endif
/* Without fitted weights, from SORT_EMPTIES the order comes from a search of a rough value
 * SORT_DEPTH deep, one ply more every SORT_STEP empties, at most SORT_MAX. */
#ifndef SORT_EMPTIES
#define SORT_EMPTIES 14
#endif
#ifndef SORT_DEPTH
#define SORT_DEPTH 2
#endif
#ifndef SORT_STEP
#define SORT_STEP 3
#endif
#ifndef SORT_MAX
#define SORT_MAX 4
#endif
/* With fitted weights, from EVAL_SORT_EMPTIES the key is a search of the evaluation
 * EVAL_SORT_DEPTH deep (one ply more every EVAL_SORT_STEP empties, at most EVAL_SORT_MAX) plus
 * W_EVAL_MOB (1/EVAL_SCALE disc) per reply of the opponent (corners twice): the cheaper
 * refutation first among moves of about the same value. */
#ifndef EVAL_SORT_EMPTIES
#define EVAL_SORT_EMPTIES 14
#endif
#ifndef EVAL_SORT_DEPTH
#define EVAL_SORT_DEPTH 1
#endif
#ifndef EVAL_SORT_STEP
#define EVAL_SORT_STEP 3
#endif
#ifndef EVAL_SORT_MAX
#define EVAL_SORT_MAX 4
#endif
#ifndef W_EVAL_MOB
#define W_EVAL_MOB 48
#endif
/* The root's first guess: a search of the evaluation GUESS_DEPTH deep, from GUESS_EMPTIES. */
#ifndef GUESS_EMPTIES
#define GUESS_EMPTIES 12
#endif
#ifndef GUESS_DEPTH
#define GUESS_DEPTH 9
#endif
#define INF_SCORE 127
#define PASS_MOVE 64
#define NO_MOVE -1

#ifdef OJ_PROFILE
#include <stdio.h>
#define PROFILE(x) x
u64 prof_nodes[65], prof_cut[65], prof_cut_first[65], prof_table_cut[65], prof_etc_cut[65], prof_stab_try[65],
    prof_stab_cut[65];
#else
#define PROFILE(x)
#endif

/* One transposition-table entry: the position, bounds on its score, its best move. */
typedef struct {
    u64 mover, opponent;
    int8_t lower, upper;
    int8_t move;
    uint8_t empties;
    uint8_t spare[12]; /* 32 bytes: two entries fill one cache line */
} Entry;

/* Two entries share a bucket (one 64-byte cache line, one memory access per probe): the first
 * keeps the deeper search, the second takes whatever the first does not keep. */
typedef struct {
    Entry slot[2];
} Bucket;

#define EVAL_SCALE 32
#define EVAL_SCALARS 7 /* mobility (mover, opponent), corner moves (both), frontier (both), 1 */
#define EVAL_MAX_PATTERNS 6
#ifndef OJ_NO_EVAL
#include "_csolver_eval.h"
#endif

typedef struct {
    int n, patterns, phases, first, step, phase_size;
    int offset[EVAL_MAX_PATTERNS + 1]; /* where each pattern's weights start in a phase */
    const int16_t *weights;            /* NULL: no fitted weights for this size */
} EvalLayout;

typedef struct {
    u64 nodes;
    u64 board; /* playable squares */
    u64 corners, interior;
    u64 corner[4], x_square[4]; /* each corner and its diagonal neighbour */
    uint8_t quadrant_bit[64]; /* 1 << the quadrant of each square */
    int size, num_squares;
    int stability_threshold[65]; /* try the stability cutoff when alpha is at least this */
    const uint8_t *edge_stable; /* stable discs of one edge, by (mover bits, opponent bits) */
    int parity; /* bit q: an odd number of empty squares in quadrant q */
    u64 parity_squares[16]; /* the squares of the quadrants set in a parity */
    Bucket *table;
    u64 table_mask;
    EvalLayout eval;
    const int16_t *eval_weights; /* the fitted weights, symmetric (see symmetric_weights), or NULL */
} Solver;

typedef struct {
    int sq;
    int key;
    u64 mover, opponent; /* the child position, from the opponent's view */
} Child;

static u64 RAY[8][64];
static u64 RAY_UP[64][4], RAY_DOWN[64][4]; /* the same rays by square: toward higher, lower squares */
static u64 NEIGHBOUR[64];
static u64 COLUMN_OF_BYTE[256]; /* bit i of the byte -> bit 8 * i (the A file) */
static uint8_t COUNT_FLIP[8][256]; /* discs flipped on a full line by a move at `pos` (by mover bits) */
static u64 DIAG_MASK[64], ANTI_MASK[64]; /* the diagonals through each square */
static uint16_t TERNARY[1 << 10]; /* bits -> the same digits in base 3 (the evaluation's indices) */
/* Tables per board size, built on first use; threads may create solvers at once (ctypes lets go
 * of Python's lock), so a table is published atomically and a builder that loses the race frees
 * its own copy. */
static void *EDGE_STABLE[9];    /* per edge length */
static void *EVAL_SYMMETRIC[9]; /* per board size */
static int tables_ready = 0;
#if defined(__GNUC__) || defined(__clang__)
#define LOAD_ACQUIRE(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
static void *publish(void **slot, void *value) { /* the table in the slot after this call */
    void *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, value, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return value;
    free(value);
    return expected;
}
#else
#define LOAD_ACQUIRE(x) (x)
#define STORE_RELEASE(x, v) ((x) = (v))
static void *publish(void **slot, void *value) {
    if (*slot) {
        free(value);
        return *slot;
    }
    return *slot = value;
}
#endif
/* (row step, column step): the first four point to higher square indices. */
static const int DIRS[8][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}, {0, -1}, {-1, 0}, {-1, -1}, {-1, 1}};

static inline int popcount(u64 x) { return __builtin_popcountll(x); }
static inline int first_square(u64 x) { return __builtin_ctzll(x); }

static void init_tables(void) {
    if (LOAD_ACQUIRE(tables_ready)) return; /* (two first calls at once fill in the same values) */
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
            int r1 = sq / 8 + DIRS[d][0], c1 = sq % 8 + DIRS[d][1];
            if (r1 >= 0 && r1 < 8 && c1 >= 0 && c1 < 8) NEIGHBOUR[sq] |= 1ULL << (r1 * 8 + c1);
        }
    }
    for (int b = 0; b < 256; b++)
        for (int i = 0; i < 8; i++)
            if (b >> i & 1) COLUMN_OF_BYTE[b] |= 1ULL << (8 * i);
    for (int sq = 0; sq < 64; sq++)
        for (int d = 0; d < 4; d++) {
            RAY_UP[sq][d] = RAY[d][sq];
            RAY_DOWN[sq][d] = RAY[d + 4][sq];
        }
    for (int pos = 0; pos < 8; pos++)
        for (int b = 0; b < 256; b++) {
            int n = 0, k;
            for (k = pos - 1; k >= 0 && !(b >> k & 1); k--) {}
            if (k >= 0) n += pos - 1 - k;
            for (k = pos + 1; k < 8 && !(b >> k & 1); k++) {}
            if (k < 8) n += k - pos - 1;
            COUNT_FLIP[pos][b] = (uint8_t)n;
        }
    for (int sq = 0; sq < 64; sq++) {
        DIAG_MASK[sq] = RAY[2][sq] | RAY[6][sq] | 1ULL << sq;
        ANTI_MASK[sq] = RAY[3][sq] | RAY[7][sq] | 1ULL << sq;
    }
    for (int b = 0; b < 1 << 10; b++)
        for (int i = 9; i >= 0; i--) TERNARY[b] = (uint16_t)(TERNARY[b] * 3 + (b >> i & 1));
    STORE_RELEASE(tables_ready, 1);
}

/* ---- moves ------------------------------------------------------------------------------- */

/* Opponent discs flipped when the mover places on the empty square `sq` (0: illegal). Along
 * each ray the first square that is not the opponent's must be the mover's; branch-free. With
 * AVX2 the four rays toward higher squares go in one vector and the four toward lower squares in
 * another (the nearest square: the lowest bit there, the highest bit here, found with AVX-512's
 * leading-zero count where there is one, else by smearing the bits down); plain 64-bit code
 * otherwise. */
#if defined(__AVX2__) && !defined(OJ_SCALAR)
#include <immintrin.h>
static inline u64 flips(u64 mover, u64 opponent, int sq) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i P = _mm256_set1_epi64x((long long)mover), O = _mm256_set1_epi64x((long long)opponent);
    const __m256i up = _mm256_loadu_si256((const __m256i *)RAY_UP[sq]);
    const __m256i down = _mm256_loadu_si256((const __m256i *)RAY_DOWN[sq]);
    /* toward higher squares: the lowest non-opponent square of each ray, if the mover's */
    __m256i blockers = _mm256_andnot_si256(O, up);
    __m256i outflank = _mm256_and_si256(_mm256_and_si256(blockers, _mm256_sub_epi64(zero, blockers)), P);
    __m256i none = _mm256_cmpeq_epi64(outflank, zero);
    __m256i flipped = _mm256_and_si256(up, _mm256_andnot_si256(none, _mm256_sub_epi64(outflank, _mm256_set1_epi64x(1))));
    /* toward lower squares: the highest non-opponent square of each ray, if the mover's */
    blockers = _mm256_andnot_si256(O, down);
#if defined(__AVX512VL__) && defined(__AVX512CD__)
    __m256i nearest = _mm256_srlv_epi64(_mm256_set1_epi64x((long long)0x8000000000000000ULL),
                                        _mm256_lzcnt_epi64(blockers)); /* a shift by 64 gives 0 */
#else
    __m256i smear = _mm256_or_si256(blockers, _mm256_srli_epi64(blockers, 1));
    smear = _mm256_or_si256(smear, _mm256_srli_epi64(smear, 2));
    smear = _mm256_or_si256(smear, _mm256_srli_epi64(smear, 4));
    smear = _mm256_or_si256(smear, _mm256_srli_epi64(smear, 8));
    smear = _mm256_or_si256(smear, _mm256_srli_epi64(smear, 16));
    smear = _mm256_or_si256(smear, _mm256_srli_epi64(smear, 32));
    __m256i nearest = _mm256_andnot_si256(_mm256_srli_epi64(smear, 1), smear);
#endif
    outflank = _mm256_and_si256(nearest, P);
    flipped = _mm256_or_si256(flipped, _mm256_and_si256(down, _mm256_sub_epi64(zero, _mm256_slli_epi64(outflank, 1))));
    __m128i half = _mm_or_si128(_mm256_castsi256_si128(flipped), _mm256_extracti128_si256(flipped, 1));
    return (u64)_mm_cvtsi128_si64(_mm_or_si128(half, _mm_unpackhi_epi64(half, half)));
}
#else
static inline u64 flips(u64 mover, u64 opponent, int sq) {
    u64 flipped = 0;
    for (int d = 0; d < 4; d++) { /* toward higher indices: the nearest square is the lowest bit */
        const u64 ray = RAY[d][sq];
        const u64 blockers = ray & ~opponent;
        const u64 outflank = blockers & (0 - blockers) & mover;
        flipped |= ray & (outflank - (outflank != 0));
    }
    for (int d = 4; d < 8; d++) { /* toward lower indices: the nearest square is the highest bit */
        const u64 ray = RAY[d][sq];
        const u64 blockers = (ray & ~opponent) | 1; /* bit 0 keeps clz defined; masked below */
        const u64 outflank = (0x8000000000000000ULL >> __builtin_clzll(blockers)) & mover & ray;
        flipped |= ray & (0 - (outflank << 1));
    }
    return flipped;
}
#endif

/* All legal placements of the mover: in each direction the mover's discs spread over runs of
 * opponent discs (parallel prefix: two single steps, then two double steps). With AVX2 the four
 * line directions (shifts 1, 8, 9, 7) go in the lanes of one vector, both ways. */
#if defined(__AVX2__) && !defined(OJ_SCALAR)
static inline u64 legal_moves(u64 mover, u64 opponent, u64 board) {
    const __m256i shift = _mm256_set_epi64x(7, 9, 8, 1), shift2 = _mm256_add_epi64(shift, shift);
    const __m256i edges = _mm256_set_epi64x((long long)0x7E7E7E7E7E7E7E7EULL, (long long)0x7E7E7E7E7E7E7E7EULL, -1,
                                            (long long)0x7E7E7E7E7E7E7E7EULL); /* no wrapping across the A/H files */
    const __m256i P = _mm256_set1_epi64x((long long)mover);
    const __m256i O = _mm256_and_si256(_mm256_set1_epi64x((long long)opponent), edges);
    __m256i l = _mm256_and_si256(O, _mm256_sllv_epi64(P, shift));
    __m256i r = _mm256_and_si256(O, _mm256_srlv_epi64(P, shift));
    l = _mm256_or_si256(l, _mm256_and_si256(O, _mm256_sllv_epi64(l, shift)));
    r = _mm256_or_si256(r, _mm256_and_si256(O, _mm256_srlv_epi64(r, shift)));
    const __m256i ol = _mm256_and_si256(O, _mm256_sllv_epi64(O, shift));
    const __m256i or_ = _mm256_and_si256(O, _mm256_srlv_epi64(O, shift));
    l = _mm256_or_si256(l, _mm256_and_si256(ol, _mm256_sllv_epi64(l, shift2)));
    r = _mm256_or_si256(r, _mm256_and_si256(or_, _mm256_srlv_epi64(r, shift2)));
    l = _mm256_or_si256(l, _mm256_and_si256(ol, _mm256_sllv_epi64(l, shift2)));
    r = _mm256_or_si256(r, _mm256_and_si256(or_, _mm256_srlv_epi64(r, shift2)));
    __m256i m = _mm256_or_si256(_mm256_sllv_epi64(l, shift), _mm256_srlv_epi64(r, shift));
    __m128i half = _mm_or_si128(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    u64 moves = (u64)_mm_cvtsi128_si64(_mm_or_si128(half, _mm_unpackhi_epi64(half, half)));
    return moves & board & ~(mover | opponent);
}
#else
static inline u64 legal_moves(u64 mover, u64 opponent, u64 board) {
    const u64 inner = opponent & 0x7E7E7E7E7E7E7E7EULL; /* no wrapping across the A/H files */
    u64 moves = 0, l, r, ml, mr;
#define SOME_MOVES(mask, dir)                                   \
    l = (mask) & (mover << (dir));                              \
    r = (mask) & (mover >> (dir));                              \
    l |= (mask) & (l << (dir));                                 \
    r |= (mask) & (r >> (dir));                                 \
    ml = (mask) & ((mask) << (dir));                            \
    mr = (mask) & ((mask) >> (dir));                            \
    l |= ml & (l << (2 * (dir)));                               \
    r |= mr & (r >> (2 * (dir)));                               \
    l |= ml & (l << (2 * (dir)));                               \
    r |= mr & (r >> (2 * (dir)));                               \
    moves |= (l << (dir)) | (r >> (dir));
    SOME_MOVES(inner, 1)
    SOME_MOVES(opponent, 8)
    SOME_MOVES(inner, 7)
    SOME_MOVES(inner, 9)
#undef SOME_MOVES
    return moves & board & ~(mover | opponent);
}
#endif

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

/* ---- stability --------------------------------------------------------------------------- */

/* The table of stable edge discs for edges of n squares, index (mover << n) | opponent: the
 * mover's discs that no sequence of moves on the edge can flip. Each empty square may be
 * played by either side, with the flips along the edge (a placement may be legal through
 * another line, so one that flips nothing on the edge counts too); a disc is stable when it
 * stays the mover's in every position one move on. Positions are taken by number of empty
 * squares, so those one move on are known. */
static const uint8_t *edge_table(int n) {
    const uint8_t *known = (const uint8_t *)LOAD_ACQUIRE(EDGE_STABLE[n]);
    if (known) return known;
    uint8_t *t = (uint8_t *)calloc((size_t)1 << (2 * n), 1);
    if (!t) return NULL;
    const int full = (1 << n) - 1;
    for (int empties = 0; empties <= n; empties++)
        for (int m = 0; m <= full; m++)
            for (int o = 0; o <= full; o++) {
                const int empty = full & ~(m | o);
                if ((m & o) || popcount((u64)empty) != empties) continue;
                int stable = m;
                for (int x = 0; x < n && stable; x++) {
                    if (!(empty >> x & 1)) continue;
                    for (int side = 0; side < 2; side++) {
                        int me = side ? o : m, you = side ? m : o; /* `me` plays x */
                        int flipped = 0, y;
                        for (y = x - 1; y >= 0 && (you >> y & 1); y--) {}
                        if (y >= 0 && y < x - 1 && (me >> y & 1))
                            for (int z = y + 1; z < x; z++) flipped |= 1 << z;
                        for (y = x + 1; y < n && (you >> y & 1); y++) {}
                        if (y < n && y > x + 1 && (me >> y & 1))
                            for (int z = x + 1; z < y; z++) flipped |= 1 << z;
                        me |= flipped | 1 << x;
                        you &= ~flipped;
                        const int cm = side ? you : me, co = side ? me : you;
                        stable &= t[(cm << n) | co];
                    }
                }
                t[(m << n) | o] = (uint8_t)stable;
            }
    return (const uint8_t *)publish(&EDGE_STABLE[n], t);
}

/* The n squares of column `col` as the low bits of a byte (bit i = row i). */
static inline int column_bits(u64 x, int col) {
    return (int)((((x >> col) & 0x0101010101010101ULL) * 0x0102040810204080ULL) >> 56);
}

/* Stable discs of the mover on the four edges of the board. */
static inline u64 stable_edges(const Solver *s, u64 mover, u64 opponent) {
    const int n = s->size, last = n - 1, mask = (1 << n) - 1;
    const uint8_t *t = s->edge_stable;
    u64 stable = t[((int)(mover & mask) << n) | (int)(opponent & mask)];
    stable |= (u64)t[((int)(mover >> (8 * last) & mask) << n) | (int)(opponent >> (8 * last) & mask)] << (8 * last);
    stable |= COLUMN_OF_BYTE[t[(column_bits(mover, 0) << n) | column_bits(opponent, 0)]];
    stable |= COLUMN_OF_BYTE[t[(column_bits(mover, last) << n) | column_bits(opponent, last)]] << last;
    return stable;
}

/* Squares on lines (in one direction) with no empty square: `filled` has every square outside
 * the board set, so a line of the 8x8 grid is full when its playable squares are. */
static inline u64 full_lines_h(u64 filled) {
    filled &= filled >> 1;
    filled &= filled >> 2;
    filled &= filled >> 4;
    return (filled & 0x0101010101010101ULL) * 0xFF;
}

static inline u64 full_lines_v(u64 filled) {
    filled &= (filled >> 8) | (filled << 56);
    filled &= (filled >> 16) | (filled << 48);
    filled &= (filled >> 32) | (filled << 32);
    return filled;
}

/* Diagonals: spread the empty squares both ways along the diagonal; what they miss is full. */
static inline u64 full_lines_d9(u64 filled) { /* A1-H8 direction, step 9 */
    const u64 a = 0xFEFEFEFEFEFEFEFEULL, ab = 0xFCFCFCFCFCFCFCFCULL, ad = 0xF0F0F0F0F0F0F0F0ULL;
    const u64 h = 0x7F7F7F7F7F7F7F7FULL, gh = 0x3F3F3F3F3F3F3F3FULL, eh = 0x0F0F0F0F0F0F0F0FULL;
    u64 up = ~filled, down = ~filled;
    up |= (up << 9) & a;
    up |= (up << 18) & ab;
    up |= (up << 36) & ad;
    down |= (down >> 9) & h;
    down |= (down >> 18) & gh;
    down |= (down >> 36) & eh;
    return ~(up | down);
}

static inline u64 full_lines_d7(u64 filled) { /* H1-A8 direction, step 7 */
    const u64 a = 0xFEFEFEFEFEFEFEFEULL, ab = 0xFCFCFCFCFCFCFCFCULL, ad = 0xF0F0F0F0F0F0F0F0ULL;
    const u64 h = 0x7F7F7F7F7F7F7F7FULL, gh = 0x3F3F3F3F3F3F3F3FULL, eh = 0x0F0F0F0F0F0F0F0FULL;
    u64 up = ~filled, down = ~filled;
    up |= (up << 7) & h;
    up |= (up << 14) & gh;
    up |= (up << 28) & eh;
    down |= (down >> 7) & a;
    down |= (down >> 14) & ab;
    down |= (down >> 28) & ad;
    return ~(up | down);
}

/* The mover's discs that can never be flipped: stable edge discs, interior discs on four full
 * lines, and interior discs that in each of the four directions lie on a full line or next to
 * a stable disc (grown until nothing changes). */
static u64 stable_discs(const Solver *s, u64 mover, u64 opponent) {
    const u64 filled = mover | opponent | ~s->board;
    const u64 h = full_lines_h(filled), v = full_lines_v(filled);
    const u64 d7 = full_lines_d7(filled), d9 = full_lines_d9(filled);
    const u64 inner = mover & s->interior;
    u64 stable = stable_edges(s, mover, opponent) | (inner & h & v & d7 & d9);
    if (!stable) return 0;
    u64 old;
    do {
        old = stable;
        u64 sh = (stable >> 1) | (stable << 1) | h;
        u64 sv = (stable >> 8) | (stable << 8) | v;
        u64 s7 = (stable >> 7) | (stable << 7) | d7;
        u64 s9 = (stable >> 9) | (stable << 9) | d9;
        stable |= sh & sv & s7 & s9 & inner;
    } while (stable != old);
    return stable;
}

/* The stability cutoff: the opponent's stable discs bound the mover's score from above.
 * Returns 1 and sets *score to that bound when it is at most alpha. */
static inline int stability_cut(Solver *s, u64 mover, u64 opponent, int alpha, int empties, int *score) {
    if (alpha < s->stability_threshold[empties]) return 0;
    PROFILE(prof_stab_try[empties]++);
    int bound = s->num_squares - 2 * popcount(stable_discs(s, opponent, mover));
    if (bound > alpha) return 0;
    PROFILE(prof_stab_cut[empties]++);
    *score = bound;
    return 1;
}

/* ---- the last four empty squares --------------------------------------------------------- */

/* Discs a player flips by playing the last empty square `sq`: on a full board every square of
 * a line that is not the player's is the opponent's, so the four lines through `sq`, each read
 * as the player's bits (row, column, diagonals projected onto columns), give the count from a
 * table. Squares off a smaller board read as the opponent's but are never outflanked (no disc of
 * the player lies beyond them). */
static inline int last_flip_count(u64 player, int sq) {
    const int r = sq >> 3, c = sq & 7;
    const u64 spread = 0x0101010101010101ULL;
    return COUNT_FLIP[c][(player >> (8 * r)) & 0xFF]
         + COUNT_FLIP[r][(((player >> c) & spread) * 0x0102040810204080ULL) >> 56]
         + COUNT_FLIP[c][((player & DIAG_MASK[sq]) * spread) >> 56]
         + COUNT_FLIP[c][((player & ANTI_MASK[sq]) * spread) >> 56];
}

/* Exact score with one empty square `sq` left. */
static inline int solve_1(Solver *s, u64 mover, u64 opponent, int sq) {
    s->nodes++;
    int diff = 2 * popcount(mover) - s->num_squares + 1; /* mover - opponent with sq empty */
    int n = last_flip_count(mover, sq);
    if (n) return diff + 2 * n + 1;
    n = last_flip_count(opponent, sq);
    if (n) return diff - 2 * n - 1;
    return diff > 0 ? diff + 1 : diff < 0 ? diff - 1 : 0;
}

/* Score with two empty squares x1, x2 against the null window (alpha, alpha + 1). */
static int solve_2(Solver *s, u64 mover, u64 opponent, int alpha, int x1, int x2, int passed) {
    s->nodes++;
    int best = -INF_SCORE, v;
    u64 f;
    if ((NEIGHBOUR[x1] & opponent) && (f = flips(mover, opponent, x1))) {
        best = -solve_1(s, opponent & ~f, mover | f | (1ULL << x1), x2);
        if (best > alpha) return best;
    }
    if ((NEIGHBOUR[x2] & opponent) && (f = flips(mover, opponent, x2))) {
        v = -solve_1(s, opponent & ~f, mover | f | (1ULL << x2), x1);
        if (v > best) best = v;
    }
    if (best == -INF_SCORE) {
        if (passed) return final_score(s, mover, opponent);
        return -solve_2(s, opponent, mover, -alpha - 1, x1, x2, 1);
    }
    return best;
}

/* Score with three empty squares against the null window; the one alone in its quadrant first. */
static int solve_3(Solver *s, u64 mover, u64 opponent, int alpha, int x1, int x2, int x3, int passed) {
    s->nodes++;
    PROFILE(prof_nodes[3]++);
    const uint8_t *q = s->quadrant_bit;
    int parity = q[x1] ^ q[x2] ^ q[x3];
    if (!(parity & q[x1])) { /* x1 shares its quadrant: an odd one goes first */
        if (parity & q[x2]) { int t = x1; x1 = x2; x2 = t; }
        else { int t = x1; x1 = x3; x3 = x2; x2 = t; }
    }
    int best = -INF_SCORE, v;
    u64 f;
    if ((NEIGHBOUR[x1] & opponent) && (f = flips(mover, opponent, x1))) {
        best = -solve_2(s, opponent & ~f, mover | f | (1ULL << x1), -alpha - 1, x2, x3, 0);
        if (best > alpha) return best;
    }
    if ((NEIGHBOUR[x2] & opponent) && (f = flips(mover, opponent, x2))) {
        v = -solve_2(s, opponent & ~f, mover | f | (1ULL << x2), -alpha - 1, x1, x3, 0);
        if (v > alpha) return v;
        if (v > best) best = v;
    }
    if ((NEIGHBOUR[x3] & opponent) && (f = flips(mover, opponent, x3))) {
        v = -solve_2(s, opponent & ~f, mover | f | (1ULL << x3), -alpha - 1, x1, x2, 0);
        if (v > best) best = v;
    }
    if (best == -INF_SCORE) {
        if (passed) return final_score(s, mover, opponent);
        return -solve_3(s, opponent, mover, -alpha - 1, x1, x2, x3, 1);
    }
    return best;
}

/* Score with four empty squares against the null window, odd quadrants first. */
static int solve_4(Solver *s, u64 mover, u64 opponent, int alpha, int passed) {
    s->nodes++;
    PROFILE(prof_nodes[4]++);
    int score;
    if (stability_cut(s, mover, opponent, alpha, 4, &score)) return score;
    u64 empty = s->board & ~(mover | opponent);
    int x1 = first_square(empty);
    empty &= empty - 1;
    int x2 = first_square(empty);
    empty &= empty - 1;
    int x3 = first_square(empty);
    empty &= empty - 1;
    int x4 = first_square(empty);
    const uint8_t *q = s->quadrant_bit;
    const int parity = s->parity;
    /* Holes of sizes 1-1-2 are the only ones where parity reorders: the two singles first. */
    if (!(parity & q[x1])) {
        if (parity & q[x2]) {
            if (parity & q[x3]) { int t = x1; x1 = x2; x2 = x3; x3 = t; }
            else { int t = x1; x1 = x2; x2 = x4; x4 = x3; x3 = t; }
        } else if (parity & q[x3]) {
            int t = x1; x1 = x3; x3 = t;
            t = x2; x2 = x4; x4 = t;
        }
    }
    const int xs[4] = {x1, x2, x3, x4};
    int best = -INF_SCORE;
    for (int i = 0; i < 4; i++) {
        int x = xs[i];
        u64 f;
        if (!(NEIGHBOUR[x] & opponent) || !(f = flips(mover, opponent, x))) continue;
        int a = xs[i == 0 ? 1 : 0], b = xs[i <= 1 ? 2 : 1], c = xs[i <= 2 ? 3 : 2];
        int v = -solve_3(s, opponent & ~f, mover | f | (1ULL << x), -alpha - 1, a, b, c, 0);
        if (v > best) {
            best = v;
            if (v > alpha) return v;
        }
    }
    if (best == -INF_SCORE) {
        if (passed) return final_score(s, mover, opponent);
        return -solve_4(s, opponent, mover, -alpha - 1, 1);
    }
    return best;
}

/* ---- shallow search: parity, no table ---------------------------------------------------- */

static int search_shallow(Solver *s, u64 mover, u64 opponent, int alpha, int empties, int passed);

/* The null-window score of any position with at most SHALLOW empty squares. */
static inline int search_small(Solver *s, u64 mover, u64 opponent, int alpha, int empties) {
    u64 empty = s->board & ~(mover | opponent);
    const int x1 = empties ? first_square(empty) : 0;
    empty &= empty - 1;
    switch (empties) {
    case 0:
        s->nodes++;
        return final_score(s, mover, opponent);
    case 1:
        return solve_1(s, mover, opponent, x1);
    case 2:
        return solve_2(s, mover, opponent, alpha, x1, first_square(empty), 0);
    case 3: {
        const int x2 = first_square(empty);
        empty &= empty - 1;
        return solve_3(s, mover, opponent, alpha, x1, x2, first_square(empty), 0);
    }
    case 4:
        return solve_4(s, mover, opponent, alpha, 0);
    default:
        return search_shallow(s, mover, opponent, alpha, empties, 0);
    }
}

/* Null-window search with 5..SHALLOW empty squares: squares in odd quadrants first, each tried
 * only if it touches an opponent disc. */
static int search_shallow(Solver *s, u64 mover, u64 opponent, int alpha, int empties, int passed) {
    s->nodes++;
    PROFILE(prof_nodes[empties]++);
    int best = -INF_SCORE, tried = 0;
    if (stability_cut(s, mover, opponent, alpha, empties, &best)) return best;
    const u64 moves = legal_moves(mover, opponent, s->board);
    if (!moves) {
        if (passed) return final_score(s, mover, opponent);
        return -search_shallow(s, opponent, mover, -alpha - 1, empties, 1);
    }
    const u64 odd = s->parity_squares[s->parity];
    const u64 groups[4] = {moves & odd & s->corners, moves & odd & ~s->corners, moves & ~odd & s->corners,
                           moves & ~odd & ~s->corners};
    for (int g = 0; g < 4; g++) {
        for (u64 todo = groups[g]; todo; todo &= todo - 1) {
            const int x = first_square(todo);
            const u64 f = flips(mover, opponent, x);
            const u64 cm = opponent & ~f, co = mover | f | (1ULL << x);
            s->parity ^= s->quadrant_bit[x];
            int v = empties == 5 ? -solve_4(s, cm, co, -alpha - 1, 0)
                                 : -search_shallow(s, cm, co, -alpha - 1, empties - 1, 0);
            s->parity ^= s->quadrant_bit[x];
            tried++;
            if (v > best) {
                best = v;
                if (v > alpha) {
                    PROFILE(prof_cut[empties]++; if (tried == 1) prof_cut_first[empties]++);
                    return v;
                }
            }
        }
    }
    return best;
}

/* ---- transposition table ----------------------------------------------------------------- */

static inline Bucket *bucket_of(const Solver *s, u64 mover, u64 opponent) {
    u64 h = mover * 0x9E3779B97F4A7C15ULL ^ (opponent + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 31;
    return &s->table[h & s->table_mask];
}

static inline int found(const Entry *e, u64 mover, u64 opponent) { return e->mover == mover && e->opponent == opponent; }

/* The entry of a position in its bucket, or NULL. */
static inline const Entry *lookup(const Solver *s, u64 mover, u64 opponent) {
    const Bucket *b = bucket_of(s, mover, opponent);
    if (found(&b->slot[0], mover, opponent)) return &b->slot[0];
    if (found(&b->slot[1], mover, opponent)) return &b->slot[1];
    return NULL;
}

/* Keep the bound [lower, upper] and best move of a position searched with `empties` empties. */
static void store(Bucket *b, u64 mover, u64 opponent, int empties, int lower, int upper, int move) {
    Entry *e;
    if (found(&b->slot[0], mover, opponent)) e = &b->slot[0];
    else if (found(&b->slot[1], mover, opponent)) e = &b->slot[1];
    else {
        if (b->slot[0].empties <= empties) { /* deeper (or as deep) than the kept one: it takes slot 0 */
            b->slot[1] = b->slot[0];
            e = &b->slot[0];
        } else {
            e = &b->slot[1];
        }
        e->mover = mover;
        e->opponent = opponent;
        e->lower = -64;
        e->upper = 64;
        e->move = NO_MOVE;
    }
    if (lower > e->lower) e->lower = (int8_t)lower;
    if (upper < e->upper) e->upper = (int8_t)upper;
    e->move = (int8_t)move;
    e->empties = (uint8_t)empties;
}

/* ---- evaluation: patterns fitted to exact scores ---------------------------------------- */

/* A linear evaluation in discs (times EVAL_SCALE) for ordering moves and for the root's first
 * guess. Its patterns are read from each of the 8 symmetric images of the board, at the top
 * left corner: the edge row, the 3x3 corner block, the second, third (and on 8x8 fourth) rows
 * and the main diagonal, each as a base-3 index (empty 0, mover 1, opponent 2); then a few
 * counts (mobility, corner moves, frontier). Weights are per phase (ranges of empties) and come
 * from experiments/fit_solver_eval.py, which fits them to exact scores of solved positions
 * through oj_features below, so the fit and the search read the same features. */

static void eval_layout(EvalLayout *L, int n) {
    int p3 = 1;
    for (int i = 0; i < n; i++) p3 *= 3;
    const int sizes[EVAL_MAX_PATTERNS] = {p3, 19683, p3, p3, p3, p3}; /* edge, corner, rows 2-4, diagonal */
    L->n = n;
    L->patterns = n == 8 ? 6 : 5; /* a 6x6 board's fourth row is its third seen from the other side */
    int at = 0, k = 0;
    for (int i = 0; i < EVAL_MAX_PATTERNS; i++) {
        if (i == 4 && n != 8) continue;
        L->offset[k++] = at;
        at += sizes[i];
    }
    L->offset[k] = at;
    L->phase_size = at + EVAL_SCALARS;
    L->weights = NULL;
    L->phases = 1;
    L->first = 0;
    L->step = 64;
#ifdef EVAL8_PHASES
    if (n == 8) {
        L->weights = EVAL8_WEIGHTS;
        L->phases = EVAL8_PHASES;
        L->first = EVAL8_FIRST;
        L->step = EVAL8_STEP;
    }
#endif
#ifdef EVAL6_PHASES
    if (n == 6) {
        L->weights = EVAL6_WEIGHTS;
        L->phases = EVAL6_PHASES;
        L->first = EVAL6_FIRST;
        L->step = EVAL6_STEP;
    }
#endif
}

static inline u64 mirror_columns(u64 x, int n) { /* column c -> n - 1 - c */
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    return x >> (8 - n);
}

static inline u64 mirror_rows(u64 x, int n) { return __builtin_bswap64(x) >> (8 * (8 - n)); }

static inline u64 transpose(u64 x) { /* (row, col) -> (col, row) */
    u64 t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
    x ^= t ^ (t << 28);
    return x;
}

/* The A1-H8 diagonal's squares on an n x n board. */
static inline u64 diagonal(int n) { return n == 8 ? 0x8040201008040201ULL : 0x8040201008040201ULL & ((1ULL << (9 * n)) - 1); }

/* The pattern indices of one oriented image (mover m, opponent o), read at its top left. */
static inline void pattern_indices(int n, int patterns, u64 m, u64 o, int *idx) {
    const u64 row = (1ULL << n) - 1;
#define TERN(bm, bo) (TERNARY[bm] + 2 * TERNARY[bo])
    idx[0] = TERN(m & row, o & row);
    idx[1] = TERN((m & 7) | ((m >> 5) & 0x38) | ((m >> 10) & 0x1C0), (o & 7) | ((o >> 5) & 0x38) | ((o >> 10) & 0x1C0));
    idx[2] = TERN((m >> 8) & row, (o >> 8) & row);
    idx[3] = TERN((m >> 16) & row, (o >> 16) & row);
    const u64 diag = diagonal(n);
    int dm = (int)(((m & diag) * 0x0101010101010101ULL) >> 56), dn = (int)(((o & diag) * 0x0101010101010101ULL) >> 56);
    if (patterns == 6) {
        idx[4] = TERN((m >> 24) & row, (o >> 24) & row);
        idx[5] = TERN(dm, dn);
    } else {
        idx[4] = TERN(dm, dn);
    }
#undef TERN
}

/* The 8 symmetric images of a position, mover and opponent. */
static inline void images(int n, u64 m, u64 o, u64 *ms, u64 *os) {
    ms[0] = m;
    os[0] = o;
    ms[1] = mirror_columns(m, n);
    os[1] = mirror_columns(o, n);
    ms[2] = mirror_rows(m, n);
    os[2] = mirror_rows(o, n);
    ms[3] = mirror_rows(ms[1], n);
    os[3] = mirror_rows(os[1], n);
    for (int i = 0; i < 4; i++) {
        ms[4 + i] = transpose(ms[i]);
        os[4 + i] = transpose(os[i]);
    }
}

/* The count features of a position. */
static inline void scalar_features(const Solver *s, u64 mover, u64 opponent, int *x) {
    u64 mine = legal_moves(mover, opponent, s->board), theirs = legal_moves(opponent, mover, s->board);
    x[0] = popcount(mine);
    x[1] = popcount(theirs);
    x[2] = popcount(mine & s->corners);
    x[3] = popcount(theirs & s->corners);
    x[4] = frontier(s, mover, opponent);
    x[5] = frontier(s, opponent, mover);
    x[6] = 1;
}

/* The digits of a base-3 index in reverse order (a line read from its other end). */
static int reverse_digits(int index, int n) {
    int out = 0;
    for (int i = 0; i < n; i++, index /= 3) out = out * 3 + index % 3;
    return out;
}

/* A 3x3 corner block's index with rows and columns swapped (mirrored about its diagonal). */
static int transpose_block(int index) {
    int digit[9], out = 0;
    for (int i = 0; i < 9; i++, index /= 3) digit[i] = index % 3;
    for (int i = 8; i >= 0; i--) out = out * 3 + digit[(i % 3) * 3 + i / 3];
    return out;
}

/* The weights summed over the images that read the same squares, so that the search reads each
 * line, corner block and diagonal once: a line (row or column) appears in two images, read from
 * either end; a corner block in two, transposed; a diagonal in four, twice from each end. Same
 * layout as the fitted weights; built once per board size. */
static int16_t *symmetric_weights(const EvalLayout *L) {
    int16_t *sym = (int16_t *)malloc((size_t)L->phases * L->phase_size * sizeof(int16_t));
    if (!sym) return NULL;
    for (int p = 0; p < L->phases; p++) {
        const int16_t *w = L->weights + (size_t)p * L->phase_size;
        int16_t *out = sym + (size_t)p * L->phase_size;
        for (int k = 0; k < L->patterns; k++) {
            const int begin = L->offset[k], size = L->offset[k + 1] - begin;
            const int16_t *wk = w + begin;
            for (int i = 0; i < size; i++) {
                int v = k == 1 ? wk[i] + wk[transpose_block(i)]
                      : k == L->patterns - 1 ? 2 * (wk[i] + wk[reverse_digits(i, L->n)])
                                             : wk[i] + wk[reverse_digits(i, L->n)];
                out[begin + i] = (int16_t)(v > 32767 ? 32767 : v < -32767 ? -32767 : v);
            }
        }
        for (int k = L->offset[L->patterns]; k < L->phase_size; k++) out[k] = w[k];
    }
    return sym;
}

/* The evaluation of a position with `empties` empty squares, in discs times EVAL_SCALE: the same
 * sum as over the 8 images (pattern_indices), with each shared reading counted once through
 * the symmetric weights. */
static int evaluate(const Solver *s, u64 mover, u64 opponent, int empties) {
    const EvalLayout *L = &s->eval;
    const int n = L->n, last = n - 1;
    int phase = empties < L->first ? 0 : (empties - L->first) / L->step;
    if (phase >= L->phases) phase = L->phases - 1;
    const int16_t *w = s->eval_weights + (size_t)phase * L->phase_size;
    const u64 row = (1ULL << n) - 1;
    const u64 mt = transpose(mover), ot = transpose(opponent);
    const u64 mh = mirror_columns(mover, n), oh = mirror_columns(opponent, n);
    const u64 mv = mirror_rows(mover, n), ov = mirror_rows(opponent, n);
    const u64 mhv = mirror_rows(mh, n), ohv = mirror_rows(oh, n);
#define TERN(bm, bo) (TERNARY[bm] + 2 * TERNARY[bo])
#define LINE(m, o, r) TERN(((m) >> (8 * (r))) & row, ((o) >> (8 * (r))) & row)
#define BLOCK(x) (((x) & 7) | (((x) >> 5) & 0x38) | (((x) >> 10) & 0x1C0))
#define DIAG(x) ((int)((((x) & diag) * 0x0101010101010101ULL) >> 56))
    int sum = 0;
    for (int k = 0, j = 0; j < L->patterns - 1; j++) { /* the line patterns: edge, rows 2.. */
        if (j == 1) continue;                          /* (pattern 1 is the corner block) */
        const int16_t *wj = w + L->offset[j];
        sum += wj[LINE(mover, opponent, k)] + wj[LINE(mover, opponent, last - k)] + wj[LINE(mt, ot, k)]
             + wj[LINE(mt, ot, last - k)];
        k++;
    }
    const int16_t *wc = w + L->offset[1];
    sum += wc[TERN(BLOCK(mover), BLOCK(opponent))] + wc[TERN(BLOCK(mh), BLOCK(oh))] + wc[TERN(BLOCK(mv), BLOCK(ov))]
         + wc[TERN(BLOCK(mhv), BLOCK(ohv))];
    const u64 diag = diagonal(n);
    const int16_t *wd = w + L->offset[L->patterns - 1];
    sum += wd[TERN(DIAG(mover), DIAG(opponent))] + wd[TERN(DIAG(mh), DIAG(oh))];
#undef TERN
#undef LINE
#undef BLOCK
#undef DIAG
    int x[EVAL_SCALARS];
    scalar_features(s, mover, opponent, x);
    const int16_t *ws = w + L->offset[L->patterns];
    for (int k = 0; k < EVAL_SCALARS; k++) sum += ws[k] * x[k];
    return sum;
}

/* The evaluation as the plain sum over the 8 images (what the fit sees), for tests. */
static int evaluate_images(const Solver *s, u64 mover, u64 opponent, int empties) {
    const EvalLayout *L = &s->eval;
    int phase = empties < L->first ? 0 : (empties - L->first) / L->step;
    if (phase >= L->phases) phase = L->phases - 1;
    const int16_t *w = L->weights + (size_t)phase * L->phase_size;
    u64 ms[8], os[8];
    images(L->n, mover, opponent, ms, os);
    int sum = 0, idx[EVAL_MAX_PATTERNS], x[EVAL_SCALARS];
    for (int g = 0; g < 8; g++) {
        pattern_indices(L->n, L->patterns, ms[g], os[g], idx);
        for (int k = 0; k < L->patterns; k++) sum += w[L->offset[k] + idx[k]];
    }
    scalar_features(s, mover, opponent, x);
    const int16_t *ws = w + L->offset[L->patterns];
    for (int k = 0; k < EVAL_SCALARS; k++) sum += ws[k] * x[k];
    return sum;
}

/* ---- ordering ---------------------------------------------------------------------------- */

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
        int sq = first_square(moves);
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


/* Depth-limited alpha-beta on the fitted evaluation (discs times EVAL_SCALE). From depth 3 the
 * moves are tried best-first by the evaluation of the position they lead to, for more cutoffs. */
static int eval_search(const Solver *s, u64 mover, u64 opponent, int depth, int alpha, int beta, int empties,
                       int passed) {
    if (empties == 0) return EVAL_SCALE * final_score(s, mover, opponent);
    if (depth == 0) return evaluate(s, mover, opponent, empties);
    u64 moves = legal_moves(mover, opponent, s->board);
    if (!moves) {
        if (passed) return EVAL_SCALE * final_score(s, mover, opponent);
        return -eval_search(s, opponent, mover, depth, -beta, -alpha, empties, 1);
    }
    Child children[34];
    int n = 0;
    for (; moves; moves &= moves - 1) {
        int sq = first_square(moves);
        u64 f = flips(mover, opponent, sq);
        Child c = {sq, 0, opponent & ~f, mover | f | (1ULL << sq)};
        int i = n++;
        if (depth >= 3) {
            c.key = evaluate(s, c.mover, c.opponent, empties - 1);
            for (; i > 0 && children[i - 1].key > c.key; i--) children[i] = children[i - 1];
        }
        children[i] = c;
    }
    int best = -1000000;
    for (int i = 0; i < n; i++) {
        int v = -eval_search(s, children[i].mover, children[i].opponent, depth - 1, -beta, -alpha, empties - 1, 0);
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
    const int use_eval = s->eval.weights && empties >= EVAL_SORT_EMPTIES;
    int eval_depth = EVAL_SORT_DEPTH + (empties - EVAL_SORT_EMPTIES) / EVAL_SORT_STEP;
    if (eval_depth > EVAL_SORT_MAX) eval_depth = EVAL_SORT_MAX;
    int n = 0;
    for (; moves; moves &= moves - 1) {
        int sq = first_square(moves);
        u64 f = flips(mover, opponent, sq);
        Child c;
        c.sq = sq;
        c.mover = opponent & ~f;
        c.opponent = mover | f | (1ULL << sq);
        if (empties > TABLE_EMPTIES) PREFETCH(bucket_of(s, c.mover, c.opponent)); /* for ETC and the child */
        if (use_eval) {
            c.key = eval_search(s, c.mover, c.opponent, eval_depth, -1000000, 1000000, empties - 1, 0);
            if (W_EVAL_MOB) {
                u64 replies = legal_moves(c.mover, c.opponent, s->board);
                c.key += W_EVAL_MOB * (popcount(replies) + popcount(replies & s->corners));
            }
        } else if (depth > 0) {
            c.key = rough_search(s, c.mover, c.opponent, depth, -1000000, 1000000, 0);
        } else {
            u64 replies = legal_moves(c.mover, c.opponent, s->board);
            c.key = W_MOB * (popcount(replies) + popcount(replies & s->corners)) - W_CORNER * !!((1ULL << sq) & s->corners)
                  + W_POT * frontier(s, c.opponent, c.mover);
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

/* ---- deep search: table, ordering, ETC ------------------------------------------------------- */

static int search_deep(Solver *s, u64 mover, u64 opponent, int alpha, int empties, int passed, int *best_move);

/* The null-window score of a child position (any number of empty squares). */
static inline int search_child(Solver *s, u64 mover, u64 opponent, int alpha, int empties) {
    if (empties > SHALLOW) return search_deep(s, mover, opponent, alpha, empties, 0, NULL);
    return search_small(s, mover, opponent, alpha, empties);
}

/* Null-window search (alpha, alpha + 1) with more than SHALLOW empties, or at the root (which
 * reports its best move and takes no cutoff from the table). */
static int search_deep(Solver *s, u64 mover, u64 opponent, int alpha, int empties, int passed, int *best_move) {
    s->nodes++;
    PROFILE(prof_nodes[empties]++);
    const int use_table = empties >= TABLE_EMPTIES || best_move;
    Bucket *bucket = bucket_of(s, mover, opponent);
    if (use_table) PREFETCH(bucket); /* the table is far bigger than the caches: start the load early */
    const int beta = alpha + 1;
    u64 moves = legal_moves(mover, opponent, s->board);
    if (!moves) {
        if (passed || !legal_moves(opponent, mover, s->board)) {
            if (best_move) *best_move = passed ? PASS_MOVE : NO_MOVE;
            return final_score(s, mover, opponent);
        }
        if (best_move) *best_move = PASS_MOVE;
        int v = empties > SHALLOW ? search_deep(s, opponent, mover, -beta, empties, 1, NULL)
                                  : search_small(s, opponent, mover, -beta, empties);
        return -v;
    }
    int score;
    if (!best_move && stability_cut(s, mover, opponent, alpha, empties, &score)) return score;
    const Entry *e = use_table ? lookup(s, mover, opponent) : NULL;
    int table_move = NO_MOVE;
    if (e) {
        table_move = e->move;
        if (!best_move) {
            if (e->lower > alpha) { PROFILE(prof_table_cut[empties]++); return e->lower; }
            if (e->upper <= alpha) { PROFILE(prof_table_cut[empties]++); return e->upper; }
        }
    }
    int best = -INF_SCORE, best_sq = NO_MOVE, tried = 0;
    if (table_move >= 0 && ((moves >> table_move) & 1)) {
        /* The stored best move first: it often refutes the node before the others are ordered. */
        u64 f = flips(mover, opponent, table_move);
        s->parity ^= s->quadrant_bit[table_move];
        best = -search_child(s, opponent & ~f, mover | f | (1ULL << table_move), -beta, empties - 1);
        s->parity ^= s->quadrant_bit[table_move];
        best_sq = table_move;
        tried = 1;
        moves &= ~(1ULL << table_move);
    }
    if (best <= alpha && moves) {
        Child children[34];
        int n = ordered_children(s, mover, opponent, moves, empties, children);
        if (!best_move && empties >= ETC_EMPTIES) { /* a child's stored bound may refute this node */
            for (int i = 0; i < n; i++) {
                const Entry *ce = lookup(s, children[i].mover, children[i].opponent);
                if (ce && -ce->upper > alpha) {
                    PROFILE(prof_etc_cut[empties]++);
                    return -ce->upper;
                }
            }
        }
        for (int i = 0; i < n; i++) {
            const Child *c = &children[i];
            s->parity ^= s->quadrant_bit[c->sq];
            int v = -search_child(s, c->mover, c->opponent, -beta, empties - 1);
            s->parity ^= s->quadrant_bit[c->sq];
            tried++;
            if (v > best) {
                best = v;
                best_sq = c->sq;
                if (v > alpha) break;
            }
        }
    }
    PROFILE(if (best > alpha) { prof_cut[empties]++; if (tried == 1) prof_cut_first[empties]++; });
    if (!use_table) {
    } else if (best > alpha) {
        store(bucket, mover, opponent, empties, best, 64, best_sq);
    } else {
        store(bucket, mover, opponent, empties, -64, best, best_sq);
    }
    if (best_move) *best_move = best_sq;
    return best;
}

/* ---- root ----------------------------------------------------------------------------------- */

/* The parity of the position's empty squares by quadrant. */
static int parity_of(const Solver *s, u64 empty) {
    int parity = 0;
    for (; empty; empty &= empty - 1) parity ^= s->quadrant_bit[first_square(empty)];
    return parity;
}

/* Where the root's null-window searches start: the score that a shallow search of the fitted
 * evaluation expects (rounded to an even number, as scores on an even board are), else +1. */
static int first_guess(const Solver *s, u64 mover, u64 opponent, int empties) {
    if (!s->eval.weights || empties < GUESS_EMPTIES) return 1;
    int depth = empties - GUESS_EMPTIES + 1 < GUESS_DEPTH ? empties - GUESS_EMPTIES + 1 : GUESS_DEPTH;
    int v = eval_search(s, mover, opponent, depth, -1000000, 1000000, empties, 0);
    int discs = v >= 0 ? (v + EVAL_SCALE) / (2 * EVAL_SCALE) * 2 : -((-v + EVAL_SCALE) / (2 * EVAL_SCALE) * 2);
    if (discs > s->num_squares) discs = s->num_squares;
    if (discs < -s->num_squares) discs = -s->num_squares;
    return discs;
}

/* The score inside (alpha, beta) (a bound on the right side outside it) by null-window
 * searches closing in on it (MTD(f)). A search that fails high names a move reaching at
 * least the new lower bound, so the move of the last such search is a best move. */
static int root_window(Solver *s, u64 mover, u64 opponent, int alpha, int beta, int empties, int *best_move) {
    int lower = alpha, upper = beta, test = first_guess(s, mover, opponent, empties);
    if (test <= alpha) test = alpha + 1;
    if (test > beta) test = beta;
    *best_move = NO_MOVE;
    while (lower < upper) {
        int move = NO_MOVE;
        PROFILE(u64 n0 = s->nodes);
        int r = search_deep(s, mover, opponent, test - 1, empties, 0, &move);
        PROFILE(if (getenv("MTD")) fprintf(stderr, "  test %d -> %d  nodes %llu\n", test, r, (unsigned long long)(s->nodes - n0)));
        if (r >= test) {
            lower = r;
            *best_move = move;
            test = r + 1;
        } else {
            upper = r;
            if (*best_move == NO_MOVE) *best_move = move;
            test = r;
        }
        if (lower >= beta) return lower;
        if (upper <= alpha) return upper;
    }
    return lower;
}

/* A zeroed table aligned to cache lines (to 2 MiB pages when that big, where Linux may back
 * it with huge pages: fewer TLB misses on the random probes). */
static void *table_alloc(size_t bytes) {
    void *table = NULL;
#if defined(_WIN32)
    table = _aligned_malloc(bytes, 64);
#else
    if (posix_memalign(&table, bytes >= (2u << 20) ? (2u << 20) : 64, bytes)) table = NULL;
#endif
    if (!table) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(table, bytes, MADV_HUGEPAGE);
#endif
    memset(table, 0, bytes);
    return table;
}

static void table_free(void *table) {
#if defined(_WIN32)
    _aligned_free(table);
#else
    free(table);
#endif
}

/* ---- interface -------------------------------------------------------------------------- */

int oj_abi_version(void) { return OJ_ABI_VERSION; }

void *oj_create(u64 board, int size, int table_bits) {
    init_tables();
    if (size < 2 || size > 8) return NULL;
    Solver *s = (Solver *)calloc(1, sizeof(Solver));
    if (!s) return NULL;
    s->board = board;
    s->size = size;
    s->num_squares = popcount(board);
    s->edge_stable = edge_table(size);
    eval_layout(&s->eval, size);
    if (s->eval.weights) {
        const int16_t *sym = (const int16_t *)LOAD_ACQUIRE(EVAL_SYMMETRIC[size]);
        if (!sym) {
            int16_t *built = symmetric_weights(&s->eval);
            sym = built ? (const int16_t *)publish(&EVAL_SYMMETRIC[size], built) : NULL;
        }
        s->eval_weights = sym;
        if (!s->eval_weights) s->eval.weights = NULL; /* no memory: order without the evaluation */
    }
    if (!s->edge_stable) {
        free(s);
        return NULL;
    }
    int h = size / 2, last = size - 1;
    const int corner_rc[4][2] = {{0, 0}, {0, last}, {last, 0}, {last, last}};
    for (int k = 0; k < 4; k++) {
        int r = corner_rc[k][0], c = corner_rc[k][1], dr = r ? -1 : 1, dc = c ? -1 : 1;
        s->corner[k] = 1ULL << (r * 8 + c);
        s->x_square[k] = 1ULL << ((r + dr) * 8 + c + dc);
        s->corners |= s->corner[k];
    }
    for (int p = 0; p < 16; p++)
        for (int r = 0; r < size; r++)
            for (int c = 0; c < size; c++)
                if (p >> ((r >= h) * 2 + (c >= h)) & 1) s->parity_squares[p] |= 1ULL << (r * 8 + c);
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) {
            int q = (r >= h) * 2 + (c >= h);
            s->quadrant_bit[r * 8 + c] = (uint8_t)(1 << q);
            if (r > 0 && r < last && c > 0 && c < last) s->interior |= 1ULL << (r * 8 + c);
        }
    /* Stable discs rarely bound the score far below the maximum; trying only when alpha is
     * close enough to it keeps the cost of counting them below what the cutoffs save. The
     * thresholds are Edax's for 8x8 (by empties), scaled by the discs on a smaller board. */
    static const int threshold8[] = {99, 99, 99, 99, 6,  8,  10, 12, 14, 16, 20, 22, 24, 26, 28, 30, 32,
                                     34, 36, 38, 40, 42, 44, 46, 48, 48, 50, 50, 52, 52, 54, 54, 56, 56,
                                     58, 58, 60, 60, 62, 62, 64};
    for (int e = 0; e <= 64; e++) {
        int t = e <= 40 ? threshold8[e] : 64;
        s->stability_threshold[e] = t >= 99 || e >= s->num_squares ? 999
                                  : s->num_squares - (64 - t) * (s->num_squares - e) / (64 - e);
    }
    if (table_bits < 5) table_bits = 5;
    size_t bytes = ((size_t)1 << (table_bits - 1)) * sizeof(Bucket);
    s->table = (Bucket *)table_alloc(bytes);
    if (!s->table) {
        free(s);
        return NULL;
    }
    s->table_mask = ((u64)1 << (table_bits - 1)) - 1;
    return s;
}

void oj_destroy(void *handle) {
    Solver *s = (Solver *)handle;
    if (!s) return;
    table_free(s->table);
    free(s);
}

void oj_clear(void *handle) {
    Solver *s = (Solver *)handle;
    memset(s->table, 0, (size_t)(s->table_mask + 1) * sizeof(Bucket));
}

/* Score of (mover, opponent): exact inside the window (alpha, beta), a bound outside it
 * (the full window -64..64 gives the exact score). best_move gets the square of a best move,
 * 64 for a forced pass, -1 if the game is over; nodes the positions searched. */
int oj_solve(void *handle, u64 mover, u64 opponent, int alpha, int beta, int *best_move, u64 *nodes) {
    Solver *s = (Solver *)handle;
    s->nodes = 0;
    u64 empty = s->board & ~(mover | opponent);
    int empties = popcount(empty);
    int move = NO_MOVE, v;
    if (alpha < -64) alpha = -64;
    if (beta > 64) beta = 64;
    s->parity = parity_of(s, empty);
    if (!legal_moves(mover, opponent, s->board)) { /* a pass, or the end of the game */
        s->nodes++;
        if (!legal_moves(opponent, mover, s->board)) {
            v = final_score(s, mover, opponent);
        } else {
            move = PASS_MOVE;
            int ignored;
            v = -root_window(s, opponent, mover, -beta, -alpha, empties, &ignored);
        }
    } else {
        v = root_window(s, mover, opponent, alpha, beta, empties, &move);
    }
    if (best_move) *best_move = move;
    if (nodes) *nodes = s->nodes;
    return v;
}

/* The mover's stable discs (for tests: no sequence of moves may flip them). */
u64 oj_stable(void *handle, u64 mover, u64 opponent) { return stable_discs((Solver *)handle, mover, opponent); }

/* The evaluation's features of a position, for fitting its weights: `index` gets the 8 images'
 * pattern indices (each plus its pattern's offset within a phase's weights), `scalars` the
 * EVAL_SCALARS counts. Returns the number of indices written. */
int oj_features(void *handle, u64 mover, u64 opponent, int32_t *index, int32_t *scalars) {
    Solver *s = (Solver *)handle;
    const EvalLayout *L = &s->eval;
    u64 ms[8], os[8];
    int idx[EVAL_MAX_PATTERNS], x[EVAL_SCALARS], n = 0;
    images(L->n, mover, opponent, ms, os);
    for (int g = 0; g < 8; g++) {
        pattern_indices(L->n, L->patterns, ms[g], os[g], idx);
        for (int k = 0; k < L->patterns; k++) index[n++] = L->offset[k] + idx[k];
    }
    scalar_features(s, mover, opponent, x);
    for (int k = 0; k < EVAL_SCALARS; k++) scalars[k] = x[k];
    return n;
}

/* The layout of the evaluation's weights: {patterns, weights per phase, phases, first phase's
 * empties, empties per phase, 1 if fitted weights are compiled in, EVAL_SCALE, counts}. */
void oj_eval_layout(void *handle, int32_t *out) {
    const EvalLayout *L = &((Solver *)handle)->eval;
    out[0] = L->patterns;
    out[1] = L->phase_size;
    out[2] = L->phases;
    out[3] = L->first;
    out[4] = L->step;
    out[5] = L->weights != NULL;
    out[6] = EVAL_SCALE;
    out[7] = EVAL_SCALARS;
}

/* The evaluation (discs times EVAL_SCALE; 0 without fitted weights); `images`: as the plain sum
 * over the 8 images instead of the search's way (tests compare the two). */
int oj_evaluate(void *handle, u64 mover, u64 opponent, int images) {
    Solver *s = (Solver *)handle;
    if (!s->eval.weights) return 0;
    int empties = popcount(s->board & ~(mover | opponent));
    return images ? evaluate_images(s, mover, opponent, empties) : evaluate(s, mover, opponent, empties);
}

/* A depth-limited search of the fitted evaluation (discs times EVAL_SCALE; 0 without fitted
 * weights): the solver's own guess of a position's value, a cheap predictor for proofs. */
int oj_eval_search(void *handle, u64 mover, u64 opponent, int depth) {
    Solver *s = (Solver *)handle;
    if (!s->eval.weights) return 0;
    int empties = popcount(s->board & ~(mover | opponent));
    return eval_search(s, mover, opponent, depth, -1000000, 1000000, empties, 0);
}

/* The move generator, exposed for tests against the Python rules. */
u64 oj_flips(u64 mover, u64 opponent, int sq) {
    init_tables();
    return flips(mover, opponent, sq);
}

u64 oj_legal(u64 mover, u64 opponent, u64 board) { return legal_moves(mover, opponent, board); }
