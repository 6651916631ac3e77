"""The game engine: rules compiled to tables, and the game as pure functions over them.

Modules, bottom up: :mod:`~dice_poker_env.engine.combinatorics` (the rolls, keeps
and transition probabilities of five dice, the same for every ruleset),
:mod:`~dice_poker_env.engine.scoring` (what a box scores for given dice),
:mod:`~dice_poker_env.engine.tables` (a ruleset compiled to lookup tables,
:func:`compile_rules`, and :func:`score`), :mod:`~dice_poker_env.engine.state`
(one game, a batch), :mod:`~dice_poker_env.engine.game` (legal boxes, points
and bonuses, turns), :mod:`~dice_poker_env.engine.masks`
(action masks) and :mod:`~dice_poker_env.engine.position` (positions given by
people, validated).
"""

from dice_poker_env.engine.tables import RuleTables, compile_rules, score

__all__ = ["RuleTables", "compile_rules", "score"]
