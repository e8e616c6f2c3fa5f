"""Save, resume and load training runs with orbax (atomic, keep-last-N plus best).

Layout under a run's workdir::

    WORKDIR/checkpoints/<iteration>/   latest N: variables + train (optimizer, buffer, rng, ...) + meta
    WORKDIR/best/<iteration>/          the best-evaluated network: variables + meta

Each checkpoint has three items: ``variables`` (``{'params', 'batch_stats'}``, all an agent
needs), ``train`` (the rest of the training state and the rng key) and ``meta`` (JSON: board
size, network shape, counters, the run's config, evaluation results). orbax writes to a
temporary directory and renames it when complete, so a run killed at any moment leaves only
whole checkpoints. A checkpoint that cannot be read, or that does not fit the current
settings, raises :class:`CheckpointError` with a one-line message and nothing is deleted. So
does a workdir that cannot be written (probed when :class:`Checkpoints` opens it) and a save
that fails (a full or read-only disk): the checkpoints written before it stay intact.

Other modules load a trained network with :func:`load_agent_variables`; anything it cannot read
(a damaged step, a directory or file that is no checkpoint, a network file of another
architecture) is one line saying what the path is and which forms are accepted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax

from othello_jax import pretrained
from othello_jax.errors import InputError
from othello_jax.model import NetworkConfig, RetiredNetworkField, current_fields, init_variables, make_network

if TYPE_CHECKING:  # imported where a checkpoint directory is opened: _orbax
    import orbax.checkpoint as ocp

FORMAT_VERSION = 1  # the plain network and replay layout
# a network with an optional head or global pooling (model.NetworkConfig) has more variables and,
# with score/ownership heads, a replay buffer with final boards: older code cannot read it
AUX_FORMAT_VERSION = 2
LATEST_DIR = "checkpoints"
BEST_DIR = "best"
# meta fields that must match between a checkpoint and the run resuming from it
COMPATIBILITY_KEYS = ("format_version", "board_size", "network", "lanes", "capacity", "max_window")
META_FILE = Path("meta") / "metadata"  # where orbax's JsonSave puts a step's ``meta`` item


def _network_fields(network: dict | NetworkConfig | None) -> dict:
    """A network's meta with every field present (checkpoints written before a field existed lack it)
    and no retired one (those written before it was retired carry it off; one-line ``InputError``
    when it is on: ``model.RETIRED_NETWORK_FIELDS``)."""
    if network is None:
        return {}
    if isinstance(network, NetworkConfig):
        return dataclasses.asdict(network)
    defaults = {f.name: f.default for f in dataclasses.fields(NetworkConfig)}
    return {**defaults, **current_fields(dict(network))}


def format_version(network: dict | NetworkConfig | None) -> int:
    """The checkpoint format a network needs: ``AUX_FORMAT_VERSION`` when it uses an option that
    older code cannot read (WDL/score/ownership head, global pooling, a margin value, the conv
    tower), else ``FORMAT_VERSION``."""
    fields = _network_fields(network)
    defaults = {f.name: f.default for f in dataclasses.fields(NetworkConfig)}
    options = ("value_head", "score_head", "ownership_head", "global_pool", "value_margin", "tower")
    return AUX_FORMAT_VERSION if any(fields.get(k, defaults[k]) != defaults[k] for k in options) else FORMAT_VERSION


class CheckpointError(InputError, RuntimeError):
    """A checkpoint is missing, unreadable or incompatible (message is one line)."""


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _abstract(tree: Any) -> Any:
    """Shape/dtype/sharding skeleton of a pytree of arrays (the restore target)."""
    def leaf(x):
        x = jax.numpy.asarray(x) if not isinstance(x, jax.Array) else x
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
    return jax.tree.map(leaf, tree)


def _quiet_orbax() -> None:
    """orbax logs every save at INFO and read-only opens at WARNING through absl; keep errors only.
    Also drops the late "Event loop is closed" reports of a failed restore (see
    :func:`_drop_closed_loop_reports`). Imports orbax first (where a checkpoint directory is about
    to be opened): the loggers are set as orbax's import left them."""
    _orbax()
    logger = logging.getLogger("absl")
    if logger.level < logging.ERROR:
        logger.setLevel(logging.ERROR)
    if not getattr(sys.unraisablehook, "drops_closed_loop_reports", False):
        sys.unraisablehook = _drop_closed_loop_reports(sys.unraisablehook)
    asyncio_logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _UnretrievedReads) for f in asyncio_logger.filters):
        asyncio_logger.addFilter(_UnretrievedReads())


