"""Rulesets: the shipped ones by name, custom ones from TOML/YAML/JSON files or mappings."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from dice_poker_env.rules.spec import Box, FiveOfAKind, Rules, RulesError, UpperBonus, build_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: The rulesets that ship with the package, in the order of ``docs/rules.md``.
RULESET_NAMES = ("yacht", "dice_poker", "school_poker", "yahtzee", "yatzy")
#: The file types a custom ruleset may be written in.
RULES_FILE_SUFFIXES = (".toml", ".yaml", ".yml", ".json")

__all__ = [
    "Box",
    "FiveOfAKind",
    "RULESET_NAMES",
    "Rules",
    "RulesError",
    "UpperBonus",
    "build_rules",
    "load_rules",
    "read_rules_file",
    "ruleset_options",
]


def read_rules_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a rules file (``.toml``, ``.yaml``/``.yml`` or ``.json``) into a mapping."""
    path = Path(path)
    if not path.exists():
        raise RulesError(f"{path}: no such rules file")
    if path.is_dir():
        raise RulesError(f"{path}: is a directory, not a rules file")
    if not path.is_file():
        raise RulesError(f"{path}: not a regular file (a rules file is read from disk)")
    suffix = path.suffix.lower()
    if suffix not in RULES_FILE_SUFFIXES:
        raise RulesError(
            f"{path}: unsupported rules file type {suffix or '(no suffix)'!r} (use .toml, .yaml, .yml or .json)"
        )
    try:
        if suffix == ".toml":
            with path.open("rb") as handle:
                return tomllib.load(handle)
        if suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ModuleNotFoundError:
                raise RulesError(f"{path}: reading YAML rules needs PyYAML (pip install pyyaml)") from None
            with path.open() as handle:
                data: dict[str, Any] = yaml.safe_load(handle)
            return data
        with path.open() as handle:  # .json, the last of RULES_FILE_SUFFIXES
            loaded: dict[str, Any] = json.load(handle)
            return loaded
    except RulesError:
        raise
    except Exception as error:  # parser errors name line and column; keep them, on one line (PyYAML's take four)
        detail = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
        raise RulesError(f"{path}: not a valid {suffix[1:].upper()} file: {detail}") from error


def _shipped_spec(name: str) -> dict[str, Any]:
    data = resources.files("dice_poker_env.rules").joinpath("data").joinpath(f"{name}.toml")  # (one part: 3.10)
    return tomllib.loads(data.read_text())


#: the keys of a :class:`Rules` written out field by field (``dataclasses.asdict``)
_RULES_FIELDS = frozenset(("raw_spec", "spec", "source", "options", "boxes"))


def load_rules(rules: str | os.PathLike[str] | Rules | Mapping[str, Any], **options: Any) -> Rules:
    """Load a ruleset by name (``"yahtzee"``), from a rules file path, or from a mapping.

    Keyword arguments switch the ruleset's options, e.g.
    ``load_rules("yahtzee", joker="free")`` or
    ``load_rules("dice_poker", upper_bonus_strict=True)``. A :class:`Rules` object
    is returned as is (or re-built with the given options).

    Raises:
        RulesError: unknown ruleset, unreadable or malformed file, unknown option.
            An upper-bonus threshold the upper boxes cannot total is reported when
            the rules are compiled (:func:`dice_poker_env.engine.tables.compile_rules`).
    """
    if isinstance(rules, Rules):
        if not options:
            return rules
        merged = {**rules.options, **options}
        return build_rules(rules.raw_spec, source=rules.source, chosen_options=merged)
    if isinstance(rules, Mapping):
        if _RULES_FIELDS <= set(rules) and isinstance(rules["raw_spec"], Mapping):
            # a Rules object as dataclasses.asdict writes it (Gymnasium's EnvSpec.to_json, so Minari's
            # recover_environment): rebuilt from its spec, source and options
            merged = {**dict(rules["options"] or {}), **options}
            return build_rules(dict(rules["raw_spec"]), source=str(rules["source"]), chosen_options=merged)
        return build_rules(rules, source="<mapping>", chosen_options=options)
    if not isinstance(rules, (str, os.PathLike)):
        raise RulesError(
            f"rules: expected a ruleset name ({', '.join(RULESET_NAMES)}), a rules-file path, "
            f"a Rules object or a mapping, got {rules!r}"
        )
    text = os.fspath(rules)
    if not isinstance(text, str):
        raise RulesError(f"rules: a rules-file path must be text, got {text!r}")
    if text in RULESET_NAMES:
        return build_rules(_shipped_spec(text), source=f"{text}.toml", chosen_options=options)
    # anything that looks like a path (ruleset names have no suffix, separator or file) is read as one
    looks_like_path = Path(text).suffix or any(sep and sep in text for sep in (os.sep, os.altsep))
    if isinstance(rules, os.PathLike) or looks_like_path or Path(text).exists():
        return build_rules(read_rules_file(text), source=text, chosen_options=options)
    import difflib

    near = difflib.get_close_matches(text.lower().replace("-", "_").replace(" ", "_"), RULESET_NAMES, n=1, cutoff=0.75)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise RulesError(f"unknown ruleset {text!r}{hint}: use one of {', '.join(RULESET_NAMES)} or a path to a rules file")


def ruleset_options(rules: str | os.PathLike[str] | Rules) -> dict[str, dict[str, Any]]:
    """The options a ruleset declares: ``{name: {"default", "values", "doc"}}``."""
    from dice_poker_env.rules.spec import _parse_options

    loaded = load_rules(rules)
    parsed = _parse_options(dict(loaded.raw_spec), loaded.source)
    return {o.name: {"default": o.default, "values": list(o.values), "doc": o.doc} for o in parsed.values()}
