"""Measuring players: the benchmark against the optimum, datasets of games, multi-seed results and plots."""
