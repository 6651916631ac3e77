"""The ``dice-poker`` command line: core commands, plugged-in commands, the package boundary."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dice_poker_env import cli

ROOT = Path(__file__).resolve().parents[1]

HELLO = '''
"""A plugged-in test command."""
import sys

HELP = "say hello from a plugin"


def add_arguments(parser):
    parser.add_argument("--name", default="world")


def run(args):
    print(f"hello {args.name}")
    return 3
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Register plugin commands by entry point: ``plugins({"name": "module:attr", ...}, modules={name: source})``."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def register(entry_points: dict[str, str], modules: dict[str, str] | None = None) -> None:
        for name, source in (modules or {}).items():
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
            sys.modules.pop(name, None)
        found = [
            importlib.metadata.EntryPoint(name, value, cli.ENTRY_POINT_GROUP) for name, value in entry_points.items()
        ]
        monkeypatch.setattr(cli, "plugin_entry_points", lambda: found)

    yield register
    for name in [m for m in sys.modules if m.startswith("plugin_")]:
        sys.modules.pop(name)


def test_a_plugged_in_command_runs_with_its_own_arguments(plugins, capsys):
    plugins({"hello": "plugin_hello"}, {"plugin_hello": HELLO})
    assert cli.main(["hello", "--name", "dice"]) == 3
    assert capsys.readouterr().out == "hello dice\n"


def test_help_lists_core_and_plugged_in_commands_with_their_descriptions(plugins, capsys):
    plugins({"hello": "plugin_hello"}, {"plugin_hello": HELLO})
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for name, text in [
        ("solve", "solve a ruleset exactly"),
        ("advise", "every legal action of a position"),
        ("hello", "say hello from a plugin"),
    ]:
        assert f"{name} {text}" in out


def test_only_the_command_being_run_is_imported(plugins, capsys):
    plugins({"hello": "plugin_hello", "other": "plugin_other"}, {"plugin_hello": HELLO, "plugin_other": HELLO})
    assert cli.main(["hello"]) == 3
    assert "plugin_hello" in sys.modules and "plugin_other" not in sys.modules


def test_a_plugin_cannot_replace_a_core_command(plugins, capsys):
    plugins({"solve": "plugin_hello"}, {"plugin_hello": HELLO})
    assert cli.command_sources()["solve"].target == "dice_poker_env.cli.solve"


@pytest.mark.parametrize(
    "target, modules, reason",
    [
        ("plugin_missing.commands", {}, "cannot import plugin_missing.commands (ModuleNotFoundError"),
        ("plugin_broken", {"plugin_broken": "raise RuntimeError('half written')"}, "RuntimeError: half written"),
        (
            "plugin_bare",
            {"plugin_bare": "HELP = 'no run'"},
            "is not a dice-poker command (it has no add_arguments, run)",
        ),
    ],
)
def test_an_unusable_plugin_is_listed_as_unavailable_and_refused_in_one_line(plugins, capsys, target, modules, reason):
    plugins({"broken": target, "hello": "plugin_hello"}, {**modules, "plugin_hello": HELLO})
    assert cli.main(["broken", "--anything"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("dice-poker broken: error: ") and reason in err
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "(unavailable: " in capsys.readouterr().out
    assert cli.main(["hello"]) == 3  # the other commands still work


def test_a_shadowed_agents_package_is_named_with_the_remedy(monkeypatch, capsys):
    """Another distribution installing a top-level ``agents`` package hides this project's commands."""
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: [])
    monkeypatch.setattr(cli, "BUILTIN_COMMANDS", {})
    source = cli.CommandSource("bench", "plugin_agents_shadowed.commands.bench", "dice-poker-env")
    monkeypatch.setattr(cli, "command_sources", lambda: {"bench": source})
    monkeypatch.setattr(
        importlib.metadata,
        "packages_distributions",
        lambda: {"plugin_agents_shadowed": ["openai-agents", "dice_poker_env"]},
    )
    assert cli.main(["bench", "yacht"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert (
        "the top-level package 'plugin_agents_shadowed' is also installed by openai-agents, and the two "
        "overwrite each other: install dice-poker-env in a virtual environment of its own"
    ) in err


def test_entry_points_are_found_through_installed_metadata(tmp_path):
    """End to end, no monkeypatching: a distribution's ``entry_points.txt`` on the path adds a command."""
    (tmp_path / "plugin_hello.py").write_text(HELLO)
    info = tmp_path / "dice_poker_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dice-poker-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{cli.ENTRY_POINT_GROUP}]\nhello = plugin_hello\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-m", "dice_poker_env.cli", "hello", "--name", "metadata"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "hello metadata\n", "")
    listing = subprocess.run(
        [sys.executable, "-m", "dice_poker_env.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert "say hello from a plugin" in listing.stdout


def test_the_installed_commands_match_pyproject():
    """``bench`` and ``play`` come from this project's own entry points: a stale install is named as such."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the core's tomli
        import tomli as tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][cli.ENTRY_POINT_GROUP]
    installed = {ep.name: ep.value for ep in cli.plugin_entry_points()}
    assert {"bench", "play"} <= set(declared)
    assert {name: installed.get(name) for name in declared} == declared, (
        "the installed dice-poker-env metadata predates pyproject.toml's entry points: run pip install -e ."
    )


def test_the_core_command_line_never_imports_agents():
    """Running a core command, and listing every command, leaves ``agents`` unimported by the core itself."""
    code = (
        "import sys, contextlib, io\n"
        "from dice_poker_env.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['solve', 'yacht', '--json', '--no-progress']) == 0\n"
        "print('agents' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "False", result.stderr
    sources = [
        p
        for p in (ROOT / "dice_poker_env").rglob("*.py")
        if "import agents" in p.read_text() or "from agents" in p.read_text()
    ]
    assert sources == []


TINY_WITH_OPTIONS = """name = "tiny"
turns = 3
boxes = [
  { name = "ones", kind = "face_sum", face = 1 },
  { name = "sixes", kind = "face_sum", face = 6 },
  { name = "chance", kind = "chance" },
]
[options.turns]
default = 3
values = { 3 = { "turns" = 3 }, 2 = { "turns" = 2 } }
[options.strict]
default = false
values = { false = { "upper_bonus.threshold" = 10 }, true = { "upper_bonus.threshold" = 11 } }
[upper_bonus]
threshold = 10
points = 5
"""


def test_rules_options_are_parsed_once_for_every_command(tmp_path, capsys):
    """``--option NAME=VALUE`` (or ``-o``): text the ruleset converts; malformed ones are one-line errors."""
    from dice_poker_env.cli.rules_arguments import parse_rules_options

    assert parse_rules_options(["joker=free", " turns = 13", "turns=13", "empty="]) == {
        "joker": "free",
        "turns": "13",
        "empty": "",
    }
    with pytest.raises(ValueError, match="--option turns is given twice: turns=13 and turns=15"):
        parse_rules_options(["turns=13", "turns=15"])  # which one was meant? (the last one won, silently)
    for bad in ("joker", "=free"):
        with pytest.raises(ValueError, match=f"--option expects NAME=VALUE, got {bad!r}"):
            parse_rules_options([bad])
    rules_file = tmp_path / "tiny.toml"
    rules_file.write_text(TINY_WITH_OPTIONS)
    assert (
        cli.main(["solve", str(rules_file), "-o", "turns=2", "--option", "strict=true", "--json", "--no-progress"]) == 0
    )
    assert '"options": {"turns": 2, "strict": true}' in capsys.readouterr().out  # converted to the options' types
    assert cli.main(["solve", "yacht", "--option", "joker"]) == 2
    assert capsys.readouterr().err == "dice-poker solve: error: --option expects NAME=VALUE, got 'joker'\n"
    assert cli.main(["solve", "yacht", "--workers", "100000"]) == 2  # refused before forking that many
    assert "--workers must be an integer from 1 to 256, got 100000" in capsys.readouterr().err
    for command in (["bench", "yacht"], ["match", "yacht", "--agents", "greedy", "greedy"], ["grade", "x.py:A"]):
        with pytest.raises(SystemExit) as stop:  # an empty --out once meant "no output", silently
            cli.main([*command, "--out", ""])
        assert stop.value.code == 2 and "argument --out: must not be empty" in capsys.readouterr().err
    assert cli.main(["advise", str(rules_file), "-o", "turns=4", "--dice", "1", "1", "1", "1", "1"]) == 2
    assert "option 'turns' must be one of [3, 2], got 4" in capsys.readouterr().err


def test_a_machine_is_described_by_its_cpu_model_and_vector_extensions(tmp_path):
    """Figures record the CPU model and the vector extensions its float kernels use (results can differ between
    models), not only ``x86_64``; Arm's ``/proc/cpuinfo`` spells them otherwise; without the file, the platform."""
    import os

    from dice_poker_env.cli import machine_description, usable_cpus

    intel = tmp_path / "intel"
    intel.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse avx2 amx_bf16 avx512f\n"
        "processor\t: 1\nmodel name\t: ignored\nflags\t\t: none\n"
    )
    cpus = usable_cpus()
    assert 1 <= cpus <= (os.cpu_count() or cpus)
    assert machine_description(str(intel)) == f"Intel(R) Xeon(R) Processor (avx2, avx512f, amx_bf16), {cpus} CPUs"
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd sve\nCPU part\t: 0xd0c\n")
    assert machine_description(str(arm)).endswith(f" (asimd, sve), {cpus} CPUs")
    plain = tmp_path / "plain"
    plain.write_text("model name\t: Some CPU\n")
    assert machine_description(str(plain)) == f"Some CPU, {cpus} CPUs"
    assert machine_description(str(tmp_path / "absent")).endswith(f", {cpus} CPUs")


def test_rules_shows_a_ruleset_box_by_box_as_the_engine_reads_it(tmp_path, capsys):
    """``dice-poker rules``: the shipped rulesets; one of them (or a file, with options) box by box, each box's range
    the engine's own (its possible scores), the bonus and the options as chosen; a bad file is the loader's one
    line, status 2."""
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.rules import RULESET_NAMES, load_rules

    assert cli.main(["rules"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in listed[: len(RULESET_NAMES)]] == [
        load_rules(name).title.split(" (")[0] for name in RULESET_NAMES
    ]
    assert cli.main(["rules", "yahtzee", "-o", "joker=free", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    rules = load_rules("yahtzee", joker="free")
    tables = compile_rules(rules)
    assert shown["fingerprint"] == rules.fingerprint and shown["options"]["joker"]["value"] == "free"
    assert [b["name"] for b in shown["boxes"]] == list(rules.box_names)
    assert [(b["min"], b["max"]) for b in shown["boxes"]] == [
        (int(s.min()), int(s.max())) for s in tables.possible_scores
    ]
    assert shown["boxes"][9]["scores"] == "a straight, 1234 or 2345 or 3456: 30 points"
    assert shown["five_of_a_kind"]["joker"] == "free" and shown["upper_bonus"]["threshold"] == 63
    rules_file = tmp_path / "tiny.toml"
    rules_file.write_text(TINY_WITH_OPTIONS)
    assert cli.main(["rules", str(rules_file), "-o", "turns=2"]) == 0
    out = capsys.readouterr().out
    assert "a game is 2 turns: 1 box(es) stay open" in out and "option turns = 2 (of 3, 2; default 3)" in out
    assert "sixes   upper     0..30    the sum of the 6s" in out and "solving it exactly: tiny (3 boxes)" in out
    rules_file.write_text(TINY_WITH_OPTIONS.replace("face = 6", "face = 7"))
    for options in ([], ["-o", "turns=2"]):  # an error of the file itself names no option (it named turns = 2)
        assert cli.main(["rules", str(rules_file), *options]) == 2
        assert capsys.readouterr().err == (
            f"dice-poker rules: error: {rules_file}: field 'boxes[1].face': expected an integer 1..6, got 7\n"
        )


def test_the_rules_format_page_shows_what_dice_poker_rules_prints(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "rules-format.md").read_text()
    block = page.split("$ dice-poker rules examples/rules/mini_yacht.toml\n", 1)[1].split("```", 1)[0]
    assert cli.main(["rules", "examples/rules/mini_yacht.toml"]) == 0
    assert capsys.readouterr().out == block


def test_arguments_a_command_did_not_take_are_refused_by_that_command(capsys):
    """Extra arguments were refused by the top-level parser ("usage: dice-poker [-h] COMMAND ...", "dice-poker: error"),
    and a sixth die given to ``advise --dice`` was an "unrecognized argument: 6"."""
    from dice_poker_env.cli import main

    for argv, message in (
        (["advise", "yacht", "--dice", "1", "2", "3", "4", "5", "6"], "--dice takes the five dice, got 6: 1 2 3 4 5 6"),
        (["advise", "--dice", "1", "2", "3", "4", "5", "6", "yacht"], "--dice takes the five dice, got 6: 1 2 3 4 5 6"),
        (["advise", "yacht", "--dice", "1", "2", "3", "4", "5", "--bogus"], "unrecognized arguments: --bogus"),
        (["solve", "yacht", "extra"], "unrecognized arguments: extra"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        command = argv[0]
        assert err.startswith(f"usage: dice-poker {command} ")
        assert err.strip().splitlines()[-1] == f"dice-poker {command}: error: {message}", err
