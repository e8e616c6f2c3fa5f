"""The settings reference: every setting of both trainers, its default and what it does, in one page.

``docs/settings.md`` is this module's output (a test keeps them equal)::

    python -m othello_jax.training.settings.reference > docs/settings.md

It walks :func:`~.defaults.default_config` and :func:`~.supervised_settings.default_supervised_config`
and takes each setting's description from the field table beside its record, so a setting is
described once, where its default is written; the retired settings follow, each with why it went.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ml_collections import ConfigDict

from othello_jax.records import descriptions
from othello_jax.search.search_settings import SEARCH_FIELDS
from othello_jax.training.settings import defaults as run
from othello_jax.training.settings.retired import RETIRED_SETTINGS
from othello_jax.training.settings.selfplay_settings import HARVEST_FIELDS, RESIGN_FIELDS, SELFPLAY_FIELDS
from othello_jax.training.settings.supervised_settings import (
    DATA_FIELDS,
    SUPERVISED_FIELDS,
    SUPERVISED_WITHOUT,
    default_supervised_config,
)


# each section's descriptions, by dotted section ("" = the top level); shared sections read the same
def _network(without: tuple[str, ...]) -> dict[str, str]:
    return {name: text for name, text in run.NETWORK_DESCRIPTIONS.items() if name not in without}


# each program's sections in the order the page lists them, with each setting's description
TRAINING: dict[str, dict[str, str]] = {
    "": descriptions(run.RUN_FIELDS), "distributed": descriptions(run.DISTRIBUTED_FIELDS),
    "network": _network(run.SELFPLAY_WITHOUT), "search": descriptions(SEARCH_FIELDS),
    "selfplay": descriptions(SELFPLAY_FIELDS), "selfplay.harvest": descriptions(HARVEST_FIELDS),
    "selfplay.resign": descriptions(RESIGN_FIELDS), "replay": descriptions(run.REPLAY_FIELDS),
    "train": descriptions(run.TRAIN_FIELDS), "loss": descriptions(run.LOSS_FIELDS),
    "optimizer": descriptions(run.OPTIMIZER_FIELDS), "gating": descriptions(run.GATING_FIELDS),
    "eval": descriptions(run.EVAL_FIELDS), "checkpoint": descriptions(run.CHECKPOINT_FIELDS),
}
SUPERVISED: dict[str, dict[str, str]] = {
    "": descriptions(SUPERVISED_FIELDS), "data": descriptions(DATA_FIELDS),
    "network": _network(SUPERVISED_WITHOUT),
    "loss": descriptions(run.LOSS_FIELDS), "optimizer": descriptions(run.OPTIMIZER_FIELDS),
}
PROGRAMS = (
    ("Self-play training", "othello-jax train --config=NAME --config.KEY=VALUE",
     run.default_config, TRAINING),
    ("Supervised learning", "python -m experiments.train_supervised --config=supervised:cpu --config.KEY=VALUE",
     default_supervised_config, SUPERVISED),
)


def settings(config: ConfigDict, section: str = "") -> Iterator[tuple[str, str, Any]]:
    """``(section, name, default)`` of every setting of ``config`` (a depth-first walk)."""
    for name, value in config.items():
        if isinstance(value, ConfigDict):
            yield from settings(value, f"{section}.{name}" if section else name)
        else:
            yield section, name, value


def unmatched(config: ConfigDict, described: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Dotted settings of ``config`` without a description, and descriptions of no setting (empty when whole)."""
    have = {(s, n) for s, n, _ in settings(config)}
    told = {(s, n) for s, names in described.items() for n in names}
    return sorted(f"{s}.{n}" if s else n for s, n in have ^ told)


def _lookup(config: ConfigDict, section: str, name: str) -> Any:
    for part in filter(None, section.split(".")):
        config = config[part]
    return config[name]


def _value(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_value(v) for v in value) + ")" if value else "()"
    return json.dumps(value) if isinstance(value, (str, bool)) else repr(value)


def render() -> str:
    """The reference page (markdown)."""
    lines = ["<!-- Made by `python -m othello_jax.training.settings.reference > docs/settings.md`; "
             "edit the field tables, not this file. -->",
             "# Settings", "",
             "Every setting, its default and what it does. A config file in `experiments/configs/` starts from",
             "these defaults and changes what it needs; the command line overrides any of them. Stages",
             "(`stages`) change settings of the search, self-play, loss, optimizer, evaluation, gating and",
             "checkpoints mid-run. The defaults are written once, in the field tables beside each typed record",
             "(`othello_jax/training/settings/`, `othello_jax/search/search_settings.py`).", ""]
    for title, usage, make, described in PROGRAMS:
        config = make()
        lines += [f"## {title}", "", f"`{usage}`", ""]
        for section, names in described.items():
            lines += [f"### `{section}`" if section else "### The run", "",
                      "| setting | default | what it does |", "|---|---|---|"]
            for name, text in names.items():
                key = f"{section}.{name}" if section else name
                value = _value(_lookup(config, section, name))
                lines.append(f"| `{key}` | `{value}` | {text.replace('|', chr(92) + '|')} |")
            lines.append("")
    lines += ["## Retired", "",
              "Settings removed because they never paid; naming one is a one-line error, and a workdir written",
              "while they existed (at their off values) still resumes.", "",
              "| setting | why it went |", "|---|---|"]
    for name, entry in RETIRED_SETTINGS.items():
        lines.append(f"| `{name}` | {str(entry[-1]).replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
