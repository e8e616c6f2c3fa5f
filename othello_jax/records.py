"""Settings records: a section's defaults as one table of fields, and the one reader of every record.

Each config section is written once, as a table of ``(name, default, description)`` fields beside
the typed record it is read into (search settings in :mod:`othello_jax.search.search_settings`,
training's in :mod:`othello_jax.training.settings`); :func:`section` turns a table into the
``ConfigDict`` a config file changes, and the descriptions are what ``docs/settings.md`` lists
(:mod:`othello_jax.training.settings.reference`). :func:`read_record` turns a section back into its
frozen record, converting each value to the field's annotated type with one-line errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import ml_collections

from othello_jax.errors import InputError, need

# (name, default, one-line description): a setting, written once
Field = tuple[str, Any, str]
Record = TypeVar("Record")


def section(fields: tuple[Field, ...], **subsections: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """The ``ConfigDict`` of a table of fields (defaults), then any nested sections."""
    config = ml_collections.ConfigDict({name: default for name, default, _ in fields})
    for name, sub in subsections.items():
        config[name] = sub
    return config


def descriptions(fields: tuple[Field, ...]) -> dict[str, str]:
    """Each field's one-line description, by name."""
    return {name: text for name, _, text in fields}


def dotted_keys(config: Mapping[str, Any] | ml_collections.ConfigDict, prefix: str = "") -> list[str]:
    """Every setting of ``config`` as a dotted key (``search.num_simulations``), sections walked."""
    keys = []
    for name, value in config.items():
        if isinstance(value, (Mapping, ml_collections.ConfigDict)):
            keys += dotted_keys(value, f"{prefix}{name}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def check_known(config: Mapping[str, Any] | ml_collections.ConfigDict,
                defaults: ml_collections.ConfigDict, also: Callable[[str], bool] = lambda key: False) -> None:
    """A one-line ``InputError`` for a setting ``defaults`` lacks (a misspelt key in a config file
    would otherwise be ignored); ``also`` accepts others (retired keys, checked on their own)."""
    known = set(dotted_keys(defaults))
    unknown = [key for key in dotted_keys(config) if key not in known and not also(key)]
    need(not unknown, f"unknown setting {unknown[0] if unknown else ''} (every setting is in docs/settings.md)")


# the annotated field types a config value is converted to (configs hold ints where floats are meant)
_CASTS: dict[str, Callable[[Any], Any]] = {
    "str": str, "int": int, "bool": bool, "float": float,
    "tuple[int, ...]": lambda v: tuple(int(x) for x in v),
    "tuple[float, ...]": lambda v: tuple(float(x) for x in v),
}


def read_record(cls: type[Record], config: Mapping[str, Any] | ml_collections.ConfigDict, section_name: str,
                *, added: Mapping[str, Any] | None = None, **given: Any) -> Record:
    """The dataclass ``cls`` with each field read from the config section ``config`` and converted
    to its annotated type, except those ``given`` (nested records, values resolved elsewhere).
    ``added``: defaults of settings that came after runs were written, read when an old config
    lacks them. A field the section lacks otherwise, or a value that does not convert (``'nan'``
    for an integer), is a one-line ``InputError`` naming it: defaults live in the field tables only."""
    values = dict(given)
    for field in dataclasses.fields(cls):
        if field.name in values:
            continue
        if field.name not in config and added and field.name in added:
            values[field.name] = added[field.name]
            continue
        need(field.name in config, f"config has no setting {section_name}.{field.name} (start from default_config())")
        kind, value = str(field.type), config[field.name]
        try:
            values[field.name] = _CASTS[kind](value)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{section_name}.{field.name} must be {kind}, got {value!r}") from None
    return cls(**values)
