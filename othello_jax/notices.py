"""One line before a long wait, so no command sits silent for a minute: what it is doing
(compiling, solving, loading) and, once done, how long it took when that was long.

    with say_while(compiling("the match", key=(first.name, second.name, shapes(args))), say, done="compiled"):
        executable = lowered.compile()

prints "compiling the match (about 40 s on a 2-core CPU the first time; cached for next time)..."
on a cold start and "loading the match from the compilation cache..." on a warm one, then, after a
wait of LONG_WAIT_S or more, "compiled in 47 s" (or "loaded in 2.1 s"). :func:`compiling` is the
one place that decides that wording (see there how it knows). Every command's notices go through
here; a command whose standard output is data or a protocol sends them to standard error
(to_stream, the default). Imports nothing from the package, so every layer can use it.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import hashlib
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

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


# ---- warm or cold: the project's index beside jax's persistent compilation cache ------------
INDEX_FILE = "othello-jax-compiles.json"  # in the cache directory: what was compiled there, and how long it took
INDEX_LIMIT = 400  # programs kept in the index (the oldest go first)
REFERENCE_MACHINE = "cpu-2c"
# Cold seconds of the first waits users meet, on a 2-core CPU (cpu-2c, the project's reference
# machine), 2026-12-02, each with an empty cache, while a test suite ran on both cores (load 5-7):
# the first move of `othello-jax play --color=white --checkpoint=builtin:8x8` 34, 31 s (36 s with
# --no-solve), builtin:6x6 35, 24, 29 s; `--agent=greedy` 1.0 s on 8x8, 0.7 s on 6x6 (RESULTS.md's
# quiet-machine bench_first_move, 2026-11-29: 28.8 s from process start to the 8x8 first move).
# Quoted on such a machine until it has measured the program itself; elsewhere only its own figures.
REFERENCE_SECONDS: dict[str, float] = {
    "the search for 8x8": 30.0,
    "the search for 6x6": 28.0,
    "the agent for 8x8": 1.0,
    "the agent for 6x6": 1.0,
}
# jax.monitoring's events for its persistent cache (public listeners; names as jax records them)
_REQUESTS = "/jax/compilation_cache/compile_requests_use_cache"  # a compile that asked the cache
_HITS = "/jax/compilation_cache/cache_hits"  # ... and found its executable there
_WRITES = "/jax/compilation_cache/cache_misses"  # ... or compiled it and wrote it there
_BACKEND_SECONDS = "/jax/core/compile/backend_compile_duration"  # XLA's compile (or cache read)


class CompileNotice(str):
    """The notice before a compile (a ``str``: printed as before), carrying what :func:`say_while`
    needs to record the compile afterwards: the program's key, what it is, and whether it said
    loading."""

    what: str
    key: str | None
    warm: bool
    compile: object  # the compile it announces: shared by its rewordings

    def __new__(cls, text: str, what: str, key: str | None, warm: bool, compile: object = None) -> CompileNotice:
        notice = super().__new__(cls, text)
        notice.what, notice.key, notice.warm = what, key, warm
        notice.compile = compile if compile is not None else object()
        return notice

    def reworded(self, text: str) -> CompileNotice:
        """The same notice in other words (``"preparing the first move: " + self``)."""
        return CompileNotice(text, self.what, self.key, self.warm, self.compile)


class _Monitor:
    """jax's compilation-cache events and compile seconds so far in this process, counted through
    ``jax.monitoring``'s public listeners (installed once, on the first compile notice)."""

    def __init__(self) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self.installed = False

    def install(self) -> None:
        if not self.installed:
            monitoring = importlib.import_module("jax.monitoring")
            monitoring.register_event_listener(self._event)
            monitoring.register_event_duration_secs_listener(self._duration)
            self.installed = True

    def _event(self, event: str, *args: Any, **kwargs: Any) -> None:
        self.counts[event] += 1

    def _duration(self, event: str, seconds: float, *args: Any, **kwargs: Any) -> None:
        self.seconds[event] += seconds

    def snapshot(self) -> tuple[dict, dict]:
        return dict(self.counts), dict(self.seconds)


