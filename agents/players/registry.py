"""Build agents by name: ``make_agent("greedy", "yacht")``, ``make_agent("model:runs/x/final_model.zip", rules)``.

Names the benchmark, the CLI and ``train.py`` understand:

===============  ===========================================================
``random``       :class:`agents.players.random_agent.RandomAgent` (keyword ``seed``)
``greedy``       :class:`agents.players.greedy.GreedyAgent`
``optimal``      :class:`agents.players.optimal.OptimalAgent` (the exact solver; keyword
                 ``solution`` reuses an already solved one)
``winning``      :class:`agents.players.winning.WinningAgent`: plays to finish first
                 at a table of 2 to 6 players (docs/winning.md); arguments as
                 ``winning,target=200`` (play for a final score) or
                 ``winning,future=reach``; needs the ruleset's reach table
                 (solved once and cached: seconds for yacht, ~40 min for yahtzee)
``trained``      :class:`agents.policy.player.PolicyAgent`: the policy shipped with
                 the package for the ruleset (default options; NumPy only)
``model:PATH``   a ``.npz`` policy file of the batched trainers
                 (:class:`agents.policy.player.PolicyAgent`, NumPy only), or an SB3
                 ``.zip`` (:class:`agents.players.sb3_agent.SB3Agent`, needs the ``train``
                 extra: torch, imported only here). Either refuses a ruleset
                 other than the one it was trained on.
``FILE.py:NAME`` your own agent: ``NAME`` (a class, a factory function or an
                 agent object) from the Python file ``FILE.py``, e.g.
                 ``path/to/my_agent.py:MyAgent``
``MODULE:NAME``  the same from an importable module, e.g.
                 ``package.module:MyAgent``
===============  ===========================================================

Your own agent is any object with a method ``act(observation, action_mask)``
returning a legal action (an ``int``); ``reset()`` (called before each game),
``seed(seed)`` (called with a per-game seed by the benchmark) and ``obs_mode``
(``"dict"``, the default, or ``"flat"``) are used when it has them. Constructor
arguments follow the name, comma-separated, as ``key=value``:
``my_agent.py:MyAgent,depth=2,style=careful``. Values are Python literals
(``2``, ``0.5``, ``"x"``, ``[1, 2]``, ``None``; ``true``/``false``/``none`` too),
anything else is a string. The constructor also receives ``rules`` (the
:class:`~dice_poker_env.rules.Rules` being played) and ``seed`` (when the caller
has one) if it has parameters of those names and the spec does not set them.
A file is imported once per process, as a module named after its path, with its
folder put on ``sys.path`` (so it can import its neighbours), as ``python FILE.py``
would. Every problem loading an agent (no such file or module, no such name, a
failing import or constructor, an object without ``act``) is an
:class:`AgentLoadError`, a ``ValueError`` whose one-line message names the spec
(the file, for a file that fails to import: the name in it played no part).

Size: every way to name an agent (built-ins, model files, custom specs and their arguments) and the wrapper of a
custom agent, whose load and play errors must name it alike.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dice_poker_env.rules import Rules, load_rules

if TYPE_CHECKING:
    from types import ModuleType

AGENT_NAMES = ("optimal", "greedy", "random", "trained", "winning")
#: the built-in agents that take ``key=value`` arguments after a comma: ``winning,target=200``
_WITH_ARGUMENTS = ("winning",)
#: the arguments each of them takes in a spec (``winning,target=200``)
_ARGUMENTS = {"winning": ("target", "future", "tail")}
#: What the error for an unknown agent lists.
AGENT_FORMS = ", ".join(AGENT_NAMES) + ", model:PATH, FILE.py:NAME or MODULE:NAME"

_SPEC = re.compile(r"^(?P<source>.+?):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:,(?P<args>.*))?$", re.S)
_MODULE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_KEY = re.compile(r"^[A-Za-z_]\w*$")


def make_agent(
    name: str,
    rules: str | os.PathLike[str] | Rules,
    *,
    seed: int | None = None,
    solution: Any = None,
    agent_name: str | None = None,
    **options: Any,
) -> Any:
    """An agent for ``rules`` by name (table in the module docstring).

    Args:
        name: an agent name or spec (module docstring).
        rules: the ruleset played (name, rules file or :class:`Rules`).
        seed: the random agent's seed (a custom agent's ``seed`` parameter).
        solution: an already solved ``Solution`` of ``rules`` (the optimal and winning agents).
        agent_name: the name the agent reports (default: its own).
        **options: rules options, as for :func:`~dice_poker_env.rules.load_rules`
            (``make_agent("greedy", "yahtzee", joker="free")``).

    Raises:
        ValueError: unknown name; :class:`AgentLoadError` (a ``ValueError``) for
            a custom agent that cannot be loaded; a
            :class:`~dice_poker_env.rules.RulesError` (a ``ValueError``) for a
            keyword that is neither an argument above nor an option of the rules.
    """
    rules = load_rules(rules, **options)
    if solution is not None:
        from agents.players.optimal import check_solution_rules

        check_solution_rules(solution, rules)
    custom = parse_agent_spec(name) if isinstance(name, str) else None
    if custom is not None:
        return custom.build(rules, seed=seed, name=agent_name)
    agent: Any
    if name == "random":
        from agents.players.random_agent import RandomAgent

        agent = RandomAgent(seed=seed)
    elif name == "greedy":
        from agents.players.greedy import GreedyAgent

        agent = GreedyAgent(rules)
    elif name == "optimal":
        from agents.players.optimal import OptimalAgent

        agent = OptimalAgent(solution if solution is not None else rules)
    elif isinstance(name, str) and name.split(",", 1)[0] == "winning":
        from agents.players.winning import WinningAgent

        arguments = builtin_arguments(name)
        try:
            agent = WinningAgent(rules, solution=solution, **arguments)
        except TypeError as error:  # an unknown keyword
            raise ValueError(f"agent {name!r}: {error}") from None
    elif name == "trained":
        from agents.policy.player import shipped_policy

        return shipped_policy(rules, name=agent_name or "trained")
    elif name.startswith("model:") and name.endswith(".npz"):  # a batched trainer's policy: NumPy, no torch
        from agents.policy.player import PolicyAgent

        return PolicyAgent.load(name[len("model:") :], rules=rules, name=agent_name or "model")
    elif name.startswith("model:"):
        from agents.players.sb3_agent import SB3Agent

        return SB3Agent.load(name[len("model:") :], rules=rules, name=agent_name or "model")
    else:
        raise ValueError(f"unknown agent {name!r}: use one of {AGENT_FORMS}")
    if agent_name is not None:
        agent.name = agent_name
    return agent


def is_batch_agent(agent: Any) -> bool:
    """Whether ``agent`` (a name or an agent object) is one of the project's NumPy batch agents: optimal,
    greedy, the rules heuristic (:class:`agents.players.heuristic.LookaheadAgent`, an object) and the
    batched trainers' policies (``trained``, ``model:PATH.npz``). They answer ``act_batch``
    over independent games, keep no state between moves and need no torch, so the benchmark plays all
    their games in lockstep. A name is judged without building the agent; an object by its exact type
    (a subclass may keep state)."""
    if isinstance(agent, str):
        return (
            agent in ("optimal", "greedy", "trained")
            or agent.split(",", 1)[0] == "winning"
            or (agent.startswith("model:") and agent.endswith(".npz"))
        )
    from agents.players.greedy import GreedyAgent
    from agents.players.heuristic import LookaheadAgent
    from agents.players.optimal import OptimalAgent
    from agents.players.winning import WinningAgent
    from agents.policy.player import PolicyAgent

    return type(agent) in (GreedyAgent, LookaheadAgent, OptimalAgent, PolicyAgent, WinningAgent)


def builtin_arguments(name: str) -> dict[str, Any]:
    """The ``key=value`` arguments of a built-in agent that takes them (``winning,target=200``); a
    ``ValueError`` naming the spec for a malformed one."""
    base, _, args = name.partition(",")
    if base not in _WITH_ARGUMENTS:
        raise ValueError(f"unknown agent {name!r}: use one of {AGENT_FORMS}")
    out: dict[str, Any] = {}
    for item in _split_args(args):
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not _KEY.match(key):
            raise ValueError(f"agent {name!r}: arguments must be key=value, got {item.strip()!r}")
        if key in out:
            raise ValueError(f"agent {name!r}: argument {key!r} given twice")
        if key not in _ARGUMENTS[base]:
            raise ValueError(f"agent {name!r}: unknown argument {key!r} ({base} takes {', '.join(_ARGUMENTS[base])})")
        out[key] = literal_value(text.strip())
    return out


def check_agent(name: Any, *, load: bool = True) -> None:
    """Refuse an agent name before any work: unknown names, custom agents that cannot be loaded.

    Built-in names and ``model:PATH`` pass (a model is checked when it loads); a
    custom spec is parsed and its module imported, and ``NAME`` must exist in it.
    ``load=False`` (an agent that runs isolated: its code never runs in this process)
    checks only that a ``FILE.py`` is one; the sandbox reports the rest when it loads.

    Raises:
        ValueError: unknown name; :class:`AgentLoadError` for a custom agent.
    """
    if not isinstance(name, str):
        raise ValueError(f"unknown agent {name!r}: use one of {AGENT_FORMS}")
    if name in AGENT_NAMES or name.startswith("model:"):
        return
    if ":" not in name and name.split(",", 1)[0] in _WITH_ARGUMENTS:
        builtin_arguments(name)
        return
    custom = parse_agent_spec(name)
    if custom is None:
        raise ValueError(f"unknown agent {name!r}: use one of {AGENT_FORMS}")
    if load:
        custom.resolve()
    elif custom.is_file:
        custom.check_file()


class AgentLoadError(ValueError):
    """A custom agent (``FILE.py:NAME`` or ``MODULE:NAME``) could not be loaded or built."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed custom agent spec: ``SOURCE:NAME[,key=value,...]``.

    Attributes:
        spec: the spec as given.
        source: a ``.py`` file path or a dotted module name.
        attr: the name in it (dots reach nested attributes: ``Outer.Inner``).
        kwargs: the constructor arguments parsed from ``key=value``.
        is_file: whether ``source`` is a file path.
    """

    spec: str
    source: str
    attr: str
    kwargs: tuple[tuple[str, Any], ...]
    is_file: bool

    @property
    def label(self) -> str:
        """The short name the agent is reported under: ``NAME`` or ``NAME(key=value, ...)``."""
        if not self.kwargs:
            return self.attr
        return f"{self.attr}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"

    def module(self) -> ModuleType:
        """Import the spec's module (a file: once per process, under a name derived from its path)."""
        if not self.is_file:
            try:
                return importlib.import_module(self.source)
            except ModuleNotFoundError as error:
                if error.name and self.source.startswith(error.name):
                    raise AgentLoadError(f"agent {self.spec!r}: no module named {error.name!r}") from None
                raise AgentLoadError(
                    f"agent {self.spec!r}: importing {self.source} failed: {one_line(error)}"
                ) from error
            except Exception as error:  # noqa: BLE001 - any failure of the user's import is a load error
                raise AgentLoadError(
                    f"agent {self.spec!r}: importing {self.source} failed: {one_line(error)}"
                ) from error
        path = self.check_file()
        module_name = "_dice_poker_agent_" + hashlib.sha256(path.encode()).hexdigest()[:16]
        if module_name in sys.modules:
            return sys.modules[module_name]
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise AgentLoadError(f"agent {self.spec!r}: Python cannot load {self.source} as a module")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # before running it: dataclasses and pickling look it up
        try:
            loader_spec.loader.exec_module(module)
        except BaseException as error:
            del sys.modules[module_name]
            if not isinstance(error, Exception):
                raise
            # the file's failure, whatever the spec names in it (a class search may have had no class to name)
            raise AgentLoadError(f"importing {self.source} failed: {one_line(error)}") from error
        return module

    def check_file(self) -> str:
        """The absolute path of the spec's ``.py`` file, which exists (nothing is read or run)."""
        path = os.path.abspath(self.source)
        if not self.source.endswith(".py"):
            raise AgentLoadError(f"agent {self.spec!r}: {self.source} is not a Python file (FILE.py:NAME)")
        if not os.path.isfile(path):
            raise AgentLoadError(f"agent {self.spec!r}: no such file {self.source}")
        return path

    def resolve(self) -> Any:
        """The object ``NAME`` names (not yet called)."""
        target = self.module()
        for part in self.attr.split("."):
            if not hasattr(target, part):
                raise AgentLoadError(
                    f"agent {self.spec!r}: {self.source} has no {self.attr!r}{_did_you_mean(target, part)}"
                )
            target = getattr(target, part)
        return target

    def build(self, rules: Rules, seed: int | None = None, name: str | None = None) -> ImportedAgent:
        """The agent: ``NAME(**kwargs)`` (plus ``rules``/``seed`` where accepted), wrapped."""
        target = self.resolve()
        kwargs = dict(self.kwargs)
        if isinstance(target, type) or (callable(target) and not callable(getattr(target, "act", None))):
            accepted = _parameters(target)
            if "rules" not in kwargs and "rules" in accepted:
                kwargs["rules"] = rules
            if seed is not None and "seed" not in kwargs and "seed" in accepted:
                kwargs["seed"] = seed
            try:
                agent = target(**kwargs)
            except Exception as error:  # noqa: BLE001 - the user's constructor
                call = f"{self.attr}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"
                hint = self._unfilled_hint(target, kwargs, seed is not None) if isinstance(error, TypeError) else ""
                raise AgentLoadError(f"agent {self.spec!r}: {call} failed: {one_line(error)}{hint}") from error
        elif self.kwargs:
            raise AgentLoadError(
                f"agent {self.spec!r}: {self.attr} is an agent object, not a class: it takes no key=value arguments"
            )
        else:
            agent = target
        if not callable(getattr(agent, "act", None)):
            raise AgentLoadError(
                f"agent {self.spec!r}: {type(agent).__name__} has no act(observation, action_mask) method"
            )
        problem = _call_problem(agent)
        if problem is not None:
            raise AgentLoadError(f"agent {self.spec!r}: {type(agent).__name__}.{problem}")
        return ImportedAgent(agent, name or self.label)

    def _unfilled_hint(self, target: Any, given: dict[str, Any], seeded: bool) -> str:
        """``"; ... 'r' got nothing ..."``: what a constructor is offered by name (``rules``; ``seed`` when ``seeded``),
        when one of its required parameters was given nothing (``def __init__(self, r)``: the rules are passed as
        ``rules``, never by position); ``""`` otherwise."""
        try:
            parameters = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            return ""
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        missing = [p.name for p in parameters if p.kind in named and p.default is p.empty and p.name not in given]
        if not missing:
            return ""
        offered = "rules (the Rules played)" + (" and seed (an int)" if seeded else "")
        return (
            f"; the constructor is given {offered} by name, to parameters of that name, and the spec's key=value "
            f"arguments, nothing else: {', '.join(repr(name) for name in missing)} got nothing (write "
            f"def __init__(self, rules), give it a default, or set it: {self.attr},{missing[0]}=VALUE)"
        )


