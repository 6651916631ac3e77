"""Illegal actions: the one handling that every front end shares.

An action is illegal when the game's mask forbids it; out of range or not an
integer (``None``, ``True``, ``3.0``, ``np.array([3])``) counts as illegal too.
Why it is illegal comes from the engine
(:func:`~dice_poker_env.engine.game.explain_illegal`). Two modes, chosen with
``illegal_action``:

* ``"terminate"`` (default): the episode ends at once, unchanged, with reward
  ``illegal_penalty`` and ``info["illegal_action"] = True``,
  ``info["illegal_reason"]`` (what Gymnasium's ``check_env`` and unmasked
  agents need);
* ``"raise"``: :class:`IllegalActionError` names the action and the reason, and
  nothing changes.

The single env, the vector env (per game) and :class:`~dice_poker_env.multi.SeatEnv`
take both modes through :class:`IllegalActions`; the PettingZoo env's raw form
raises, and its wrapper ends the game (PettingZoo's classic convention).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dice_poker_env.engine.game import explain_illegal
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.envs.arguments import require_choice, require_finite

ILLEGAL_ACTION_MODES = ("terminate", "raise")


class IllegalActionError(ValueError):
    """An illegal action, raised when the env was made with ``illegal_action="raise"``."""


def illegal_reason(tables: RuleTables, state: GameState, action: Any) -> str:
    """Why ``action``, which the front end found illegal, is illegal in this game."""
    return explain_illegal(tables, state, action) or f"action {action!r} is illegal"


@dataclass(frozen=True)
class IllegalActions:
    """How a front end handles illegal actions (see the module docstring).

    Attributes:
        mode: ``"terminate"`` or ``"raise"``.
        penalty: the reward of a step an illegal action ends (``"terminate"``).
    """

    mode: str = "terminate"
    penalty: float = 0.0

    @classmethod
    def from_arguments(cls, illegal_action: Any, illegal_penalty: Any) -> IllegalActions:
        """From an env's ``illegal_action`` and ``illegal_penalty`` arguments, validated (``ValueError`` naming them)."""
        require_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        return cls(illegal_action, require_finite("illegal_penalty", illegal_penalty))

    def judge(self, tables: RuleTables, state: GameState, action: Any, where: str) -> str:
        """The reason ``action`` is illegal in ``state``; in ``"raise"`` mode an :class:`IllegalActionError`
        (``"{where}: {reason}"``) instead."""
        reason = illegal_reason(tables, state, action)
        if self.mode == "raise":
            raise IllegalActionError(f"{where}: {reason}")
        return reason

    @staticmethod
    def mark(info: dict[str, Any], reason: str) -> dict[str, Any]:
        """``info`` of a step an illegal action ended, with ``illegal_action`` and ``illegal_reason``."""
        info["illegal_action"] = True
        info["illegal_reason"] = reason
        return info


class IllegalActionSettings:
    """``illegal_action`` and ``illegal_penalty`` as live attributes of a front end (``env.illegal_action =
    "raise"``, ``set_attr("illegal_penalty", -5)``): each reads and replaces its :class:`IllegalActions`,
    validated, so what an attribute says is what the next step does."""

    _illegal_actions: IllegalActions

    @property
    def illegal_action(self) -> str:
        return self._illegal_actions.mode

    @illegal_action.setter
    def illegal_action(self, mode: str) -> None:
        self._illegal_actions = IllegalActions.from_arguments(mode, self._illegal_actions.penalty)

    @property
    def illegal_penalty(self) -> float:
        return self._illegal_actions.penalty

    @illegal_penalty.setter
    def illegal_penalty(self, penalty: float) -> None:
        self._illegal_actions = IllegalActions.from_arguments(self._illegal_actions.mode, penalty)
