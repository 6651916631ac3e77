"""Custom agents by import path or file (``FILE.py:NAME``, ``MODULE:NAME``, ``,key=value``)
in make_agent, the Python benchmark API, ``dice-poker bench``, ``dice-poker play`` and train.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from agents.evaluation.benchmark import agent_names, benchmark
from agents.players.registry import AgentLoadError, ImportedAgent, as_action, make_agent, parse_agent_spec
from dice_poker_env import load_rules

AGENT_SOURCE = '''
import numpy as np


class FirstLegal:
    """Takes the legal action at position ``offset`` (counted from the last one) of the mask."""

    def __init__(self, rules=None, offset=0, label="first"):
        self.rules = rules
        self.offset = offset
        self.label = label
        self.games = 0

    def reset(self):
        self.games += 1

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        return legal[-1 - min(self.offset, legal.size - 1)]


class Minimal:
    """Only ``act``: no reset, no seed, no name, no constructor arguments."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[-1])


class Seeded:
    def __init__(self, seed=None):
        self.seed_given = seed
        self.rng = np.random.default_rng(seed)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask):
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def make(offset=0):
    return FirstLegal(offset=offset)


AGENT = Minimal()


class NoAct:
    pass


class Chatty(Minimal):
    def act(self, observation, action_mask):
        return "3"


class Broken:
    def __init__(self, depth):
        raise RuntimeError("depth must be even")
