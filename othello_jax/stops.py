"""SIGINT and SIGTERM answered at once, even while the main thread is inside a long XLA compile.

Python runs a signal handler only between bytecodes of the main thread, so a Ctrl-C that lands
in a two-minute compile would go unanswered until the compile returns. The C-level handler
Python installs writes each signal's number to a wakeup pipe the moment it arrives
(:func:`signal.set_wakeup_fd`); a watcher thread blocked on that pipe answers then, on its
own thread. The Python-level handler still runs later in the main thread, where it may raise.

One :class:`Answer` at a time is in force, the innermost (a command's, then training's inside
it): ``with watching(answer): ...``. The handlers go in when the first answer does and the
previous ones come back when the last leaves, so a notebook or a test keeps its own.

``end_process(code)`` ends the process without the interpreter's finalizers: after a compile was
abandoned by an interrupt, XLA's compiler threads are still running, and destroying the XLA
client under them at exit waits for them and then crashes (SIGSEGV, ``ip 0``), so an interrupted
command leaves through here once its own files are closed. Imports nothing from the package.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code(signum: int) -> int:
    """The shell's status for a process ended by ``signum``: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class Answer:
    """What to do about the signals that arrive while it is in force (subclass and override).

    ``at_once(signum, count)`` runs on the watcher thread the moment the ``count``-th signal
    arrives (keep it to printing, flags and :func:`end_process`); ``in_main(signum, count)``
    runs later in the main thread, between bytecodes, and may raise (e.g. ``KeyboardInterrupt``).
    ``count`` is how many signals arrived while this answer was in force.
    """

    signals: tuple[int, ...] = SIGNALS  # the signals handled, when this answer is the first in force
    abandonable = True  # whether work may give up between its steps (stop_requested) under this answer

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None  # the first signal's number

    def at_once(self, signum: int, count: int) -> None:
        """Called on the watcher thread for each signal, in order."""

    def in_main(self, signum: int, count: int) -> None:
        """Called in the main thread (signals that arrived together may be seen once)."""

    @property
    def received(self) -> str | None:
        """The first signal's name (``"SIGINT"``), None while none has arrived."""
        return signal_name(self.first) if self.first is not None else None


class _Watcher:
    """The process's one wakeup pipe, its thread and the stack of answers in force."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers: list[Answer] = []
        self.previous: dict[int, object] = {}
        self.previous_fd = -1
        self.pipe: tuple[int, int] | None = None

    # ---- the stack ---------------------------------------------------------------------------
    def push(self, answer: Answer) -> None:
        with self.lock:
            if not self.answers:
                self._install(answer.signals)
            self.answers.append(answer)

    def pop(self, answer: Answer) -> None:
        with self.lock:
            if answer in self.answers:
                self.answers.remove(answer)
            if not self.answers:
                self._uninstall()

    def top(self) -> Answer | None:
        with self.lock:
            return self.answers[-1] if self.answers else None

    # ---- handlers, pipe and thread ---------------------------------------------------------------
    def _install(self, signals: tuple[int, ...]) -> None:
        for sig in signals:
            self.previous[sig] = signal.signal(sig, self._in_main)
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)  # the C handler must never block
        try:
            self.previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: the Python-level handler answers alone
            os.close(read_fd)
            os.close(write_fd)
            return
        self.pipe = (read_fd, write_fd)
        threading.Thread(target=self._watch, args=(read_fd,), name="othello-jax signals", daemon=True).start()

    def _uninstall(self) -> None:
        if self.pipe is not None:
            signal.set_wakeup_fd(self.previous_fd)
            os.close(self.pipe[1])  # the watcher reads end-of-file and closes its end
            self.pipe = None
        for sig, previous in self.previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self.previous.clear()

    def _watch(self, read_fd: int) -> None:
        try:
            while chunk := os.read(read_fd, 64):
                for signum in chunk:
                    if signum in SIGNALS:
                        self._arrived(signum)
        finally:
            os.close(read_fd)

    def _arrived(self, signum: int) -> None:
        global _SIGNALLED
        _SIGNALLED = True
        answer = self.top()
        if answer is None:
            return
        answer.count += 1
        if answer.first is None:
            answer.first = signum
        answer.at_once(signum, answer.count)

    def _in_main(self, signum: int, frame) -> None:
        answer = self.top()
        if answer is None or _in_gc_callback(frame):  # an exception raised there would be dropped
            return
        if self.pipe is None:  # no watcher thread (installed off the main thread): count here
            self._arrived(signum)
        elif answer.first is None:  # here before the watcher: the main thread sees it at once too
            answer.first = signum
        answer.in_main(signum, max(answer.count, 1))


def _in_gc_callback(frame) -> bool:
    """Whether ``frame`` is a garbage-collector callback's (Python ignores what those raise, with
    a traceback on the terminal; the watcher thread's answer stands alone then)."""
    codes = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    return frame is not None and frame.f_code in codes