def parse_agent_spec(spec: str) -> AgentSpec | None:
    """Parse ``FILE.py:NAME[,key=value,...]`` or ``MODULE:NAME[,...]``; ``None`` if ``spec`` is not of that form.

    Built-in names and ``model:PATH`` are not custom specs (``None``).

    Raises:
        AgentLoadError: the form is right but a part is not (a bad module name,
            an argument that is not ``key=value``, a key given twice).
    """
    if not isinstance(spec, str) or spec in AGENT_NAMES or spec.startswith("model:"):
        return None
    if ":" not in spec.split(",", 1)[0] and spec.split(",", 1)[0] in _WITH_ARGUMENTS:
        return None
    match = _SPEC.match(spec.strip())
    if match is None:
        return None
    source, attr, args = match.group("source"), match.group("attr"), match.group("args")
    is_file = source.endswith(".py") or "/" in source or os.sep in source
    if not is_file and not _MODULE.match(source):
        raise AgentLoadError(f"agent {spec!r}: {source!r} is neither a .py file nor a module name")
    kwargs: dict[str, Any] = {}
    for item in _split_args(args) if args is not None else []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not _KEY.match(key):
            raise AgentLoadError(f"agent {spec!r}: constructor arguments must be key=value, got {item.strip()!r}")
        if key in kwargs:
            raise AgentLoadError(f"agent {spec!r}: argument {key!r} given twice")
        kwargs[key] = literal_value(text.strip())
    return AgentSpec(spec, source, attr, tuple(kwargs.items()), is_file)


