"""Validation of the keyword arguments every front end shares, with one wording."""

from __future__ import annotations

from typing import Any, Sequence


def require_choice(name: str, value: Any, choices: Sequence[Any], *, optional: bool = False) -> None:
    """Raise ``ValueError`` naming the argument unless ``value`` is one of ``choices``."""
    if optional and value is None:
        return
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