'''


@pytest.fixture()
def agent_file(tmp_path):
    path = tmp_path / "student" / "my_agent.py"
    path.parent.mkdir()
    path.write_text(AGENT_SOURCE)
    return path


def test_spec_parsing():
    spec = parse_agent_spec(
        "path/to/my_agent.py:MyAgent,depth=2,temperature=0.5,style=careful,on=true,sizes=[1, 2],text='a,b',none=None"
    )
    assert spec.is_file and spec.source == "path/to/my_agent.py" and spec.attr == "MyAgent"
    assert dict(spec.kwargs) == {
        "depth": 2,
        "temperature": 0.5,
        "style": "careful",
        "on": True,
        "sizes": [1, 2],
        "text": "a,b",
        "none": None,
    }
    spec = parse_agent_spec("package.module:Outer.Inner")
    assert not spec.is_file and spec.source == "package.module" and spec.attr == "Outer.Inner" and not spec.kwargs
    assert parse_agent_spec("greedy") is None and parse_agent_spec("model:runs/x.zip") is None
    assert parse_agent_spec("wizard") is None
    for bad, message in [
        ("a.py:A,depth", "key=value"),
        ("a.py:A,x=1,x=2", "given twice"),
        ("not a module:A", "neither a .py file nor a module name"),
    ]:
        with pytest.raises(AgentLoadError, match=message):
            parse_agent_spec(bad)


def test_file_agent_gets_its_arguments_and_the_rules(agent_file):
    rules = load_rules("yacht")
    agent = make_agent(f"{agent_file}:FirstLegal,offset=1,label=x", rules)
    assert isinstance(agent, ImportedAgent) and agent.name == "FirstLegal(offset=1, label='x')"
    assert agent.agent.rules == rules and agent.offset == 1 and agent.label == "x"
    mask = np.zeros(32 + rules.n_boxes, dtype=np.int8)
    mask[[3, 40, 41]] = 1
    assert agent.act(None, mask) == 40
    agent.reset()
    assert agent.agent.games == 1
    # a relative path works too, and the file is imported once per process
    relative = os.path.relpath(agent_file)
    again = make_agent(f"{relative}:FirstLegal", "yacht")
    assert type(again.agent) is type(agent.agent)


def test_factory_object_and_module_agents(agent_file, monkeypatch):
    assert make_agent(f"{agent_file}:make,offset=2", "yacht").agent.offset == 2
    assert isinstance(make_agent(f"{agent_file}:AGENT", "yacht").agent, object)
    seeded = make_agent(f"{agent_file}:Seeded", "yacht", seed=7)
    assert seeded.agent.seed_given == 7  # the caller's seed reaches a `seed` parameter
    assert make_agent(f"{agent_file}:Seeded,seed=3", "yacht", seed=7).agent.seed_given == 3  # the spec wins
    package = agent_file.parent.parent / "course_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agents.py").write_text(AGENT_SOURCE)
    monkeypatch.syspath_prepend(str(package.parent))
    agent = make_agent("course_pkg.agents:FirstLegal,offset=1", "yacht")
    assert agent.offset == 1 and agent.name == "FirstLegal(offset=1)"


@pytest.mark.parametrize(
    "attr, message",
    [
        ("Missing", "has no 'Missing'$"),  # nothing close: no suggestion
        ("FirstLegl", "has no 'FirstLegl' \\(did you mean 'FirstLegal'\\?\\)"),
        ("NoAct", "no act\\(observation, action_mask\\) method"),
        ("Broken,depth=3", "Broken\\(depth=3\\) failed: RuntimeError: depth must be even"),
        ("FirstLegal,colour=3", "failed: TypeError"),
        ("AGENT,x=1", "takes no key=value arguments"),
    ],
)
def test_load_errors_name_the_problem(agent_file, attr, message):
    with pytest.raises(AgentLoadError, match=message):
        make_agent(f"{agent_file}:{attr}", "yacht")


def test_a_constructor_parameter_the_grader_does_not_fill_is_named_with_what_it_passes(tmp_path):
    """``def __init__(self, r)``: the rules are passed by name, as ``rules``; the message said only that ``r`` was
    missing, and the parameter's name was written nowhere a student reads."""
    mine = tmp_path / "named_r.py"
    mine.write_text(
        "class Player:\n    def __init__(self, r):\n        self.r = r\n\n    def act(self, o, m):\n        return 32\n"
    )
    with pytest.raises(AgentLoadError) as error:
        make_agent(f"{mine}:Player", "yacht")
    message = str(error.value)
    assert "missing 1 required positional argument: 'r'" in message and "\n" not in message
    assert "given rules (the Rules played) by name" in message and "'r' got nothing" in message
    assert "def __init__(self, rules)" in message and "seed" not in message
    with pytest.raises(AgentLoadError, match="given rules \\(the Rules played\\) and seed \\(an int\\) by name"):
        make_agent(f"{mine}:Player", "yacht", seed=3)
    with pytest.raises(AgentLoadError) as error:  # an unknown keyword: nothing went unfilled, no hint
        make_agent(f"{mine}:Player,r=1,colour=3", "yacht")
    assert "unexpected keyword argument 'colour'" in str(error.value) and "got nothing" not in str(error.value)


def test_file_and_module_errors(tmp_path):
    with pytest.raises(AgentLoadError, match="no such file"):
        make_agent(f"{tmp_path}/nothing.py:A", "yacht")
    with pytest.raises(AgentLoadError, match="not a Python file"):
        make_agent(f"{tmp_path}/agent.txt:A", "yacht")
    with pytest.raises(AgentLoadError, match="no module named 'no_such_course_module'"):
        make_agent("no_such_course_module.sub:A", "yacht")
    broken = tmp_path / "broken_agent.py"
    broken.write_text("import no_such_dependency_xyz\n")
    with pytest.raises(AgentLoadError, match="importing .* failed: ModuleNotFoundError"):
        make_agent(f"{broken}:A", "yacht")
    syntax = tmp_path / "syntax_agent.py"
    syntax.write_text("def act(:\n")
    with pytest.raises(AgentLoadError, match="SyntaxError") as error:
        make_agent(f"{syntax}:A", "yacht")
    assert str(error.value).startswith(f"importing {syntax} failed: SyntaxError")  # the file's error, not A's
    assert "syntax_agent" not in " ".join(sys.modules)  # a failed import leaves no half module behind


def test_a_file_python_cannot_load_is_refused(tmp_path, monkeypatch):
    import importlib.util

    path = tmp_path / "unloadable_agent.py"
    path.write_text("class A:\n    pass\n")
    monkeypatch.setattr(importlib.util, "spec_from_file_location", lambda *args, **kwargs: None)
    with pytest.raises(AgentLoadError, match="Python cannot load .*unloadable_agent.py as a module"):
        make_agent(f"{path}:A", "yacht")
    assert "unloadable_agent" not in " ".join(sys.modules)


def test_malformed_actions_are_refused():
    assert as_action(np.int64(3)) == 3 and as_action(np.array(4)) == 4
    for bad in ["3", 3.0, None, True, np.array([1, 2]), np.float32(2)]:
        with pytest.raises(TypeError, match="not an action index"):
            as_action(bad, "agent 'x'")


def test_benchmark_plays_a_file_agent_like_the_same_object(agent_file):
    spec = f"{agent_file}:FirstLegal,offset=1"
    by_spec = benchmark("yacht", [spec, "greedy"], games=12, seed=4)
    by_object = benchmark("yacht", [("mine", make_agent(spec, "yacht"))], games=12, seed=4)
    mine = by_spec.data["agents"]["FirstLegal(offset=1)"]
    assert np.array_equal(by_spec.scores["FirstLegal(offset=1)"], by_object.scores["mine"])
    assert mine["regret_mean"] == pytest.approx(by_object.data["agents"]["mine"]["regret_mean"])
    assert mine["regret_mean"] > 0 and mine["games"] == 12 and mine["illegal_actions"] == 0


def test_benchmark_accepts_minimal_objects_and_workers(agent_file):
    """An object with only ``act`` plays; worker processes rebuild a file agent from its spec."""
    spec = f"{agent_file}:Minimal"
    minimal = make_agent(spec, "yacht").agent
    one = benchmark("yacht", [("minimal", minimal)], games=8, seed=1, regret=False)
    two = benchmark("yacht", [spec], games=8, seed=1, workers=2, regret=False)
    assert np.array_equal(one.scores["minimal"], two.scores["Minimal"])


def test_benchmark_refuses_a_bad_agent_before_playing(agent_file):
    with pytest.raises(ValueError, match="has no 'Nope'"):
        benchmark("yacht", ["greedy", f"{agent_file}:Nope"], games=100_000)  # fails at once, plays nothing
    with pytest.raises(ValueError, match="FILE.py:NAME or MODULE:NAME"):
        benchmark("yacht", ["wizard"], games=1)


def test_agent_names_of_custom_agents(tmp_path):
    assert agent_names(["a.py:MyAgent", "greedy"]) == ["MyAgent", "greedy"]
    assert agent_names(["a/x.py:MyAgent", "b/x.py:MyAgent"]) == ["a/x.py:MyAgent", "b/x.py:MyAgent"]
    with pytest.raises(ValueError, match="distinct names"):
        agent_names(["a.py:MyAgent", "a.py:MyAgent"])


def test_bench_cli_with_a_file_agent(agent_file):
    from dice_poker_env.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["bench", "yacht", "--agents", "greedy", f"{agent_file}:FirstLegal,offset=1", "--games", "5", "--json"]
        )
    assert code == 0
    data = json.loads(out.getvalue())
    assert set(data["agents"]) == {"greedy", "FirstLegal(offset=1)"}


def test_bench_cli_bad_custom_agent_is_a_one_line_error(agent_file, capsys):
    from dice_poker_env.cli import main

    assert main(["bench", "yacht", "--agents", f"{agent_file}:Broken,depth=1", "--games", "5"]) == 2
    err = capsys.readouterr().err
    assert "Broken(depth=1) failed: RuntimeError: depth must be even" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["evaluate", "bench", "match"])
def test_an_exception_in_an_agents_act_is_one_line_naming_agent_method_exception_and_line(tmp_path, capsys, command):
    from dice_poker_env.cli import main

    (tmp_path / "keyerr.py").write_text(
        "class Lookup:\n    def __init__(self, rules):\n        self.d = {}\n\n"
        "    def act(self, observation, action_mask):\n        return self.d['rolls']\n"
    )
    spec = f"{tmp_path / 'keyerr.py'}:Lookup"
    argv = {
        "evaluate": ["evaluate", "yacht", "--agent", spec, "--games", "1"],
        "bench": ["bench", "yacht", "--agents", spec, "--games", "2"],
        "match": ["match", "yacht", "--agents", spec, "greedy", "--games", "2"],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        f"dice-poker {command}: error: agent Lookup: act raised KeyError: 'rolls' (keyerr.py, line 6)"
    )
    assert "Traceback" not in err


def test_play_against_a_file_agent(agent_file):
    pytest.importorskip("rich")
    pytest.importorskip("pettingzoo")
    script = (
        "\n".join(["s on", "s tw", "s th", "s fours", "s fi", "s si", "s fu", "s four of", "s l", "s b", "s c", "s y"])
        + "\n"
    )
    # wide enough that the opponent's name (the agent file's path: long under pytest-xdist's folders) never wraps
    env = dict(os.environ, PYTHONIOENCODING="utf-8", COLUMNS="400")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dice_poker_env",
            "play",
            "yacht",
            "--opponents",
            f"{agent_file}:FirstLegal",
            "--seed",
            "2",
            "--no-grade",
        ],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        encoding="utf-8",
    )
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stdout  # the agent played every turn itself
    assert "FirstLegal" in result.stdout


def test_train_config_accepts_custom_bench_agents(agent_file, monkeypatch):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "train.py"
    loader = importlib.util.spec_from_file_location("train_script_custom_agents", path)
    train = importlib.util.module_from_spec(loader)
    monkeypatch.setitem(sys.modules, "train_script_custom_agents", train)  # dataclasses look it up there
    loader.loader.exec_module(train)
    train.make_config({"bench_agents": ["greedy", f"{agent_file}:FirstLegal"]})
    with pytest.raises(ValueError, match="bench_agents: agent .* has no 'Nope'"):
        train.make_config({"bench_agents": [f"{agent_file}:Nope"]})


@pytest.mark.parametrize("raised", [ValueError("x"), SystemExit(3), GeneratorExit()], ids=lambda e: type(e).__name__)
def test_one_line_survives_an_exception_whose_message_raises_anything_but_ctrl_c(raised):
    """An agent's exception whose ``__str__`` raises (even a ``SystemExit``) is one line; a Ctrl-C goes through."""
    from agents.players.registry import one_line

    class Mute(Exception):
        def __str__(self) -> str:
            raise raised

    assert one_line(Mute()) == "Mute: <its message raised>"

    class Interrupted(Exception):
        def __str__(self) -> str:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        one_line(Interrupted())


@pytest.mark.parametrize(
    "methods, message",
    [
        ("def act(self, observation):\n        return 0", "act(observation) cannot be called as act(observation, "),
        ("def act(self, o, m, extra):\n        return 0", "act(o, m, extra) cannot be called as act(observation, "),
        (
            "def act(self, o, m):\n        return 0\n    def seed(self):\n        pass",
            "seed() cannot be called as seed",
        ),
        ("def act(self, o, m):\n        return 0\n    def reset(self, o):\n        pass", "reset(o) cannot be called"),
    ],
)
def test_a_method_the_games_cannot_call_is_a_load_error_that_says_how_it_is_called(tmp_path, methods, message):
    """``def act(self, observation)`` failed at every decision with ``act() takes 2 positional arguments but 3 were
    given``, which does not say what the games pass; it is refused at load, naming the call."""
    path = tmp_path / "student.py"
    path.write_text(f"class Mine:\n    {methods}\n")
    with pytest.raises(AgentLoadError, match=re.escape(message)):
        make_agent(f"{path}:Mine", "yacht")


def test_methods_that_take_the_games_arguments_in_any_form_load(tmp_path):
    path = tmp_path / "student.py"
    path.write_text(
        "class Mine:\n    def act(self, *args):\n        return 0\n    def seed(self, seed=None):\n        pass\n"
        "    def reset(self, **kwargs):\n        pass\n"
    )
    assert make_agent(f"{path}:Mine", "yacht").name
