"""Small rulesets that several solver tests share (exhaustive checks need few boxes)."""

from __future__ import annotations

#: an upper bonus reached through the fives, a five-of-a-kind box with joker and bonus (3 boxes)
TINY_JOKER = {
    "name": "tiny_joker",
    "boxes": [
        {"name": "fives", "kind": "face_sum", "face": 5},
        {"name": "full_house", "kind": "full_house", "points": 25},
        {"name": "yahtzee", "kind": "n_of_a_kind", "n": 5, "points": 50},
    ],
    "upper_bonus": {"threshold": 15, "points": 35},
    "five_of_a_kind": {"box": "yahtzee", "bonus": 100, "joker": "forced"},
}

#: six boxes with an upper bonus, as a rules file (TOML): :data:`SMALL_BONUS` is the same ruleset as a dict
SMALL_BONUS_TOML = """
name = "small_bonus"
boxes = [
  { name = "fives",       kind = "face_sum", face = 5 },
  { name = "sixes",       kind = "face_sum", face = 6 },
  { name = "full_house",  kind = "full_house", points = 25 },
  { name = "big_straight", kind = "straight", sets = [[2, 3, 4, 5, 6]], points = 30 },
  { name = "choice",      kind = "chance" },
  { name = "yacht",       kind = "n_of_a_kind", n = 5, points = 50 },
]
upper_bonus = { threshold = 20, points = 35 }
"""
SMALL_BONUS = {
    "name": "small_bonus",
    "boxes": [
        {"name": "fives", "kind": "face_sum", "face": 5},
        {"name": "sixes", "kind": "face_sum", "face": 6},
        {"name": "full_house", "kind": "full_house", "points": 25},
        {"name": "big_straight", "kind": "straight", "sets": [[2, 3, 4, 5, 6]], "points": 30},
        {"name": "choice", "kind": "chance"},
        {"name": "yacht", "kind": "n_of_a_kind", "n": 5, "points": 50},
    ],
    "upper_bonus": {"threshold": 20, "points": 35},
}