class _HeldReports(logging.Filter):
    """Takes the records of absl's logger (orbax reports through it) off the terminal and passes
    them to this module's logger at DEBUG, where only someone who asks for them sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        _LOG.debug("orbax %s: %s", record.levelname, record.getMessage())
        return False


_LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """While a checkpoint is opened or read, orbax's own ERROR reports (``Failed to json parse
    Metadata file ...``, one per damaged metadata file, some read twice) go to this module's logger
    at DEBUG instead of the terminal: a read that fails raises :class:`CheckpointError`, whose one
    line says what is damaged, and one that succeeds (orbax reads around a damaged optional file,
    such as ``_CHECKPOINT_METADATA``) leaves the user nothing to do. Python's public logging API
    (a filter on absl's logger, removed after the block); orbax itself is untouched."""
    held = _HeldReports()
    logger = logging.getLogger("absl")
    logger.addFilter(held)
    try:
        yield
    finally:
        logger.removeFilter(held)


class _UnretrievedReads(logging.Filter):
    """Drops asyncio's "Future/Task exception was never retrieved" reports: the same abandoned reads
    of a failed restore as :func:`_drop_closed_loop_reports`, when their futures are collected before
    the loop closes (seen under load: a dozen lines after the command's one-line error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).partition("\n")[0].endswith("exception was never retrieved")


def _drop_closed_loop_reports(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    """An unraisable-exception hook that ignores the ``RuntimeError('Event loop is closed')`` of
    tensorstore's callbacks and passes everything else to ``previous``.

    orbax runs each restore in an event loop of its own and closes it when the restore returns.
    When one read of a damaged checkpoint fails, the restore returns at once while tensorstore's
    other reads are still running; as each finishes, its callback finds the loop closed and
    Python prints that as an unraisable exception: a dozen tracebacks around, or after, the
    command's one-line error, some at exit. The reads only fetched data nobody waits for any more,
    so nothing is lost by not printing them. (Python's public hook: no orbax internals touched.)
    """

    def hook(unraisable: Any) -> object:
        error = unraisable.exc_value
        if unraisable.object is None and isinstance(error, RuntimeError) and str(error) == "Event loop is closed":
            return None
        return previous(unraisable)

    hook.drops_closed_loop_reports = True
    return hook


def probe_writable(workdir: str | Path) -> None:
    """Create ``workdir`` and write, flush and delete a small file there; :class:`CheckpointError` if that fails."""
    workdir = Path(workdir)
    probe = workdir / f".write-probe-{os.getpid()}"
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            with probe.open("wb") as f:
                f.write(b"\0" * 4096)
                f.flush()
                os.fsync(f.fileno())
        finally:
            probe.unlink(missing_ok=True)
    except OSError as error:
        raise CheckpointError(f"workdir {workdir} is not writable ({_one_line(error)}); nothing was trained "
                              "or changed: free some space or choose another --workdir") from None


def _orbax() -> Any:
    """``orbax.checkpoint``, imported only where a checkpoint directory is opened (0.6 s of a
    player's start): the builtin networks and exported ones are msgpack files that need no orbax."""
    import orbax.checkpoint

    return orbax.checkpoint


def _manager(directory: Path, keep: int | None, async_save: bool, read_only: bool = False) -> ocp.CheckpointManager:
    ocp = _orbax()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, create=not read_only, read_only=read_only,
        enable_async_checkpointing=async_save, cleanup_tmp_directories=not read_only)
    # orbax refuses relative paths (at the first save, deep in its writer): resolve them here
    directory = Path(directory).expanduser().absolute()
    with _reading():  # it reads the metadata of the steps already there
        return ocp.CheckpointManager(directory, options=options, item_names=("variables", "train", "meta"))


def _remove_unfinished(workdir: Path) -> None:
    """Delete the temporary directories of saves that never finished (a crash or a full disk
    mid-save); orbax renames a save into place only once it is complete, so they hold nothing
    restorable. Only process 0 deletes, before any save of this run starts."""
    if jax.process_index() != 0:
        return
    for name in (LATEST_DIR, BEST_DIR):
        directory = workdir / name
        if directory.is_dir():
            for leftover in directory.iterdir():
                if ".orbax-checkpoint-tmp" in leftover.name and leftover.is_dir():
                    shutil.rmtree(leftover, ignore_errors=True)


def saved_steps(directory: str | Path) -> list[int]:
    """The steps whose checkpoints are whole under ``directory`` (e.g. ``WORKDIR/checkpoints``),
    ascending, listed from the disk (unfinished saves have no step name): no orbax manager needed."""
    directory = Path(directory).expanduser()
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.is_dir() and p.name.isdigit())


def latest_saved_meta(workdir: str | Path) -> dict | None:
    """The ``meta`` of the newest readable checkpoint of a run, or None if it has none.

    Reads the JSON from the disk without starting JAX's backends, so a command can decide the
    device count from it first (``othello-jax train`` keeps a resumed run's replay lanes).
    """
    root = Path(workdir).expanduser() / LATEST_DIR
    for step in reversed(saved_steps(root)):
        try:
            meta = json.loads((root / str(step) / META_FILE).read_text())
        except (OSError, ValueError):
            continue  # unreadable: restoring it will say so
        if isinstance(meta, dict):
            return meta
    return None


class Checkpoints:
    """The latest-N and best checkpoints of one run (``keep`` latest are kept, plus one best)."""

    def __init__(self, workdir: str | Path, keep: int = 3, async_save: bool = True):
        if keep < 1:
            raise InputError(f"checkpoint keep must be >= 1, got {keep}")
        _quiet_orbax()
        self.workdir = Path(workdir)
        probe_writable(self.workdir)
        _remove_unfinished(self.workdir)
        self.latest = _manager(self.workdir / LATEST_DIR, keep, async_save)
        self.best = _manager(self.workdir / BEST_DIR, 1, async_save)

    # ---- queries --------------------------------------------------------------------------
    def steps(self) -> list[int]:
        return sorted(self.latest.all_steps())

    def latest_step(self) -> int | None:
        steps = self.steps()
        return steps[-1] if steps else None

    # ---- saving ---------------------------------------------------------------------------
    def save(self, step: int, train_state: Any, key: jax.Array, meta: dict, save_buffer: bool = True) -> None:
        """Save a training state (a ``train.TrainState``) with its rng key and JSON ``meta``."""
        variables, rest = _split(train_state, key, save_buffer)
        self.save_parts(step, variables, rest, dict(meta, buffer_saved=bool(save_buffer)))

    def save_parts(self, step: int, variables: dict, train: Any, meta: dict) -> None:
        """Save the network ``variables``, the rest of a training state (``train``: any pytree of
        arrays, e.g. optimizer state and rng key) and JSON ``meta`` as step ``step``."""
        meta = dict(meta, format_version=format_version(meta.get("network")), step=int(step))
        ocp = _orbax()
        with self._saving(LATEST_DIR):
            self.latest.save(int(step), args=ocp.args.Composite(
                variables=ocp.args.StandardSave(variables), train=ocp.args.StandardSave(train),
                meta=ocp.args.JsonSave(meta)))

    def save_best(self, step: int, variables: dict, meta: dict) -> None:
        """Keep ``variables`` as the best network so far (replacing the previous best)."""
        meta = dict(meta, format_version=format_version(meta.get("network")), step=int(step))
        ocp = _orbax()
        with self._saving(BEST_DIR):
            self.best.save(int(step), args=ocp.args.Composite(
                variables=ocp.args.StandardSave(variables), meta=ocp.args.JsonSave(meta)), force=True)

    def wait(self) -> None:
        """Block until background writes are on disk (:class:`CheckpointError` if one failed)."""
        with self._saving(LATEST_DIR):
            self.latest.wait_until_finished()
            self.best.wait_until_finished()

    def close(self) -> None:
        """Finish background writes (:class:`CheckpointError` if one failed) and release the managers."""
        with self._saving(LATEST_DIR):
            try:
                self.latest.close()  # waits for its background writes first
            finally:
                self.best.close()

    @contextlib.contextmanager
    def _saving(self, name: str):
        """Turn a failed write (here or, for an earlier async save, found now) into a one-line error."""
        try:
            yield
        except Exception as error:  # orbax and tensorstore raise many kinds (OSError, ValueError, ...)
            # an async save's error surfaces at a later call: name the directory, not a step
            directory = self.workdir / name
            # listed from the disk: orbax raises the stored error again from its own queries
            intact = saved_steps(directory)
            raise CheckpointError(f"saving a checkpoint in {directory} failed ({_one_line(_root_cause(error))}); "
                                  f"the checkpoints {intact or '(none)'} on disk are intact: free some space "
                                  "or fix the disk, then resume") from error

    # ---- restoring ------------------------------------------------------------------------
    def read_meta(self, step: int) -> dict:
        path = self.workdir / LATEST_DIR / str(step)
        ocp = _orbax()
        try:
            with _reading():
                return dict(self.latest.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta)
        except Exception as error:  # orbax raises many kinds; report one line
            raise CheckpointError(f"checkpoint {path} is unreadable ({_damage(error, self.workdir)}); "
                                  f"{self._others(step)}") from None

    def restore(self, template: Any, key_template: jax.Array, expect: dict, step: int | None = None):
        """Restore ``(train_state, key, meta)`` at ``step`` (default: the latest).

        ``template`` is a freshly initialised train state with the wanted shapes and shardings
        (its buffer is kept when the checkpoint has none). ``expect`` holds the current values of
        :data:`COMPATIBILITY_KEYS`; any mismatch raises :class:`CheckpointError`.
        """
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise CheckpointError(f"no checkpoint in {self.workdir / LATEST_DIR}")
        if step not in self.steps():
            raise CheckpointError(f"no checkpoint for step {step} in {self.workdir / LATEST_DIR}; "
                                  f"available: {self.steps()}")
        meta = self.read_meta(step)
        check_compatible(meta, expect, self.workdir / LATEST_DIR / str(step))
        variables, rest = _split(template, key_template, bool(meta.get("buffer_saved", True)))
        variables, rest = self.restore_parts(step, variables, rest)
        train_state, key = _join(template, variables, rest)
        return train_state, key, meta

    def restore_parts(self, step: int, variables: Any, train: Any) -> tuple[Any, Any]:
        """``(variables, train)`` of step ``step``, restored into the shapes, dtypes and shardings of
        the templates given (what :meth:`save_parts` saved); one-line :class:`CheckpointError` if unreadable."""
        path = self.workdir / LATEST_DIR / str(step)
        ocp = _orbax()
        try:
            with _reading():
                restored = self.latest.restore(step, args=ocp.args.Composite(
                    variables=ocp.args.StandardRestore(_abstract(variables)),
                    train=ocp.args.StandardRestore(_abstract(train))))
        except Exception as error:
            raise CheckpointError(f"checkpoint {path} is unreadable or incompatible "
                                  f"({_damage(error, self.workdir)}); {self._others(step)}") from None
        return restored.variables, restored.train

    def _others(self, step: int) -> str:
        others = [s for s in self.steps() if s != step]
        if not others:
            return "no other checkpoint was touched"
        return f"other checkpoints {others} are intact: move this one away or resume from one of them"


def _root_cause(error: BaseException) -> BaseException:
    """The innermost ``OSError`` in an exception's chain (what the disk said), else the error itself."""
    seen, node = set(), error
    while node is not None and id(node) not in seen:
        if isinstance(node, OSError):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return error


def _split(train_state: Any, key: jax.Array, with_buffer: bool) -> tuple[dict, dict]:
    """(variables item, train item) of a train state; the buffer is left out unless ``with_buffer``."""
    variables = {"params": train_state.params, "batch_stats": train_state.batch_stats}
    rest = {"opt_state": train_state.opt_state, "actor": train_state.actor, "resign": train_state.resign,
            "iteration": train_state.iteration, "step": train_state.step, "rng": key}
    if with_buffer:
        rest["buffer"] = _buffer_item(train_state.buffer)
    return variables, rest


def _buffer_item(buffer: Any) -> Any:
    """The buffer as saved: its rows (a NamedTuple) as a dict without the ``None`` fields.

    Optional row fields (final boards, only with score/ownership heads) are ``None`` otherwise;
    leaving them out keeps the on-disk tree of such runs exactly what older code wrote, so old
    runs resume.
    """
    data = buffer.data
    if hasattr(data, "_asdict"):
        data = {name: value for name, value in data._asdict().items() if value is not None}
    return buffer._replace(data=data)


def _buffer_from_item(template: Any, item: Any) -> Any:
    """Inverse of :func:`_buffer_item`: the rows back in the template's NamedTuple."""
    data = item.data
    if isinstance(data, dict) and hasattr(template.data, "_replace"):
        data = template.data._replace(**data)
    return item._replace(data=data)


def _join(template: Any, variables: dict, rest: dict):
    state = template._replace(
        params=variables["params"], batch_stats=variables["batch_stats"], opt_state=rest["opt_state"],
        actor=rest["actor"], resign=rest["resign"], iteration=rest["iteration"], step=rest["step"],
        buffer=_buffer_from_item(template.buffer, rest["buffer"]) if "buffer" in rest else template.buffer)
    return state, rest["rng"]


def check_compatible(meta: dict, expect: dict, path: Path, keys: tuple[str, ...] = COMPATIBILITY_KEYS) -> None:
    """Raise :class:`CheckpointError` naming the first of ``keys`` in ``expect`` that differs from
    the checkpoint's (a self-play run's :data:`COMPATIBILITY_KEYS` by default).

    Network fields added since a checkpoint was written count at their defaults there (so older
    runs resume), and retired ones at their off values are dropped; the format version expected is
    the one the current network needs.
    """
    try:
        _network_fields(meta.get("network"))
    except RetiredNetworkField as error:  # trained with an option since removed
        raise CheckpointError(f"checkpoint {path}: {error}") from None
    saved_version = meta.get("format_version")
    if isinstance(saved_version, int) and saved_version > AUX_FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {saved_version}, newer than this code reads "
                              f"(up to {AUX_FORMAT_VERSION}): the checkpoint format changed; upgrade othello-jax")
    for name in keys:
        if name not in expect:
            continue
        if name == "lanes" and not meta.get("buffer_saved", True):
            continue
        saved, wanted = meta.get(name), expect[name]
        if name == "network":
            saved, wanted = _network_fields(saved), _network_fields(wanted)
        if name == "format_version" and "network" in expect:
            wanted = format_version(expect["network"])
            if saved != wanted:
                raise CheckpointError(f"checkpoint {path} has format version {saved} but this network needs "
                                      f"{wanted}: the checkpoint format changed (network options "
                                      f"{meta.get('network')} there); use a new --workdir or matching settings")
        if saved != wanted:
            raise CheckpointError(f"checkpoint {path} is incompatible: {name} is {saved} there but {wanted} "
                                  f"in this config; use a new --workdir or matching settings")


