"""One line before a long wait, so no command sits silent for a minute: what it is doing
(compiling, solving, loading) and, once done, how long it took when that was long.

    with say_while(compiling("the match"), say):
        executable = lowered.compile()

prints "compiling the match (cached for next time)..." (the persistent compilation cache is on)
and, after a wait of LONG_WAIT_S or more, "compiled in 47 s". Every command's notices go through
here; a command whose standard output is data or a protocol sends them to standard error
(to_stream, the default). Imports nothing from the package, so every layer can use it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

Say = Callable[[str], None]  # prints one line

LONG_WAIT_S = 3.0  # a wait this long or longer is followed by how long it took


def to_stream(stream: TextIO | None = None) -> Say:
    """Print a line to ``stream``, flushed; by default to standard error as it is when printing
    (so a test capturing sys.stderr sees it)."""

    def say(line: str) -> None:
        print(line, file=stream if stream is not None else sys.stderr, flush=True)

    return say


def _configured_cache_dir() -> str | None:
    """jax's jax_compilation_cache_dir setting (None before jax is imported: nothing compiled yet)."""
    jax = sys.modules.get("jax")
    return jax.config.values.get("jax_compilation_cache_dir") if jax is not None else None


def compilation_cached() -> bool:
    """Whether jax keeps compiled programs between runs (its persistent compilation cache is on)."""
    return bool(_configured_cache_dir() or os.environ.get("JAX_COMPILATION_CACHE_DIR"))


def compiling(what: str) -> str:
    """``"compiling WHAT (cached for next time)"``, or ``"compiling WHAT"`` without the cache."""
    return f"compiling {what}" + (" (cached for next time)" if compilation_cached() else "")


def compiling_then(doing: str, what: str = "the agent") -> str:
    """One notice for a call that compiles and then works: ``"compiling the agent (cached for next
    time), then DOING"``."""
    return f"{compiling(what)}, then {doing}"


def format_seconds(seconds: float) -> str:
    """``"4.2 s"``, ``"47 s"``, ``"3m05s"``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 100:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s"


@contextlib.contextmanager
def say_while(doing: str, say: Say | None = None, done: str | None = "done",
              long_s: float = LONG_WAIT_S) -> Iterator[None]:
    """Say ``"DOING..."`` before the block and ``"DONE in 47 s"`` after it when it took ``long_s``
    seconds or more (``done=None``: nothing after, the caller reports it). ``say`` prints one
    line (default: standard error)."""
    say = say or to_stream()
    say(f"{doing}...")
    begin = time.perf_counter()
    yield
    seconds = time.perf_counter() - begin
    if done is not None and seconds >= long_s:
        say(f"{done} in {format_seconds(seconds)}")
