"""othello-jax: a JAX-native AlphaZero for Othello.

The names most programs need, importable from the top (each loads its subpackage on first use,
so ``import othello_jax`` stays light)::

    from othello_jax import Othello, default_config, run, parse_agent, play_match

- game: ``Othello`` (rules for sizes 4, 6, 8), ``State``
- network: ``NetworkConfig``, ``make_network``
- search: ``default_search_config``, ``run_search``, ``select_action``
- agents: ``Agent``, ``parse_agent`` (specs such as ``alphabeta:depth=3``, ``net:ckpt=DIR,sims=64``)
- evaluation: ``play_match``, ``match_openings``
- training: ``default_config``, ``make_train``, ``run``
- trained networks and exact play: ``load_agent_variables``, ``solve``

The subpackages, bottom to top: ``game``, ``model``/``search``/``solver``/``data``,
``checkpoint``, ``agents``, ``evaluation``, ``training``, ``interface``, ``commands``/``cli``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "Othello": "othello_jax.game",
    "State": "othello_jax.game",
    "NetworkConfig": "othello_jax.model",
    "make_network": "othello_jax.model",
    "default_search_config": "othello_jax.search",
    "run_search": "othello_jax.search",
    "select_action": "othello_jax.search",
    "Agent": "othello_jax.agents",
    "parse_agent": "othello_jax.agents",
    "play_match": "othello_jax.evaluation.arena",
    "match_openings": "othello_jax.evaluation.arena",
    "default_config": "othello_jax.training.settings.defaults",
    "make_train": "othello_jax.training.runner.program",
    "run": "othello_jax.training.runner.loop",
    "load_agent_variables": "othello_jax.checkpoint",
    "solve": "othello_jax.solver",
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'othello_jax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
