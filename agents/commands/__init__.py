"""``dice-poker`` commands that need the agents: ``bench``, ``play`` and ``dataset``.

The core's command line (:mod:`dice_poker_env.cli`) finds them through the entry
point group ``dice_poker_env.commands`` in ``pyproject.toml``, so the core never
imports this package. Each module here is one command with ``HELP``,
``add_arguments(parser)`` and ``run(args)``.
"""