_WATCHER = _Watcher()
_SIGNALLED = False  # whether a watched signal has come to this process


def signalled() -> bool:
    """Whether SIGINT or SIGTERM has come while an answer was in force (then the process should
    leave through :func:`end_process`)."""
    return _SIGNALLED


@contextlib.contextmanager
def watching(answer: Answer) -> Iterator[Answer]:
    """``answer`` is in force for SIGINT and SIGTERM inside the block (the innermost one wins)."""
    if threading.current_thread() is not threading.main_thread():
        yield answer  # Python lets only the main thread set handlers: signals keep their handling
        return
    _WATCHER.push(answer)
    try:
        yield answer
    finally:
        _WATCHER.pop(answer)


def say_now(line: str) -> None:
    """Write one line to standard error at once, from any thread, without Python's stream locks
    (the main thread may hold them mid-write)."""
    try:
        os.write(sys.stderr.fileno(), (line + "\n").encode())
    except (OSError, ValueError, AttributeError):  # no usable stderr (a notebook, a closed stream)
        with contextlib.suppress(Exception):
            print(line, file=sys.stderr, flush=True)


def end_process(code: int) -> None:
    """Flush Python's streams and end the process with ``code``, skipping the interpreter's
    finalizers (see the module's doc: XLA's compiler threads may still be running)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class Interrupt(Answer):
    """A command's answer: the first signal says so in one line at once and raises
    ``KeyboardInterrupt`` in the main thread (so ``finally`` blocks close files); if the main
    thread is stuck in native code for ``grace_s`` seconds, or a second signal comes, the process
    ends at once with 128 + the signal's number."""

    def __init__(self, name: str, grace_s: float = 5.0):
        super().__init__()
        self.name, self.grace_s = name, grace_s
        self._said = threading.Lock()
        self._unsaid = True

    def announce(self) -> None:
        """Say the one line (once, from whichever thread comes first)."""
        with self._said:
            if self._unsaid and self.first is not None:
                self._unsaid = False
                word = "interrupted" if self.first == signal.SIGINT else "terminated"
                say_now(f"othello-jax {self.name}: {word} ({signal_name(self.first)})")

    def at_once(self, signum: int, count: int) -> None:
        if count == 1:
            self.announce()
            timer = threading.Timer(self.grace_s, end_process, args=(exit_code(signum),))
            timer.daemon = True
            timer.start()
        else:
            end_process(exit_code(self.first or signum))

    def in_main(self, signum: int, count: int) -> None:
        raise KeyboardInterrupt


class Abandoned(Exception):
    """Raised by long work that checks :func:`stop_requested` between its steps (an in-run
    evaluation's matches): a signal asked the run to stop, so the rest is not worth doing."""


def stop_requested() -> str | None:
    """The name of the first signal the answer in force has received (``"SIGTERM"``), else None."""
    answer = _WATCHER.top()
    return answer.received if answer is not None and answer.abandonable else None


def check(what: str) -> None:
    """Raise :class:`Abandoned` if a signal asked to stop: call it between the steps of ``what``."""
    reason = stop_requested()
    if reason is not None:
        raise Abandoned(f"{what} abandoned ({reason})")