# ---------------------------------------------------------------------------------------------
# loading a network for play and evaluation
# ---------------------------------------------------------------------------------------------
def network_meta(config: NetworkConfig) -> dict:
    """A network shape as JSON-able meta (inverse of ``NetworkConfig.from_meta``)."""
    return dataclasses.asdict(config)


class NotACheckpoint(CheckpointError):
    """A ``--checkpoint`` that is no checkpoint or cannot be read (message: one line with the forms accepted)."""

    def __init__(self, path: str | Path, why: str):
        super().__init__(f"{path} is not a readable othello-jax checkpoint ({why}); "
                         f"pass {pretrained.checkpoint_forms()}")


def _resolve(path: Path) -> tuple[Path, int]:
    """(manager directory, step) for a workdir (its latest checkpoint, else its best), a
    checkpoints/best directory or one step directory."""
    if path.is_file():
        raise NotACheckpoint(path, f"a file, not a checkpoint directory nor a {pretrained.SUFFIX} network file")
    is_run = (path / LATEST_DIR).is_dir() or (path / BEST_DIR).is_dir()
    if path.name.isdigit() and not is_run and not saved_steps(path):
        return path.parent, int(path.name)  # one step directory, such as WORKDIR/checkpoints/40
    for directory in (path / LATEST_DIR, path / BEST_DIR, path):
        steps = saved_steps(directory)
        if steps:
            return directory, steps[-1]
    raise NotACheckpoint(path, f"no checkpoint found in it, nor in its {LATEST_DIR}/ or {BEST_DIR}/")


