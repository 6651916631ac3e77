"""``python -m dice_poker_env.cli``: the ``dice-poker`` command."""

import sys

from dice_poker_env.cli import main

sys.exit(main())
