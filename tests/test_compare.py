"""benchmarks/compare.py aggregates a submission's `dice-poker evaluate --json` files as the leaderboard does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("rliable")

from agents.evaluation.protocol import eval_set_id, evaluate, versions  # noqa: E402
from benchmarks import compare, leaderboard  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402


def result(ruleset: str, percent: float, **changes) -> dict:
    """What `dice-poker evaluate RULESET --json` writes, with the fields compare.py reads."""
    rules = load_rules(ruleset)
    return {
        "agent": "model:x.npz",
        "track": "raw",
        "rules": ruleset,
        "rules_options": dict(rules.options),
        "eval_set": eval_set_id(rules),
        "games": 10_000,
        "luck_free_percent": percent,
        "median": 200.0,
        **versions(rules),
        **changes,
    }


def write(folder: Path, results: list[dict]) -> list[str]:
    paths = []
    for item in results:
        path = folder / f"r{len(list(folder.glob('r*.json')))}.json"  # a new file each time
        path.write_text(json.dumps(item))
        paths.append(str(path))
    return paths


def baselines(folder: Path) -> str:
    rows = [
        {"suite": suite, "track": "raw", "algorithm": suite, "budget": 10_000_000, "ruleset": ruleset, "seed": seed}
        | {"luck_free_percent": base + 0.1 * seed + (ruleset == "yacht"), "median": 200.0}
        | {key: versions(load_rules(ruleset))[key] for key in compare.COMPARED_ON}
        for suite, base in (("raw_ppo_10m", 90.0), ("raw_a2c_10m", 70.0))
        for ruleset in ("yahtzee", "yacht")
        for seed in range(5)  # the fewest seeds with an interval and a probability of improvement
    ]
    rows.append(rows[0] | {"suite": "raw_ppo_1m", "budget": 1_000_000})  # another budget: not compared
    path = folder / "runs.json"
    path.write_text(json.dumps(rows))
    return str(path)


def test_a_real_evaluation_is_accepted_and_gives_its_own_percent(tmp_path, capsys):
    real = evaluate("yacht", "greedy")
    twice = write(tmp_path, [real | {"seed": 0}, real | {"seed": 1}])
    with pytest.raises(SystemExit):  # the same agent under two seeds: move for move the same games
        compare.main(["greedy", "--budget", "offline", "--runs", baselines(tmp_path), *twice])
    assert "the same games, move for move, as" in capsys.readouterr().err
    files = write(tmp_path, [real | {"seed": 0}, real | {"seed": 1, "mean": real["mean"] + 0.5}])
    assert (
        compare.main(["greedy", "--budget", "offline", "--runs", baselines(tmp_path), "--reps", "50", "--json", *files])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["track"] == "rules" and report["aggregate"][0]["runs"] == 2
    assert report["aggregate"][0]["iqm"] == pytest.approx(real["luck_free_percent"])
    assert report["versus"] == []  # no baseline trained offline in the rows given


def test_aggregates_like_the_leaderboard_and_compares_at_the_same_budget(tmp_path, capsys):
    mine = [result(r, 80.0 + k + (r == "yacht"), seed=k) for r in ("yahtzee", "yacht") for k in range(5)]
    files = write(tmp_path, mine)
    assert (
        compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "200", "--json", *files]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    rows = compare.submission_rows([Path(f) for f in files], "mine", 10_000_000, None)
    assert report["aggregate"] == json.loads(json.dumps(leaderboard.aggregate(rows, 200)))
    by = {entry["suite"]: entry for entry in report["versus"]}
    assert set(by) == {"raw_ppo_10m", "raw_a2c_10m"}  # not the 1M suite
    assert by["raw_a2c_10m"]["p_better"] == 1.0 and by["raw_ppo_10m"]["p_better"] == 0.0
    assert by["raw_ppo_10m"]["rulesets"] == ["yahtzee", "yacht"] and by["raw_ppo_10m"]["runs"] == [10, 10]
    assert by["raw_ppo_10m"]["iqm"][1] == pytest.approx(90.7)  # the middle six of ten
    assert compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "200", *files]) == 0
    text = capsys.readouterr()
    assert "| yahtzee | 5 |" in text.out and "| raw_a2c_10m* | raw | yahtzee, yacht | 10, 10 |" in text.out
    assert "another track" not in text.out  # raw against raw
    (tmp_path / "rules").mkdir()
    rules_files = write(tmp_path / "rules", [dict(r, track="rules") for r in mine])
    assert compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "50", *rules_files]) == 0
    text = capsys.readouterr()
    assert "| raw_a2c_10m* | raw (another track) |" in text.out and "a claim compares within one track" in text.out
    assert "5 seeds on yahtzee; the protocol asks for at least 10 at 10M" in text.err
    pytest.importorskip("matplotlib")
    figure = tmp_path / "profiles.png"
    assert (
        compare.main(
            ["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "50", "--plot", str(figure), *files]
        )
        == 0
    )
    assert figure.read_bytes().startswith(b"\x89PNG") and f"wrote {figure}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare.main(["mine", "--budget", "10M", "--plot", str(tmp_path / "no" / "p.png"), *files])
    assert "--plot" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"games": 500, "eval_set": "dice-poker-eval-v1/yahtzee/first-500"}, "the protocol uses all 10,000"),
        ({"rules_fingerprint": "0123456789abcdef", "rules_options": {"joker": "free"}}, "other rules than"),
        ({"track": "rules"}, "several tracks"),
        ({"luck_free_percent": 101.0}, "luck_free_percent must be a number of at most 100"),
        ({"seed": 0}, "a second result for yahtzee seed 0 (the first: "),
        ({"seed": "1"}, "seed must be a training seed in [0, 2**32), got '1'"),
        ({"seed": None, "x": 1}, "1 of the 2 files have a seed"),
        ({"seed": 1, "agent_sha256": "ab" * 32}, "the same agent as"),
        ({"rules": "no_such_rules"}, "no_such_rules"),
        ({"seed": 1, "library_version": "0.0.1"}, "measured on several library_versions (0.0.1, "),
        ({"seed": 1, "observation_layout_version": 0}, "measured on several observation_layout_versions"),
        ({"seed": 1, "env_id": "DicePoker/Yahtzee-v0"}, "measured on several env_ids"),
        ({"seed": 1, "luck_free_percent": 90.0}, "the same games, move for move, as"),
        ({"seed": 1, "eval_set": "dice-poker-eval-v1/custom:yacht@0123456789abcdef"}, "a rules file's evaluation set"),
        ({"seed": 1, "rules": "dice_poker_env/rules/data/yacht.toml"}, "rules must be one of the shipped rulesets"),
        ({"seed": 1, "track": "<b>hacked</b>"}, "track must be one of raw, rules, solver"),
        ({"seed": 1, "median": "abc"}, "median must be a number, got 'abc'"),
        ({"seed": 1, "mean": {}}, "mean must be a number or null"),
        ({"seed": 1, "luck_free_percent_ci95": "x"}, "luck_free_percent_ci95 must be a number or null"),
        ({"seed": 1, "isolated": "yes"}, "isolated must be true or false, got 'yes'"),
        ({"seed": 1, "hardware": 7}, "hardware must be a string or null, got '7'"),
        ({"seed": 1, "solver_imports": "all"}, "solver_imports must be a list of module names or null"),
        ({"seed": 1, "failed_games": {"timeout": -3}}, "failed_games must map failure kinds to game counts"),
        ({"seed": -4}, "seed must be a training seed in [0, 2**32), got '-4'"),
        ({"seed": 2**70}, "seed must be a training seed in [0, 2**32)"),
        ({"seed": 1, "median": float("inf")}, "median must be a finite number, got inf"),
        (
            {"seed": 1, "mean": 1e9},
            "mean must lie within the bounds of a final score of yahtzee (0 to 1675), got 1e+09",
        ),
        (
            {"seed": 1, "median": -2},
            "median must lie within the bounds of a final score of yahtzee (0 to 1675), got -2",
        ),
        ({"seed": 1, "luck_free_percent_ci95": -0.5}, "luck_free_percent_ci95 must be a finite number of at least 0"),
        ({"seed": 1, "agent_sha256": "121212"}, "agent_sha256 must be a SHA-256 digest (64 hex digits), got '121212'"),
    ],
)
def test_a_file_off_the_protocol_is_refused_in_one_line(tmp_path, capsys, change, message):
    first = result("yahtzee", 90.0, seed=0, agent_sha256="ab" * 32)
    files = write(tmp_path, [first, result("yahtzee", 91.0) | change])
    with pytest.raises(SystemExit) as stop:
        compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), *files])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_bad_files_names_and_tracks_are_refused(tmp_path, capsys):
    runs = baselines(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    no_track = write(tmp_path, [result("yahtzee", 90.0, track=None)])
    cases = [
        (["mine", "--budget", "10M", "--runs", runs, str(tmp_path / "bad.json")], "not a readable JSON file"),
        (["mine", "--budget", "10M", "--runs", runs, str(tmp_path / "list.json")], "not the output of"),
        (["mine", "--budget", "10M", "--runs", runs, *no_track], "say which with --track"),
        (
            [
                "mine",
                "--budget",
                "10M",
                "--track",
                "raw",
                "--runs",
                runs,
                *write(tmp_path, [result("yahtzee", 90.0, track="rules")]),
            ],
            "declares the rules track, not raw",
        ),
        (
            ["raw_ppo_10m", "--budget", "10M", "--runs", runs, *no_track[:1], "--track", "raw"],
            "a recorded suite's name",
        ),
        (["mine", "--budget", "5M", "--runs", runs, *no_track], "invalid choice"),
        # the baselines' file, the bootstrap and the plot are checked before any work
        (["mine", "--budget", "10M", "--track", "raw", "--runs", str(tmp_path / "list.json"), *no_track], "not the"),
        (["mine", "--budget", "10M", "--track", "raw", "--runs", str(tmp_path / "binary.json"), *no_track], "--runs"),
        (["mine", "--budget", "10M", "--runs", runs, "--reps", "99999999999", *no_track], "beyond the limit"),
        (["mine", "--budget", "10M", "--runs", runs, "--plot", str(tmp_path / "p.txt"), *no_track], "name a .png"),
        (["mine", "--budget", "10M", "--runs", runs, "--plot", str(tmp_path / "dir.png"), *no_track], "is a folder"),
        (["mine", "--budget", "10M", "--runs", runs, "--plot", str(tmp_path / "old.png"), *no_track], "exists"),
        # a policy that trained past the budget (its file records its steps)
        (
            [
                "mine",
                "--budget",
                "10M",
                "--runs",
                runs,
                *write(tmp_path, [result("yahtzee", 90.0, timesteps=10_000_001)]),
            ],
            "trained 10,000,001 steps, past the budget of 10,000,000",
        ),
    ]
    (tmp_path / "binary.json").write_bytes(b"\x9d\x00\xff")
    (tmp_path / "old.png").write_bytes(b"kept")
    (tmp_path / "dir.png").mkdir()
    for argv, message in cases:
        with pytest.raises(SystemExit) as stop:
            compare.main(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err, argv
    assert compare.main(["mine", "--budget", "10M", "--track", "raw", "--runs", runs, "--reps", "50", *no_track]) == 0
    assert (tmp_path / "old.png").read_bytes() == b"kept"
    raw_file = write(tmp_path, [result("yahtzee", 90.0, track="raw")])  # a raw agent entered in the rules track
    assert compare.main(["mine", "--budget", "10M", "--track", "rules", "--runs", runs, "--reps", "50", *raw_file]) == 0


def test_every_run_is_listed_with_what_it_was_measured_on_and_gaps_are_said(tmp_path, capsys):
    """The report lists each run (file, seed, percent, agent_sha256) and the versions, accepts a percent below 0
    (an agent worse than losing the whole optimal score), marks a baseline short of the protocol's seeds, and says
    which runs the row across rulesets leaves out (no crash when no seed is in every ruleset)."""
    mine = [result("yahtzee", 80.0 + k, seed=k, agent_sha256=f"{k:064x}") for k in range(3)]
    mine.append(result("yacht", -7.5, seed=9, agent_sha256="f" * 64))
    files = write(tmp_path, mine)
    assert compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "100", *files]) == 0
    out = capsys.readouterr().out
    assert f"| {Path(files[0]).name} | yahtzee | 0 | 80.00 | - | {0:064x} |" in out  # (isolated: not said)
    assert f"| {Path(files[3]).name} | yacht | 9 | -7.50 | - | {'f' * 64} |" in out
    assert (
        "* rules_fingerprint: "
        + ", ".join(sorted([load_rules("yacht").fingerprint, load_rules("yahtzee").fingerprint]))
        in out
    )
    assert "* note: across rulesets: 0 of your 4 runs" in out and "all (" not in out
    assert "* isolated:" not in out  # (a column of the runs' table)
    assert "* note: raw_ppo_10m: no seed in every one of yahtzee, yacht" in out
    assert compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "100", *files[:3]]) == 0
    out = capsys.readouterr().out
    assert "| raw_ppo_10m* | raw | yahtzee | 3, 5 | 81.00, 90.20 | - | - |" in out  # 5 seeds of the protocol's 10
    assert "| yahtzee | 3 | 81.00 | - |" in out  # 3 seeds: too few for an interval or a comparison


def test_a_hand_written_file_without_its_versions_is_refused(tmp_path, capsys):
    bare = {k: v for k, v in result("yahtzee", 90.0, seed=0).items() if k != "env_id"}
    with pytest.raises(SystemExit):
        compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), *write(tmp_path, [bare])])
    assert "not the output of `dice-poker evaluate --json` (it needs" in capsys.readouterr().err


def test_baselines_measured_on_another_env_version_are_not_compared(tmp_path, capsys):
    mine = [result(r, 80.0 + k, seed=k) for r in ("yahtzee", "yacht") for k in range(4)]
    runs = json.loads(Path(baselines(tmp_path)).read_text())
    for row in runs:
        if row["suite"] == "raw_a2c_10m" and row["ruleset"] == "yacht":
            row["observation_layout_version"] = 0  # an older layout: not the env yours played
    (tmp_path / "old.json").write_text(json.dumps(runs))
    files = write(tmp_path, mine)
    assert (
        compare.main(
            ["mine", "--budget", "10M", "--runs", str(tmp_path / "old.json"), "--reps", "50", "--json", *files]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    by = {entry["suite"]: entry for entry in report["versus"]}
    assert by["raw_ppo_10m"]["rulesets"] == ["yahtzee", "yacht"] and by["raw_a2c_10m"]["rulesets"] == ["yahtzee"]
    assert "raw_a2c_10m: 5 of its 10 runs on your rulesets were measured on another env id" in " ".join(report["notes"])


def test_a_real_rules_file_result_is_refused_for_its_evaluation_set(tmp_path, capsys):
    real = evaluate("examples/rules/mini_yacht.toml", "greedy", games=10)
    with pytest.raises(SystemExit):
        compare.main(["mine", "--budget", "10M", *write(tmp_path, [real | {"games": 10_000}])])
    assert "a rules file's evaluation set" in capsys.readouterr().err


def test_without_rliable_compare_says_what_to_install(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rliable" else real(name, *a))
    with pytest.raises(SystemExit):
        compare.main(["mine", "--budget", "10M", *write(tmp_path, [result("yahtzee", 90.0)])])
    err = capsys.readouterr().err
    assert "rliable is not installed" in err and "pip install -e '.[results]'" in err


def test_what_a_maintainer_checks_is_shown_with_each_run(tmp_path, capsys):
    """Each run says whether its agent ran isolated; a run whose agent's failures ended games, and a raw or rules
    run whose isolated agent imported the library's solver or agents, get a note naming the file."""
    mine = [result("yahtzee", 80.0 + k, seed=k, agent_sha256=f"{k:064x}", isolated=k > 0) for k in range(5)]
    mine[1]["failed_games"] = {"timeout": 2, "exception": 1}
    mine[2]["solver_imports"] = ["agents.players.trained", "dice_poker_env.solver"]
    mine[3]["solver_imports"] = []
    mine[4]["git_commit"] = "0123abc-dirty"
    files = write(tmp_path, mine)
    assert compare.main(["mine", "--budget", "10M", "--runs", baselines(tmp_path), "--reps", "100", *files]) == 0
    out = capsys.readouterr().out
    assert f"| {Path(files[0]).name} | yahtzee | 0 | 80.00 | no | {0:064x} |" in out
    assert f"| {Path(files[1]).name} | yahtzee | 1 | 81.00 | yes | {1:064x} |" in out
    assert f"* note: {Path(files[1]).name}: the agent's failures ended 3 games (exception 1, timeout 2)" in out
    assert (
        f"* note: {Path(files[2]).name}: on the raw track, the agent imported the library's "
        "agents.players.trained, dice_poker_env.solver: check what it uses them for"
    ) in out
    assert out.count("imported the library's") == 1  # (an empty list: nothing imported)
    assert f"* note: {Path(files[4]).name}: measured by code that differs from its commit (0123abc-dirty)" in out
    assert out.count("differs from its commit") == 1


def test_a_baseline_short_of_the_protocols_seeds_by_design_is_not_called_running(tmp_path, capsys):
    """A suite run with fewer seeds than the protocol asks, all of them recorded (the knowledge ablation: 5 at 10M),
    is marked short by design (``+``); only one short of its own seeds is still running (``*``). Every suite short
    of the protocol's seeds was said to be still running."""
    path = Path(baselines(tmp_path))
    rows = json.loads(path.read_text())
    ablation = [  # all of the suite's 5 seeds on each of its rulesets
        row | {"suite": "ablation_1_features_10m", "track": "rules", "seed": 1000 + row["seed"]}
        for row in rows
        if row["suite"] == "raw_ppo_10m"
    ]
    path.write_text(json.dumps(rows + ablation))
    mine = [result(r, 80.0 + k, seed=k, track="rules") for r in ("yahtzee", "yacht") for k in range(5)]
    assert compare.main(["mine", "--budget", "10M", "--runs", str(path), "--reps", "50", *write(tmp_path, mine)]) == 0
    out = capsys.readouterr().out
    assert "| ablation_1_features_10m+ | rules |" in out and "| raw_a2c_10m* | raw (another track) |" in out
    assert "* the suite is still running; + short by the suite's design, every run of it recorded" in out
