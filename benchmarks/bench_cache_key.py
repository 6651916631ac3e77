"""Cost of the solver cache's keyed checksum (HMAC-SHA256) against the unkeyed SHA-256 it replaced.

    python -m benchmarks.bench_cache_key [RULES ...]      (from the repository root)

Per ruleset: the cache file's size, the time to checksum its body both ways (best of 5), the time to load
the file whole (``solve`` from the cache) and the time of a fresh solve without the cache (what a grader
that trusts no cache pays, ``solve(rules, cache=False)``). Runs in a temporary cache and key folder.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's dice_poker_env, not an installed copy


def best(fn: Callable[..., object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("rules", nargs="*", default=["yacht", "yahtzee"], help="rulesets (default: yacht yahtzee)")
    names = parser.parse_args(argv).rules
    with tempfile.TemporaryDirectory() as root:
        os.environ["DICE_POKER_CACHE"] = os.path.join(root, "cache")
        os.environ["DICE_POKER_KEY_DIR"] = os.path.join(root, "key")
        from dice_poker_env.rules import load_rules
        from dice_poker_env.solver import cache as disk
        from dice_poker_env.solver import solve

        key = disk.cache_key()
        print("rules      file MiB  sha256 s  hmac s  load s  fresh solve s")
        for name in names:
            rules = load_rules(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fresh = best(lambda rules=rules: solve(rules, cache=False, progress=False), repeat=1)
                solve(rules, progress=False)  # writes the cache file
            path = disk.cache_path(rules.name, rules.fingerprint)
            body = memoryview(path.read_bytes())[len(disk.MAGIC) + 65 :]
            sha = best(lambda body=body: hashlib.sha256(body).hexdigest())
            mac = best(lambda body=body: hmac.new(key, body, hashlib.sha256).hexdigest())
            load = best(lambda rules=rules: solve(rules, progress=False))
            size = path.stat().st_size / 2**20
            print(f"{name:<10} {size:8.1f}  {sha:8.4f}  {mac:6.4f}  {load:6.3f}  {fresh:13.2f}")


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
