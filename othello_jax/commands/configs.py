"""Training configs by name: `--config=othello6_cpu` means the shipped experiments/configs/othello6_cpu.py.

The configs ship beside the package as the `experiments` package (pyproject.toml), so a name
works from a source checkout and from an installed copy alike, whatever the current directory.
A path to a config file works as before; `NAME:ARG` and `PATH:ARG` pass ARG to the config's
get_config (`supervised:cpu`). The configs are found as files (importlib's spec of
`experiments`), run from their path by ml_collections (and once before by load_config_file,
which turns a file that defines no config into a one-line error), and never imported here: the
package does not import `experiments` (pyproject's import contract). One resolver serves
`othello-jax train` and `python -m experiments.train_supervised`.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
import traceback
import types
from collections.abc import Iterator
from pathlib import Path

from ml_collections import ConfigDict

from othello_jax.errors import InputError, first_line

CONFIG_FLAG = "--config"


def config_directory() -> Path | None:
    """The directory of the shipped configs (experiments/configs beside the package), or None."""
    try:
        spec = importlib.util.find_spec("experiments")  # locates, does not import
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        directory = Path(location) / "configs"
        if directory.is_dir():
            return directory
    return None


def shipped_configs() -> dict[str, Path]:
    """Every shipped config by name (its file's stem), sorted."""
    directory = config_directory()
    if directory is None:
        return {}
    files = sorted(directory.glob("*.py"))
    return {file.stem: file for file in files if not file.stem.startswith("_")}


def config_summary(file: Path, width: int = 100) -> str:
    """The first sentence of a config file's docstring, plain text, cut to ``width`` characters."""
    try:
        doc = ast.get_docstring(ast.parse(file.read_text())) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    paragraph = " ".join(plain_text(doc).split("\n\n")[0].split())
    sentence = re.split(r"(?<=\.)\s", paragraph, maxsplit=1)[0]
    return sentence if len(sentence) <= width else sentence[:width - 3].rsplit(" ", 1)[0] + " ..."


def plain_text(text: str) -> str:
    """reStructuredText markup removed: ``x`` -> x, :func:`~a.b` -> b, :mod:`a.b` -> a.b."""
    text = re.sub(r":[a-z]+:`~[\w.]*?(\w+)`", r"\1", text)
    text = re.sub(r":[a-z]+:`([^`]+)`", r"\1", text)
    return text.replace("``", "")


def config_list() -> str:
    """The shipped configs, one line each (name and summary), for --help."""
    configs = shipped_configs()
    if not configs:
        return "  (no shipped configs found beside the package)"
    width = max(len(name) for name in configs)
    return "\n".join(f"  {name:<{width}}  {config_summary(file)}" for name, file in configs.items())


def resolve_config(reference: str) -> str:
    """A config file path (with its ``:ARG``, if any) for ``--config=REFERENCE``.

    REFERENCE is a path to a config file, or the name of a shipped config (``othello6_cpu``,
    ``othello6_cpu.py``, or ``experiments/configs/othello6_cpu.py`` from outside a checkout).
    InputError (one line listing the names) for anything else.
    """
    base, colon, argument = reference.partition(":")
    expanded = os.path.expanduser(base)  # "~/x.py"; unlike Path.expanduser, never raises ("~nobody")
    if Path(expanded).is_file():
        return f"{expanded}{colon}{argument}"
    path = Path(base)
    by_name = len(path.parts) == 1 or path.parent.parts[-2:] == ("experiments", "configs")
    configs = shipped_configs()
    name = path.stem if path.suffix == ".py" else path.name
    if by_name and name in configs:
        return f"{configs[name]}{colon}{argument}"
    names = ", ".join(configs) or "none found"
    what = "no shipped config named" if by_name else "config file"
    tail = "" if by_name else " not found"
    raise InputError(f"{what} {base!r}{tail}; give a config file or a shipped config's name: {names}")


def _references(argv: list[str]) -> Iterator[tuple[int, str, str]]:
    """``(index, REFERENCE, prefix)`` of every ``--config=REFERENCE`` (prefix ``--config=``) and
    ``--config REFERENCE`` (prefix ``""``, REFERENCE the next argument) in ``argv``."""
    waiting = False
    for index, arg in enumerate(argv):
        if waiting:
            waiting = False
            yield index, arg, ""
        elif arg == CONFIG_FLAG:
            waiting = True
        elif arg.startswith(CONFIG_FLAG + "="):
            yield index, arg[len(CONFIG_FLAG) + 1:], CONFIG_FLAG + "="


def resolve_config_args(argv: list[str]) -> list[str]:
    """``argv`` with every ``--config=REFERENCE`` (or ``--config REFERENCE``) turned into a file
    path by :func:`resolve_config`; overrides such as ``--config.x=1`` are left alone."""
    resolved = list(argv)
    for index, reference, prefix in _references(argv):
        resolved[index] = prefix + resolve_config(reference)
    return resolved


def check_config_files(argv: list[str]) -> None:
    """Load the config file of every ``--config`` in ``argv`` (resolved: :func:`resolve_config_args`)
    with :func:`load_config_file`, so a file that defines no config is one line, exit 2, before
    anything is made (ml_collections would raise a SyntaxError the CLI calls a bug, or defer the
    error to the first use of the config)."""
    for _, reference, _ in _references(argv):
        load_config_file(reference)


_CHECK_MODULE = "othello_jax_config_check"  # the name a config file runs under while checked


def load_config_file(reference: str) -> ConfigDict:
    """The ConfigDict a config file defines: ``PATH[:ARG]`` run as ml_collections runs it, then its
    ``get_config(ARG)`` (``get_config()`` without ``:ARG``).

    A user's file that does not parse, raises while it runs, defines no ``get_config()``, or whose
    ``get_config()`` raises or returns no ConfigDict is bad input, not a bug: one-line
    :class:`InputError` naming the file and, where there is one, its line. A ``get_config()`` that
    sets a field of a retired section gets the retired setting's own error.
    """
    path, colon, argument = reference.partition(":")
    try:
        source = Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"config file {path} cannot be read: {error.strerror or error}") from None
    try:
        code = compile(source, path, "exec")
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes (Python 3.11)
        raise InputError(f"config file {path} does not parse: {_syntax_error(error, path)}") from None
    module = types.ModuleType(_CHECK_MODULE)
    module.__file__ = path
    sys.modules[_CHECK_MODULE] = module  # dataclasses in a config look their module up
    try:
        exec(code, module.__dict__)  # noqa: S102 -- the user's config file, as ml_collections runs it
    except Exception as error:
        raise InputError(f"config file {path} fails while loading: {_failure(error, path)}") from None
    finally:
        sys.modules.pop(_CHECK_MODULE, None)
    get_config = getattr(module, "get_config", None)
    if not callable(get_config):
        raise InputError(f"config file {path} defines no get_config(); a config file is a Python file whose "
                         "get_config() returns an ml_collections ConfigDict")
    call = f"get_config({argument!r})" if colon else "get_config()"
    try:
        config = get_config(*([argument] if colon else []))
    except InputError:
        raise
    except Exception as error:
        _raise_if_retired(error)
        raise InputError(f"config file {path}: {call} failed: {_failure(error, path)}") from None
    if not isinstance(config, ConfigDict):
        raise InputError(f"config file {path}: {call} returned {type(config).__name__}, "
                         "not an ml_collections ConfigDict")
    return config