def _damage(error: BaseException, root: Path) -> str:
    """What went wrong reading a checkpoint, short: tensorstore's messages nest a chain of "Error
    opening ...: Error reading ...: " and a long spec; keep the innermost error, with paths
    relative to ``root``, at most ~110 characters."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    text = text.split(" [tensorstore_spec")[0].replace(f"{root.absolute()}/", "").replace(f"{root}/", "")
    parts = re.split(r": (?=Error )", text)
    text = parts[-1] if len(parts) > 1 else f"{type(error).__name__}: {text}"
    if len(text) > 110 and '": ' in text:
        text = text.rsplit('": ', 1)[1]  # the innermost message without the file it names
    return text if len(text) <= 110 else text[:107] + "..."


def load_agent_variables(path: str | Path) -> tuple[NetworkConfig, dict, int]:
    """Load a trained network: ``(network config, {'params', 'batch_stats'}, board size)``.

    ``path`` is a training workdir (its latest checkpoint, else its best), ``WORKDIR/best`` (the
    best one), a ``checkpoints`` directory, one step directory such as ``WORKDIR/checkpoints/40``,
    a portable ``.msgpack`` network file or ``builtin:NAME`` (a network shipped with the package,
    see :mod:`othello_jax.pretrained`). Arrays land on the default device. Raises
    :class:`CheckpointError` with a one-line message naming the forms accepted; nothing on disk
    is changed.
    """
    if pretrained.is_portable(path):
        try:
            config, variables, size, _ = pretrained.load(path)
        except pretrained.PortableNetworkError as error:
            raise CheckpointError(f"{error}; pass {pretrained.checkpoint_forms()}") from None
        return config, variables, size
    path = Path(path).expanduser()
    if not path.exists():
        raise CheckpointError(f"checkpoint path {path} does not exist; pass {pretrained.checkpoint_forms()}")
    directory, step = _resolve(path)
    step_dir = directory / str(step)
    where = f"{step_dir.relative_to(path)}" if step_dir != path and step_dir.is_relative_to(path) else f"step {step}"
    _quiet_orbax()
    ocp = _orbax()
    manager = _manager(directory, None, async_save=False, read_only=True)
    try:
        try:
            with _reading():
                meta = manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta
            config = NetworkConfig.from_meta(meta["network"])
            size = int(meta["board_size"])
        except RetiredNetworkField as error:  # trained with an option since removed
            raise CheckpointError(f"checkpoint {path}: {error}") from None
        except Exception as error:  # orbax raises many kinds; a meta of no network raises Key/TypeError
            raise NotACheckpoint(path, f"{where} has no readable metadata: {_damage(error, path)}") from None
        version = meta.get("format_version", FORMAT_VERSION)
        if isinstance(version, int) and version > AUX_FORMAT_VERSION:
            raise CheckpointError(f"checkpoint {path} has format version {version}, newer than this code reads "
                                  f"(up to {AUX_FORMAT_VERSION}): the checkpoint format changed; upgrade othello-jax")
        net = make_network(size, config)
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        try:
            shapes = jax.eval_shape(lambda k: init_variables(net, k, size), jax.random.PRNGKey(0))
        except Exception as error:  # a network config this code cannot build
            raise NotACheckpoint(path, f"{where} names a network this code cannot build: "
                                       f"{_damage(error, path)}") from None
        target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=device), dict(shapes))
        target.setdefault("batch_stats", {})
        try:
            with _reading():
                variables = manager.restore(step, args=ocp.args.Composite(
                    variables=ocp.args.StandardRestore(target))).variables
        except Exception as error:
            raise NotACheckpoint(path, f"{where} is damaged: "
                                       f"{_damage(error, path)}") from None
    finally:
        manager.close()
    return config, dict(variables), size


def load_start_network(path: str | Path, board_size: int, network: NetworkConfig,
                       setting: str = "init_network", margins_allowed: bool = True) -> tuple[NetworkConfig, dict]:
    """The trained network a fresh run starts from (any form :func:`load_agent_variables` reads):
    ``(its config, {'params', 'batch_stats'} as host arrays)``, checked to be a ``board_size``
    network of the run's architecture ``network``; a one-line ``InputError``
    naming ``setting`` otherwise. Host arrays: the loader commits them to one device, the run
    places them on its mesh. ``margins_allowed=False`` (self-play, whose value targets are results)
    refuses a network that predicts disc margins before any other difference is named."""
    config, variables, size = load_agent_variables(path)
    if size != board_size:
        raise InputError(f"{setting} {path} is a {size}x{size} network; this run is {board_size}x{board_size}")
    if config.value_margin and not margins_allowed:
        raise InputError(f"{setting} {path} predicts margins (network.value_margin {config.value_margin}); "
                         "self-play's value targets are results: start from a network with value_margin 0")
    saved, wanted = network_meta(config), network_meta(network)
    differences = [f"{name} {saved[name]!r} vs {wanted[name]!r}" for name in wanted if saved[name] != wanted[name]]
    if differences:
        raise InputError(f"{setting} {path} is not this run's network ({', '.join(differences)}); "
                         "set network.* to match it")
    return config, jax.device_get(variables)
