"""Print the line coverage of each package (dice_poker_env, agents) and in total from a coverage data file.

Run after ``pytest --cov``: ``python .ci/coverage_summary.py [DATA_FILE]`` (default ``.coverage``, or
``$COVERAGE_FILE``). It reads the same data ``coverage report`` does and aggregates it per top-level
package; ``--fail-under PACKAGE=PERCENT`` (repeatable) makes it exit 1 when a package is below its target.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import coverage

PACKAGES = ("dice_poker_env", "agents")


def package_totals(data_file: str) -> dict[str, tuple[int, int]]:
    """``{package: (statements, missed)}`` over the files of each package measured in ``data_file``."""
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    root = Path.cwd().resolve()
    totals = dict.fromkeys(PACKAGES, (0, 0))
    for measured in cov.get_data().measured_files():
        path = Path(measured).resolve()
        try:
            package = path.relative_to(root).parts[0]
        except ValueError:  # a file outside this checkout
            continue
        if package not in totals:
            continue
        _, statements, _, missing, _ = cov.analysis2(str(path))
        n, m = totals[package]
        totals[package] = (n + len(statements), m + len(missing))
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_file", nargs="?", default=os.environ.get("COVERAGE_FILE", ".coverage"))
    parser.add_argument("--fail-under", action="append", default=[], metavar="PACKAGE=PERCENT")
    args = parser.parse_args(argv)
    if not Path(args.data_file).exists():
        print(f"coverage summary: no data file {args.data_file} (run pytest --cov first)", file=sys.stderr)
        return 1
    totals = package_totals(args.data_file)
    percent = {}
    for package, (n, missed) in totals.items():
        percent[package] = 100.0 * (n - missed) / n if n else 100.0
        print(f"coverage {package + ':':16} {n - missed:6d} of {n:6d} lines  {percent[package]:6.2f}%")
    n_all = sum(n for n, _ in totals.values())
    missed_all = sum(m for _, m in totals.values())
    print(
        f"coverage {'total:':16} {n_all - missed_all:6d} of {n_all:6d} lines  {100.0 * (n_all - missed_all) / max(n_all, 1):6.2f}%"
    )
    failed = False
    for target in args.fail_under:
        package, _, value = target.partition("=")
        if package not in percent or not value:
            parser.error(f"--fail-under {target!r}: expected PACKAGE=PERCENT with PACKAGE one of {', '.join(PACKAGES)}")
        if percent[package] < float(value):
            print(f"coverage {package}: {percent[package]:.2f}% is below {float(value):g}%", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
