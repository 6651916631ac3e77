"""``dice-poker`` sub-commands that live with the agents (they need more than the core package).

Each module exposes ``add_arguments(parser)``, ``run(args) -> int`` and
``main(argv=None) -> int`` (its own ``argparse`` program, e.g. ``dice-poker dataset``).
"""
