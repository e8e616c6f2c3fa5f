"""Settings that were removed, each with the measurement that retired it: naming one is a one-line error.

One table for every path a setting can come in by: a config file or a config dict (an old
workdir's) through :func:`check_retired`, a ``--config.KEY=VALUE`` override through
:func:`check_overrides` (ml_collections would otherwise only say "no such field").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ml_collections import ConfigDict

from othello_jax.errors import InputError
from othello_jax.model import RETIRED_NETWORK_FIELDS

ANY = object()  # the offs of a key meaningless once its switch is gone: every value of it is off

_REUSE = "subtree reuse gave no gain at equal time (experiments/RESULTS.md, 'subtree reuse')"
_PLAYOUT_CAP = ("playout cap randomisation was the worst arm of the A/B screen "
                "(experiments/RESULTS.md, 'playout cap randomisation')")
_RANDOM_PLIES = ("random opening moves gave no gain at equal wall clock (experiments/RESULTS.md, "
                 "'Random opening moves in self-play at equal wall clock, 6x6 (2026-11-26)')")
_OPPONENT = ("a fixed opponent in a share of the games gained nothing that held across seeds (experiments/RESULTS.md, "
             "'The 8x8 screen of the league and of exact endings in self-play (12 minutes, one core each, 3 seeds)')")
_HOST_EXACT = ("exact values from the host C solver lost at full length (experiments/RESULTS.md, 'Exact values from "
               "the host C solver to 18 empties in 8x8 self-play: screen and full length (2026-11-28, third session)')")
_HOST_POLICY = ("exact policy targets' gain was gone at the quickstart's length (experiments/RESULTS.md, "
                "'Exact policy targets at the quickstart's length, against perfect play, 6x6 (2026-11-26)')")
_AVERAGE = ("retired with no evidence for it, no config used it (experiments/RESULTS.md, "
            "'Options that never paid: retired, and those kept (2026-11-29)')")

# dotted key -> (the values that mean off, which an old workdir's config carries, or ANY; why it went,
# naming its RESULTS.md heading). A section's off value is a dict: each field it names at that value.
RETIRED_SETTINGS: dict[str, tuple[object, str]] = {
    "search.reuse": ((False,), _REUSE),
    "search.reuse_nodes": ((0,), _REUSE),
    "selfplay.playout_cap": (({"every": 0},), _PLAYOUT_CAP),
    "selfplay.random_plies": ((0,), _RANDOM_PLIES),
    "selfplay.opponent_share": ((0, 0.0), _OPPONENT),
    "selfplay.opponent": (ANY, _OPPONENT),
    "selfplay.host_exact_empties": ((0,), _HOST_EXACT),
    "selfplay.host_exact_workers": (ANY, _HOST_EXACT),
    "selfplay.host_exact_policy": ((False,), _HOST_POLICY),
    "replay.average_duplicates": ((False,), _AVERAGE),
    # the network's (model.RETIRED_NETWORK_FIELDS: checkpoints and network files read them too)
    **{f"network.{name}": (offs, why) for name, (offs, why) in RETIRED_NETWORK_FIELDS.items()},
}


def retired_error(key: str) -> InputError:
    """The one-line error for the retired setting ``key`` (or a key below it)."""
    name = retired_key(key) or key
    return InputError(f"{name} was removed: {RETIRED_SETTINGS[name][1]}; drop the setting")


def retired_key(key: str) -> str | None:
    """The retired setting ``key`` is or lies below (``selfplay.playout_cap.every`` -> ``selfplay.playout_cap``)."""
    return next((name for name in RETIRED_SETTINGS if key == name or key.startswith(name + ".")), None)


def _lookup(config: Mapping, dotted: str) -> tuple[bool, object]:
    node: object = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _is_off(value: object, offs: object) -> bool:
    """Whether ``value`` is the setting turned off: one of ``offs`` (a section: each field an off
    dict names at its value), or anything at all for ``ANY``."""
    if offs is ANY:
        return True
    return any(_is_off_value(value, off) for off in offs)


def _is_off_value(value: object, off: object) -> bool:
    if isinstance(off, Mapping):
        return isinstance(value, Mapping) and all(_is_off_value(value.get(k), v) for k, v in off.items())
    return value == off


def check_retired(config: Mapping | ConfigDict) -> None:
    """Raise the one-line error for a retired setting the config turns on.

    A retired setting at its off value (what every config written before carried) is ignored,
    so an old workdir's config still reads; anything else fails naming why it went.
    """
    if isinstance(config, ConfigDict):
        config = config.to_dict()
    for name, (offs, _) in RETIRED_SETTINGS.items():
        present, value = _lookup(config, name)
        if present and not _is_off(value, offs):
            raise retired_error(name)


def check_overrides(argv: Iterable[str]) -> None:
    """Raise the one-line error for a ``--config.KEY[=VALUE]`` argument naming a retired setting."""
    for arg in argv:
        if arg.startswith("--config."):
            key = arg[len("--config."):].split("=", 1)[0]
            if retired_key(key):
                raise retired_error(key)


def retired_in_message(message: str) -> str | None:
    """The retired setting whose field a "no such field" message names (a config file setting a
    field of a removed section, e.g. ``c.selfplay.playout_cap.every = 4``), or None."""
    for name in RETIRED_SETTINGS:
        if f"'{name.rsplit('.', 1)[1]}'" in message or f"field: {name.rsplit('.', 1)[1]}" in message:
            return name
    return None