def _split_args(text: str) -> list[str]:
    """Split ``a=1,b=[1, 2],c='x,y'`` on the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


def literal_value(text: str) -> Any:
    """A Python literal, ``true``/``false``/``none`` in any case, or else the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _parameters(target: Any) -> set[str]:
    try:
        return set(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # no signature (some builtins)
        return set()


#: how the games call an agent's methods: the arguments each is given (``reset`` and ``seed`` only where it has them)
AGENT_CALLS = {"act": ("observation", "action_mask"), "reset": (), "seed": ("seed",)}


def _call_problem(agent: Any) -> str | None:
    """``"act(self, observation) cannot be called as act(observation, action_mask) ..."``: a method of ``agent`` whose
    signature cannot take the arguments the games give it (it would fail at every call, a ``TypeError`` that does not
    say how it is called), or ``None`` (also where a signature cannot be read)."""
    for method, arguments in AGENT_CALLS.items():
        try:
            function = getattr(agent, method, None)
            if not callable(function):
                continue
            signature = inspect.signature(function)
        except Exception:  # noqa: BLE001 - a property of the user's object, a builtin without a signature
            continue
        try:
            signature.bind(*arguments)
        except TypeError:
            try:  # (a default's __repr__ is the user's too)
                own = cut(f"{method}{signature}", 120)
            except Exception:  # noqa: BLE001
                own = method
            return f"{own} cannot be called as {method}({', '.join(arguments)}), as the games call it" + (
                "" if method == "act" else f" (where an agent has a {method} method)"
            )
    return None


def _did_you_mean(target: Any, name: str) -> str:
    """``" (did you mean 'MyAgent'?)"``: the public name of ``target`` (the user's module or class) closest to the
    misspelt ``name``, or ``""``."""
    import difflib

    try:
        names = [n for n in dir(target) if isinstance(n, str) and not n.startswith("_")]
    except Exception:  # noqa: BLE001 - the user's module's __dir__
        return ""
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def cut(text: str, limit: int) -> str:
    """``text`` as it is if it has at most ``limit`` characters, else its start and ``...``, ``limit`` in all."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(error: BaseException, limit: int = 200) -> str:
    """``"KeyError: 'x'"``: an exception's type and its message's first line, cut to ``limit`` characters (an
    agent's exception: its ``__str__`` may raise or run long)."""
    try:
        text = str(error).strip().splitlines()
    except KeyboardInterrupt:  # the user's Ctrl-C, not the agent's doing
        raise
    except BaseException:  # noqa: BLE001 - whatever the agent's exception does (a SystemExit in __str__ too)
        text = ["<its message raised>"]
    return cut(f"{type(error).__name__}: {text[0]}" if text else type(error).__name__, limit)


class ImportedAgent:
    """A custom agent, as the benchmark and the games use it.

    Forwards ``act`` and checks that the answer is an action index (an
    ``int``-like integer, not a bool, float or string); calls the agent's
    ``reset()`` and ``seed(seed)`` only where it has them; reads ``obs_mode``
    from it (default ``"dict"``). Other attributes are the agent's own.

    Attributes:
        agent: the user's object.
        name: the name it is reported under.
    """

    def __init__(self, agent: Any, name: str) -> None:
        self.agent = agent
        self.name = name
        try:
            mode = getattr(agent, "obs_mode", "dict")
        except Exception as error:
            raise AgentLoadError(self._raised("reading obs_mode", error)) from error
        if type(mode) is not str or mode not in ("dict", "flat"):  # (exactly a str: no __eq__ of the agent's runs)
            raise AgentLoadError(f"agent {name}: obs_mode must be 'dict' or 'flat', got {_shown(mode)}")
        self.obs_mode = mode

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        """The agent's action, checked to be an action index; what its ``act`` raises is an :class:`AgentError`."""
        try:
            value = self.agent.act(observation, action_mask)
        except Exception as error:
            raise AgentError(self._raised("act", error)) from error
        return as_action(value, f"agent {self.name}")

    def reset(self) -> None:
        """The agent's ``reset()``, where it has one."""
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            try:
                reset()
            except Exception as error:
                raise AgentError(self._raised("reset", error)) from error

    def seed(self, seed: int | None) -> None:
        """The agent's ``seed(seed)``, where it has one."""
        method = getattr(self.agent, "seed", None)
        if callable(method):
            try:
                method(seed)
            except Exception as error:
                raise AgentError(self._raised("seed", error)) from error

    def _raised(self, method: str, error: Exception) -> str:
        """``agent NAME: act raised KeyError: 'rolls' (my_agent.py, line 12)``: the innermost line of the
        agent's own file (its class's module) where the traceback passes through it, else the innermost line."""
        frames = traceback.extract_tb(error.__traceback__)[1:]  # (the first: this wrapper's call)
        try:
            own = os.path.abspath(inspect.getfile(type(self.agent)))
        except (TypeError, OSError):
            own = None
        mine = [f for f in frames if own is not None and os.path.abspath(f.filename) == own] or frames
        where = f" ({os.path.basename(mine[-1].filename)}, line {mine[-1].lineno})" if mine else ""
        return f"agent {self.name}: {method} raised {one_line(error)}{where}"

    def __getattr__(self, attr: str) -> Any:
        if attr == "agent":  # not set yet (unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.agent, attr)

    def __repr__(self) -> str:
        return f"ImportedAgent({self.name!r}, {self.agent!r})"


class AgentError(ValueError):
    """A custom agent's own code raised (in ``act``, ``reset`` or ``seed``): one line naming the agent, the
    method, the exception and the agent file's line (a ``ValueError``, so commands print it so); the exception
    is its ``__cause__``."""


class BadActionError(TypeError, ValueError):
    """An agent returned something that is not an action index (a ``ValueError``, so commands print it in one
    line, and a ``TypeError`` as before)."""


def as_action(value: Any, who: str = "agent") -> int:
    """``value`` as an action index; a bool, float, string, ``None`` or array of several is a
    :class:`BadActionError` naming the agent (``who``)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise BadActionError(f"{who} returned {_shown(value)} ({type(value).__name__}), not an action index (an int)")
    if not -(2**63) <= value < 2**63:  # (the envs' actions are int64)
        raise BadActionError(f"{who} returned {_shown(value)}, not an action index (beyond int64)")
    return int(value)


def _shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (an agent's value: its ``__repr__`` may raise)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - whatever the agent's object does
        text = f"<{type(value).__name__}>"
    return cut(text, limit)
