"""The agents an engine plays with, one per board size, built on first use and closed together
(shared by the GTP and the NBoard engines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from othello_jax.game import Othello

AgentFactory = Callable[[Othello], Any]


class AgentsBySize:
    """``agents(game)``: the agent ``make_agent(game)`` builds, built once per board size."""

    def __init__(self, make_agent: AgentFactory):
        self.make_agent = make_agent
        self._agents: dict[int, Any] = {}

    def __call__(self, game: Othello) -> Any:
        if game.size not in self._agents:
            self._agents[game.size] = self.make_agent(game)
        return self._agents[game.size]

    def close(self) -> None:
        """Release the agents' resources (e.g. external engine processes)."""
        for agent in self._agents.values():
            if getattr(agent, "close", None) is not None:
                agent.close()
        self._agents.clear()