def _syntax_error(error: Exception, path: str) -> str:
    """``line 3: invalid syntax`` (``line 3 of OTHER.py: ...`` when the line is in another file)."""
    if not isinstance(error, SyntaxError) or error.lineno is None:
        return first_line(error)
    where = "" if error.filename in (None, path) else f" of {error.filename}"
    return f"line {error.lineno}{where}: {error.msg}"


def _failure(error: Exception, path: str) -> str:
    """``line 7: ZeroDivisionError: division by zero``: the error with the last line of ``path``
    its traceback passes (none when it never reached the file)."""
    if isinstance(error, SyntaxError):  # a module the config imports does not parse
        return f"SyntaxError: {_syntax_error(error, path)}"
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
    where = f"line {lines[-1]}: " if lines else ""
    return f"{where}{type(error).__name__}: {first_line(error, limit=200)}"


def _raise_if_retired(error: Exception) -> None:
    """Raise the retired setting's one-line error when ``error`` is ml_collections' "no such field"
    for a field of a retired section (``c.selfplay.playout_cap.every = 4``)."""
    from othello_jax.training.settings.retired import retired_error, retired_in_message

    retired = retired_in_message(str(error)) if isinstance(error, (AttributeError, KeyError)) else None
    if retired:
        raise retired_error(retired) from None