_MONITOR = _Monitor()


@dataclasses.dataclass
class _Window:
    """A compile being watched: from its notice until its block ends (or the next notice, or exit)."""

    notice: CompileNotice
    index: Path
    machine: str
    counts: dict
    seconds: dict


_PENDING: list[_Window] = []  # at most one: the latest notice's


def _index_path() -> Path | None:
    """The index file in jax's cache directory; None without a cache or for a remote one (gs://...)."""
    directory = _configured_cache_dir() or os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if not directory or "://" in str(directory):
        return None
    return Path(directory).expanduser() / INDEX_FILE


def _read_index(path: Path) -> dict:
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"programs": {}, "typical": {}}
    if not isinstance(index, dict):
        return {"programs": {}, "typical": {}}
    index.setdefault("programs", {})
    index.setdefault("typical", {})
    return index


def _write_index(path: Path, index: dict) -> None:
    """Replace the index atomically (concurrent commands lose an update at worst, never the file)."""
    programs = index["programs"]
    if len(programs) > INDEX_LIMIT:
        keep = sorted(programs, key=lambda k: programs[k].get("when", 0))[-INDEX_LIMIT:]
        index["programs"] = {k: programs[k] for k in keep}
    try:
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".othello-jax-compiles-", delete=False) as out:
            json.dump(index, out)
        os.replace(out.name, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(out.name)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


def _machine(jax: Any) -> tuple[str, str]:
    """``("cpu-2c", "a 2-core CPU")``, ``("gpu:NVIDIA H100", "this GPU")``: the machine kind a
    compile time belongs to, and its name in a notice."""
    backend = jax.default_backend()
    if backend == "cpu":
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        article = "an" if str(cores).startswith("8") or cores in (11, 18) else "a"
        return f"cpu-{cores}c", f"{article} {cores}-core CPU"
    return f"{backend}:{jax.devices()[0].device_kind}", f"this {backend.upper()}"


def _program_key(jax: Any, what: str, key: object) -> str:
    """The index's key of a program: what it is, the caller's key (``None``: the command line,
    which fixes the programs of a command such as ``train --config=X``), the versions that
    compile it and the devices it is compiled for."""
    parts = [what, key if key is not None else _program_args(sys.argv[1:]), jax.__version__, _version("jaxlib"),
             _version("othello-jax"), jax.default_backend(), jax.device_count()]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def _program_args(argv: list[str]) -> list[str]:
    """The command line less what names places, not programs (``--workdir``, ``--out``, ...): the
    same run in another directory compiles the same programs."""
    places = ("--workdir", "--out", "--save-games", "--cells", "--root")
    return [arg for arg in argv if not arg.startswith(places)]


def shapes(tree: Any) -> tuple:
    """A pytree's structure and its arrays' shapes and dtypes (a network's architecture, not its
    weights): what fixes a program taking them as arguments, e.g. for a :func:`compiling` key."""
    jax = sys.modules.get("jax")
    if jax is None:
        return (repr(tree),)
    leaves, structure = jax.tree.flatten(tree)
    return (str(structure),) + tuple((tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", type(x).__name__)))
                                     for x in leaves)


def compiling(what: str, key: object = None) -> CompileNotice:
    """The notice before compiling WHAT, true to what will happen:

    - ``"loading WHAT from the compilation cache"`` when this program was compiled into jax's
      persistent compilation cache before (a warm start);
    - ``"compiling WHAT (about 40 s on a 2-core CPU the first time; cached for next time)"`` when
      it was not (a cold start): the time this program last took to compile here, else what
      WHAT took here last, else the reference figure for this machine kind (REFERENCE_SECONDS), else
      no figure;
    - ``"compiling WHAT"`` without the persistent cache.

    How it knows, with public APIs only: the project keeps a small index beside jax's cache
    (INDEX_FILE in its directory). ``key`` is anything that fixes the program (an agent's name
    and parameter shapes, a match's agents and argument shapes; default: the command line); with
    the versions, backend and device count it makes the index key. :func:`say_while` (given this
    notice) watches the compile through ``jax.monitoring``'s cache events and records in the
    index whether the program was compiled and written to the cache (and in how many seconds) or
    loaded from it; a notice whose compile ends otherwise is recorded at the next notice or at
    exit. A program that changed under the same key (a code change under the same version) is
    said to load once, then recorded as compiled; the line after the wait says what happened."""
    _close_pending()
    index_path = _index_path()
    jax = sys.modules.get("jax")
    if not compilation_cached() or index_path is None or jax is None:
        return CompileNotice(f"compiling {what}" + (" (cached for next time)" if compilation_cached() else ""),
                             what, None, False)
    _MONITOR.install()
    index = _read_index(index_path)
    program = _program_key(jax, what, key)
    machine, machine_name = _machine(jax)
    record = index["programs"].get(program) or {}
    if record.get("cached"):
        notice = CompileNotice(f"loading {what} from the compilation cache", what, program, True)
    else:
        seconds = record.get("seconds") or index["typical"].get(f"{machine}|{what}") or (
            REFERENCE_SECONDS.get(what) if machine == REFERENCE_MACHINE else None)
        typical = f"about {format_seconds(seconds)} on {machine_name} the first time; " if seconds else ""
        notice = CompileNotice(f"compiling {what} ({typical}cached for next time)", what, program, False)
    counts, durations = _MONITOR.snapshot()
    _PENDING.append(_Window(notice, index_path, machine, counts, durations))
    return notice


def compiling_then(doing: str, what: str = "the agent", key: object = None) -> CompileNotice:
    """One notice for a call that compiles and then works: ``"compiling the agent (cached for next
    time), then DOING"`` (or ``"loading the agent from the compilation cache, then DOING"``)."""
    notice = compiling(what, key)
    return notice.reworded(f"{notice}, then {doing}")


def _close_pending(notice: CompileNotice | None = None, seconds: float | None = None) -> bool | None:
    """Record the watched compile (of ``notice``, or whichever is pending) in the index: nothing
    when nothing asked jax's cache; else whether its program is in the cache now and, for a cold
    compile, how long it took (``seconds``: the block's; by default XLA's compile seconds).
    Returns whether it was cold (None: nothing watched, or nothing compiled)."""
    if not _PENDING or (notice is not None and _PENDING[0].notice.compile is not notice.compile):
        return None
    window = _PENDING.pop()
    counts, durations = _MONITOR.snapshot()
    delta = {name: counts.get(name, 0) - window.counts.get(name, 0) for name in (_REQUESTS, _HITS, _WRITES)}
    if delta[_REQUESTS] <= 0:
        return None  # nothing compiled through the cache (already in memory, or nothing to compile)
    if seconds is None:
        seconds = durations.get(_BACKEND_SECONDS, 0.0) - window.seconds.get(_BACKEND_SECONDS, 0.0)
    cold = delta[_WRITES] > 0 or delta[_HITS] == 0
    index = _read_index(window.index)
    record = index["programs"].get(window.notice.key) or {}
    record.update(what=window.notice.what, when=time.time(), cached=delta[_HITS] + delta[_WRITES] > 0)
    if cold:
        record["seconds"] = round(seconds, 1)
        index["typical"][f"{window.machine}|{window.notice.what}"] = round(seconds, 1)
    else:
        record["loaded_seconds"] = round(seconds, 1)
    index["programs"][window.notice.key] = record
    _write_index(window.index, index)
    return cold


atexit.register(_close_pending)


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
    line (default: standard error). ``doing`` from :func:`compiling`: the compile is recorded in
    the index (warm or cold, its seconds), and "compiled" is said "loaded" when jax loaded it."""
    say = say or to_stream()
    say(f"{doing}...")
    begin = time.perf_counter()
    yield
    seconds = time.perf_counter() - begin
    if isinstance(doing, CompileNotice):
        cold = _close_pending(doing, seconds)
        if done == "compiled" and (cold is False or (cold is None and doing.warm)):
            done = "loaded"  # what happened, whatever the notice foresaw
    if done is not None and seconds >= long_s:
        say(f"{done} in {format_seconds(seconds)}")
