"""``train.py`` as a module, for the tests that call its functions (it is a script, not a package module)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TRAIN_PY = Path(__file__).resolve().parents[1] / "train.py"


def load_train() -> ModuleType:
    """A fresh import of ``train.py`` under the name ``train_script`` (its dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location("train_script", TRAIN_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_script"] = module
    spec.loader.exec_module(module)
    return module
