"""A deliberately naive second implementation of every box of every shipped ruleset.

Written straight from docs/rules.md with Counter and plain loops, sharing nothing with
the engine, so the property tests can compare the two on any dice.
"""

from collections import Counter

FOUR_STRAIGHTS = [{1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}]
LOW, HIGH = {1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}


def _kinds(dice):
    c = Counter(dice)
    return c, sorted(c.values(), reverse=True)


def _has_n(dice, n):
    return any(v >= n for v in Counter(dice).values())


def _best_n(dice, n):
    faces = [f for f, v in Counter(dice).items() if v >= n]
    return n * max(faces) if faces else 0


def _full_house(dice):
    return _kinds(dice)[1] == [3, 2]


def _pair_faces(dice):
    return sorted((f for f, v in Counter(dice).items() if v >= 2), reverse=True)


def _upper(dice, face):
    return face * dice.count(face)


def yacht(dice, box):
    s = sum(dice)
    faces = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in faces:
        return _upper(dice, faces[box])
    return {
        "full_house": s if _full_house(dice) else 0,
        "four_of_a_kind": s if _has_n(dice, 4) else 0,
        "little_straight": 30 if set(dice) == LOW else 0,
        "big_straight": 30 if set(dice) == HIGH else 0,
        "choice": s,
        "yacht": 50 if _has_n(dice, 5) else 0,
    }[box]


def dice_poker(dice, box):
    s = sum(dice)
    faces = {"aces": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in faces:
        return _upper(dice, faces[box])
    return {
        "pair": s if _has_n(dice, 2) else 0,
        "two_pair": s if len(_pair_faces(dice)) >= 2 else 0,
        "three_of_a_kind": s if _has_n(dice, 3) else 0,
        "four_of_a_kind": s if _has_n(dice, 4) else 0,
        "full_house": 25 if _full_house(dice) else 0,
        "small_straight": 30 if any(st <= set(dice) for st in FOUR_STRAIGHTS) else 0,
        "large_straight": 40 if set(dice) in (LOW, HIGH) else 0,
        "poker": 50 if _has_n(dice, 5) else 0,
        "chance": s,
    }[box]


def school_poker(dice, box, first_roll=False):
    s = sum(dice)
    faces = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in faces:
        f = faces[box]
        return (dice.count(f) - 3) * f
    pairs = _pair_faces(dice)
    plain = {
        "pair": 2 * pairs[0] if pairs else 0,
        "two_pairs": 2 * (pairs[0] + pairs[1]) if len(pairs) >= 2 else 0,
        "three_of_a_kind": _best_n(dice, 3),
        "small_straight": 15 if set(dice) == LOW else 0,
        "large_straight": 20 if set(dice) == HIGH else 0,
        "full_house": s if _full_house(dice) else 0,
        "four_of_a_kind": _best_n(dice, 4),
        "poker": _best_n(dice, 5) + 50 if _has_n(dice, 5) else 0,
        "chance": s,
    }[box]
    if first_roll and box != "chance" and plain > 0:
        extra = 50 if box == "poker" else 0
        return 2 * (plain - extra) + extra
    return plain


def yahtzee(dice, box):
    s = sum(dice)
    faces = {"aces": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in faces:
        return _upper(dice, faces[box])
    return {
        "three_of_a_kind": s if _has_n(dice, 3) else 0,
        "four_of_a_kind": s if _has_n(dice, 4) else 0,
        "full_house": 25 if _full_house(dice) else 0,
        "small_straight": 30 if any(st <= set(dice) for st in FOUR_STRAIGHTS) else 0,
        "large_straight": 40 if set(dice) in (LOW, HIGH) else 0,
        "yahtzee": 50 if _has_n(dice, 5) else 0,
        "chance": s,
    }[box]


def yatzy(dice, box):
    s = sum(dice)
    faces = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in faces:
        return _upper(dice, faces[box])
    pairs = _pair_faces(dice)
    return {
        "one_pair": 2 * pairs[0] if pairs else 0,
        "two_pairs": 2 * (pairs[0] + pairs[1]) if len(pairs) >= 2 else 0,
        "three_of_a_kind": _best_n(dice, 3),
        "four_of_a_kind": _best_n(dice, 4),
        "small_straight": 15 if set(dice) == LOW else 0,
        "large_straight": 20 if set(dice) == HIGH else 0,
        "full_house": s if _full_house(dice) else 0,
        "chance": s,
        "yatzy": 50 if _has_n(dice, 5) else 0,
    }[box]


NAIVE = {"yacht": yacht, "dice_poker": dice_poker, "school_poker": school_poker, "yahtzee": yahtzee, "yatzy": yatzy}
