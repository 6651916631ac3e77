"""Build agents by name: ``make_agent("greedy", "yacht")``, ``make_agent("model:runs/x/final_model.zip", rules)``.

Names the benchmark, the CLI and ``train.py`` understand:

===============  ===========================================================
``random``       :class:`agents.random_agent.RandomAgent` (keyword ``seed``)
``greedy``       :class:`agents.greedy.GreedyAgent`
``optimal``      :class:`agents.optimal.OptimalAgent` (the exact solver; keyword
                 ``solution`` reuses an already solved one)
``trained``      :class:`agents.policy_agent.PolicyAgent`: the policy shipped with
                 the package for the ruleset (default options; NumPy only)
``model:PATH``   a ``.npz`` policy file of the batched trainers
                 (:class:`agents.policy_agent.PolicyAgent`, NumPy only), or an SB3
                 ``.zip`` (:class:`agents.sb3_agent.SB3Agent`, needs the ``train``
                 extra: torch, imported only here). Either refuses a ruleset
                 other than the one it was trained on.
===============  ===========================================================
"""

from __future__ import annotations

from typing import Any

from dice_poker_env.rules import Rules, load_rules

AGENT_NAMES = ("optimal", "greedy", "random", "trained")


def make_agent(name: str, rules: str | Rules, **kwargs: Any):
    """An agent for ``rules`` by name (table in the module docstring).

    Raises:
        ValueError: unknown name.
    """
    rules = load_rules(rules)
    if name == "random":
        from agents.random_agent import RandomAgent

        return RandomAgent(seed=kwargs.get("seed"))
    if name == "greedy":
        from agents.greedy import GreedyAgent

        return GreedyAgent(rules)
    if name == "optimal":
        from agents.optimal import OptimalAgent

        solution = kwargs.get("solution")
        return OptimalAgent(solution if solution is not None else rules)
    if name == "trained":
        from agents.policy_agent import shipped_policy

        return shipped_policy(rules, name=kwargs.get("agent_name", "trained"))
    if name.startswith("model:") and name.endswith(".npz"):  # a batched trainer's policy: NumPy, no torch
        from agents.policy_agent import PolicyAgent

        return PolicyAgent.load(name[len("model:") :], rules=rules, name=kwargs.get("agent_name", "model"))
    if name.startswith("model:"):
        from agents.sb3_agent import SB3Agent

        return SB3Agent.load(name[len("model:") :], rules=rules, name=kwargs.get("agent_name", "model"))
    raise ValueError(f"unknown agent {name!r}: use one of {', '.join(AGENT_NAMES)} or model:PATH")
