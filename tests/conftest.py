"""Test-session isolation: no test writes outside a temporary directory.

Every test session gets its own temporary folders for what the library and its
dependencies would otherwise write under the user's home or the current folder:

* the solver's disk cache (``DICE_POKER_CACHE``), so no test module reads or
  solves into the user's real cache, whichever module runs first, and the cache's
  secret key (``DICE_POKER_KEY_DIR``);
* matplotlib's config and font cache (``MPLCONFIGDIR``);
* hypothesis' storage (``HYPOTHESIS_STORAGE_DIRECTORY``, instead of
  ``.hypothesis/`` in the working directory) and its example database (in memory);
* Stable-Baselines3's logger folder (``SB3_LOGDIR``, instead of a new ``SB3-<time>``
  folder in the system's temporary folder for every model a test trains);
* pytest-benchmark's storage, when that plugin is installed (instead of ``.benchmarks/``).

The variables are set when pytest starts, before any test module is imported, so
subprocesses the tests start (``train.py``, ``dice-poker``) inherit them; they
are restored and the folders removed when the session ends.
Training runs, plots and TensorBoard logs go to each test's ``tmp_path``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

#: environment variable -> folder name under the session's temporary folder
ISOLATED = {
    "DICE_POKER_CACHE": "solver-cache",
    "DICE_POKER_KEY_DIR": "solver-key",
    "MPLCONFIGDIR": "matplotlib",
    "HYPOTHESIS_STORAGE_DIRECTORY": "hypothesis",
    "SB3_LOGDIR": "sb3",  # SB3's logger folder when a test's model has no tensorboard_log (else /tmp/SB3-<time>)
}

_saved: dict[str, str | None] = {}
_root: str | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _root
    _root = tempfile.mkdtemp(prefix="dice-poker-tests-")
    for name, folder in ISOLATED.items():
        _saved[name] = os.environ.get(name)
        path = os.path.join(_root, folder)
        os.makedirs(path)
        os.environ[name] = path
    if getattr(config.option, "benchmark_storage", None) == "file://./.benchmarks":  # the plugin's default
        config.option.benchmark_storage = "file://" + os.path.join(_root, "benchmarks")
    try:
        from hypothesis import settings
    except ModuleNotFoundError:
        return
    settings.register_profile("isolated", database=None)
    settings.load_profile("isolated")
    try:  # in case hypothesis has read the variable already
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # older hypothesis: the variable alone
        return
    set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, old in _saved.items():
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
    if _root is not None:
        shutil.rmtree(_root, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _solve_bound_before_any_patch() -> None:
    """The modules that bind ``dice_poker_env.solver.solve`` when first imported, imported before any test patches
    it (a test that refuses to solve): imported first under the patch, they kept the patched function for the
    worker's later tests."""
    import agents.players.optimal  # noqa: F401
    import agents.players.winning  # noqa: F401
