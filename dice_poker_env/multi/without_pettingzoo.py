"""The base of :class:`~dice_poker_env.multi.raw_env` where PettingZoo is not installed.

PettingZoo is the optional ``multi`` extra. Without it, :class:`~dice_poker_env.multi.SeatEnv`
(a Gymnasium env) and the duplicate tables of ``dice-poker tournament`` still play ``raw_env``
games through its own methods, which call these helpers of PettingZoo's ``AECEnv``; they behave
as PettingZoo's. The rest of the AEC API (``agent_iter``, ``last``, the wrapped :func:`env`)
needs PettingZoo.
"""

from __future__ import annotations

from typing import Any


class AECEnv:
    """PettingZoo ``AECEnv``'s reward and dead-agent bookkeeping, as ``raw_env`` calls it."""

    agents: list[str]
    agent_selection: str
    rewards: dict[str, float]
    _cumulative_rewards: dict[str, float]
    terminations: dict[str, bool]
    truncations: dict[str, bool]
    infos: dict[str, dict[str, Any]]
    _skip_agent_selection: str | None = None

    def _clear_rewards(self) -> None:
        for agent in self.rewards:
            self.rewards[agent] = 0.0

    def _accumulate_rewards(self) -> None:
        for agent, reward in self.rewards.items():
            self._cumulative_rewards[agent] += reward

    def _dead(self) -> list[str]:
        return [agent for agent in self.agents if self.terminations[agent] or self.truncations[agent]]

    def _deads_step_first(self) -> str:
        dead = self._dead()
        if dead:
            self._skip_agent_selection = self.agent_selection
            self.agent_selection = dead[0]
        return self.agent_selection

    def _was_dead_step(self, action: Any) -> None:
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        del self.terminations[agent], self.truncations[agent], self.rewards[agent]
        del self._cumulative_rewards[agent], self.infos[agent]
        self.agents.remove(agent)
        dead = self._dead()
        if dead:
            if self._skip_agent_selection is None:
                self._skip_agent_selection = self.agent_selection
            self.agent_selection = dead[0]
        else:
            if self._skip_agent_selection is not None:
                self.agent_selection = self._skip_agent_selection
            self._skip_agent_selection = None
        self._clear_rewards()
