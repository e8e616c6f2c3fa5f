"""The C endgame solver (``_csolver.c``), compiled on first use and called through ctypes.

The source ships with the package; the first call compiles it with the system C compiler
(``$CC``, else ``cc``, ``gcc`` or ``clang``) into a cache directory (``$OTHELLO_JAX_CACHE``, else
``$XDG_CACHE_HOME/othello_jax``, else ``~/.cache/othello_jax``), keyed by the source, the
flags and the machine, so later runs load it at once. Without a compiler
:class:`CSolverUnavailable` says so in one line and callers fall back to the JAX solver.

Positions are plain 64-bit integers here (square = row * 8 + col, A1 = bit 0), the same
layout as :mod:`othello_jax.game.bitboard`.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from othello_jax.errors import InputError
from othello_jax.game.bitboard import board_mask_int
from othello_jax.notices import say_while

SOURCE = Path(__file__).with_name("_csolver.c")
ABI_VERSION = 6
DEFAULT_TABLE_BITS = 20  # 2^20 table entries of 32 bytes (buckets of two, one cache line each): 32 MiB
# 8x8 solves reach 24-26 empties, where a table twice as big saves ~10% of the time (FFO #45-#49)
TABLE_BITS_BY_SIZE = {8: 21}
_FLAG_SETS = (["-O3", "-march=native"], ["-O3"])


class CSolverUnavailable(InputError, RuntimeError):
    """The C solver could not be built or loaded (no compiler, failed build, foreign platform)."""


def cache_dir() -> Path:
    """Where the compiled library is kept."""
    if os.environ.get("OTHELLO_JAX_CACHE"):
        return Path(os.environ["OTHELLO_JAX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "othello_jax"


def _machine_tag() -> str:
    """What a natively tuned build depends on: architecture and (on Linux) the CPU flags."""
    tag = platform.system() + platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            tag += next((line for line in f if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return tag


def _compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise CSolverUnavailable("no C compiler found (set $CC or install cc/gcc/clang); "
                             "the JAX solver still works")


def build(source: Path = SOURCE, defines: Sequence[str] = ()) -> Path:
    """Compile a solver source (with the headers beside it) into the cache, once per source,
    flags and machine, and return the library path."""
    text = source.read_bytes() + b"".join(h.read_bytes() for h in sorted(source.parent.glob("*.h")))
    compiler = _compiler()
    errors = []
    for flags in _FLAG_SETS:
        flags = [*flags, *defines]
        key = hashlib.sha256(text + " ".join([compiler] + flags).encode() + _machine_tag().encode())
        target = cache_dir() / f"csolver-{key.hexdigest()[:16]}.so"
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        cmd = [compiler, *flags, "-shared", "-fPIC", "-o", tmp, str(source)]
        with say_while(f"compiling the C endgame solver (once; kept in {target.parent})", done="compiled"):
            result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode == 0:
            os.replace(tmp, target)  # atomic: concurrent builders never see a partial file
            return target
        os.unlink(tmp)
        errors.append(result.stderr.strip().splitlines()[-1:] or ["(no message)"])
    raise CSolverUnavailable(f"compiling {source.name} with {compiler} failed: {errors[-1][0]}")


def load(path: Path, abi: int | None = ABI_VERSION) -> ctypes.CDLL:
    """A compiled solver library with its functions' signatures set; ``abi``: the version it
    must report (None: any, for older builds such as a benchmark's before-and-after)."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as err:
        raise CSolverUnavailable(f"cannot load the compiled solver: {err}") from None
    if abi is not None and lib.oj_abi_version() != abi:
        raise CSolverUnavailable("compiled solver is out of date; delete " + str(cache_dir()))
    u64, i32, ptr = ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p
    lib.oj_create.argtypes, lib.oj_create.restype = [u64, i32, i32], ptr
    lib.oj_destroy.argtypes, lib.oj_destroy.restype = [ptr], None
    lib.oj_clear.argtypes, lib.oj_clear.restype = [ptr], None
    lib.oj_solve.argtypes = [ptr, u64, u64, i32, i32, ctypes.POINTER(i32), ctypes.POINTER(u64)]
    lib.oj_solve.restype = i32
    lib.oj_flips.argtypes, lib.oj_flips.restype = [u64, u64, i32], u64
    lib.oj_legal.argtypes, lib.oj_legal.restype = [u64, u64, u64], u64
    if hasattr(lib, "oj_features"):  # the evaluation's features (ABI 5 on)
        i32p = ctypes.POINTER(ctypes.c_int32)
        lib.oj_features.argtypes, lib.oj_features.restype = [ptr, u64, u64, i32p, i32p], i32
        lib.oj_eval_layout.argtypes, lib.oj_eval_layout.restype = [ptr, i32p], None
        lib.oj_evaluate.argtypes, lib.oj_evaluate.restype = [ptr, u64, u64, i32], i32
        lib.oj_stable.argtypes, lib.oj_stable.restype = [ptr, u64, u64], u64
    if hasattr(lib, "oj_eval_search"):  # ABI 6 on
        lib.oj_eval_search.argtypes, lib.oj_eval_search.restype = [ptr, u64, u64, ctypes.c_int], ctypes.c_int
    return lib


_build = build  # (the name tests have used)


@functools.cache
def library() -> ctypes.CDLL:
    """The loaded solver library (built on first use); raises CSolverUnavailable."""
    return load(build())


def available() -> bool:
    """Whether the C solver can be used on this machine (builds it if needed)."""
    try:
        library()
    except CSolverUnavailable:
        return False
    return True


class CSolver:
    """One solver with its own transposition table for one board size (not thread-safe).

    ``table_bits``: 2^bits table entries (default 2^21 on 8x8, 2^20 otherwise). ``lib``: another
    compiled solver with the same interface (see :func:`load`), e.g. an older
    version for a benchmark; by default this package's.
    """

    def __init__(self, size: int = 8, table_bits: int | None = None, lib: ctypes.CDLL | None = None):
        self._lib = lib or library()
        if table_bits is None:
            table_bits = TABLE_BITS_BY_SIZE.get(size, DEFAULT_TABLE_BITS)
        self.size = size
        self._handle = self._lib.oj_create(board_mask_int(size), size, table_bits)
        if not self._handle:
            raise MemoryError(f"cannot allocate a 2^{table_bits}-entry transposition table")

    def __del__(self) -> None:
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.oj_destroy(handle)

    def solve(self, mover: int, opponent: int, alpha: int = -64, beta: int = 64) -> tuple[int, int, int]:
        """(score, best square, nodes): exact inside (alpha, beta), a bound outside.

        The square is row * 8 + col, 64 for a forced pass, -1 when the game is over.
        """
        move, nodes = ctypes.c_int(), ctypes.c_uint64()
        score = self._lib.oj_solve(self._handle, mover, opponent, alpha, beta, ctypes.byref(move), ctypes.byref(nodes))
        return score, move.value, nodes.value

    def guess(self, mover: int, opponent: int, depth: int) -> float:
        """The fitted evaluation searched ``depth`` plies (discs, from the mover's view; 0.0 where
        the library has no fitted weights): a cheap estimate, never an exact value."""
        scale = self._eval_scale()
        return self._lib.oj_eval_search(self._handle, mover, opponent, depth) / scale if scale else 0.0

    def _eval_scale(self) -> int:
        layout = (ctypes.c_int32 * 8)()
        self._lib.oj_eval_layout(self._handle, layout)
        return layout[6] if layout[5] else 0

    def clear(self) -> None:
        """Forget the transposition table (for timing a solve from scratch)."""
        self._lib.oj_clear(self._handle)


_local = threading.local()


def solver_for(size: int) -> CSolver:
    """This thread's shared solver for a board size (its table persists between calls)."""
    solvers = _local.__dict__.setdefault("solvers", {})
    if size not in solvers:
        solvers[size] = CSolver(size)
    return solvers[size]
