import sys

from dice_poker_env.cli import main

sys.exit(main())
