"""Training configs by name: `--config=othello6_cpu` means the shipped experiments/configs/othello6_cpu.py.

The configs ship beside the package as the `experiments` package (pyproject.toml), so a name
works from a source checkout and from an installed copy alike, whatever the current directory.
A path to a config file works as before; `NAME:ARG` and `PATH:ARG` pass ARG to the config's
get_config (`supervised:cpu`). The configs are found as files (importlib's spec of
`experiments`), read by ml_collections from their path, and never imported here: the package
does not import `experiments` (pyproject's import contract). One resolver serves
`othello-jax train` and `python -m experiments.train_supervised`.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from pathlib import Path

from othello_jax.errors import InputError

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


def resolve_config_args(argv: list[str]) -> list[str]:
    """``argv`` with every ``--config=REFERENCE`` (or ``--config REFERENCE``) turned into a file
    path by :func:`resolve_config`; overrides such as ``--config.x=1`` are left alone."""
    resolved, waiting = [], False
    for arg in argv:
        if waiting:
            arg, waiting = resolve_config(arg), False
        elif arg == CONFIG_FLAG:
            waiting = True
        elif arg.startswith(CONFIG_FLAG + "="):
            arg = f"{CONFIG_FLAG}={resolve_config(arg[len(CONFIG_FLAG) + 1:])}"
        resolved.append(arg)
    return resolved
