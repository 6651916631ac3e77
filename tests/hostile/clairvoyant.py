"""Guesses a small grading seed from the dice it is shown, then knows every die ahead.

In the first game it rerolls all five dice at every roll and tries the seeds 0 .. ``max_seed`` until
one reproduces every roll seen (a grading's per-game env seeds are ``SeedSequence(seed)`` words, and
an env's dice the first block of its generator: ``RandomDice.game_faces``, all in the open engine).
From the next game on it plays each turn for the most points it can reach with the rolls it knows are
coming. It scores far more than its decisions are worth: the luck flag and the luck-free percent see it.
"""

import numpy as np

from dice_poker_env.dice_sources import RandomDice
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, ROLL_DICE, distinct_keep_mask, roll_of_faces
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.tables import compile_rules


def faces_of(seed, game_index):
    """Every face game ``game_index`` of a grading with ``seed`` will show, in the order the env serves them."""
    env_seed = int(np.random.SeedSequence(seed).generate_state(game_index + 1, dtype=np.uint32)[game_index])
    return RandomDice.game_faces([env_seed], RandomDice.BLOCK)[0].tolist()


class Agent:
    def __init__(self, rules, max_seed=2000):
        self.tables = compile_rules(rules)
        self.masks = action_masks(self.tables)
        self.max_seed, self.seed, self.game = int(max_seed), None, -1

    def reset(self):
        self.game += 1
        self.rolls, self.faces, self.state, self.at = [], None, None, 0

    def act(self, observation, action_mask):
        dice = sorted(int(d) for d in observation["dice"])
        if self.seed is None or self.game == 0:  # learning the seed: reroll everything, score the first open box
            self.rolls.append(dice)
            if self.seed is None and len(self.rolls) >= 3:
                self.seed = self.guess()
            if int(observation["rolls_left"]) > 0:
                return 0
            return N_KEEP_ACTIONS + int(np.flatnonzero(action_mask[N_KEEP_ACTIONS:])[0])
        if self.faces is None:
            self.faces, self.at = faces_of(self.seed, self.game), 5
            self.state = game.new_game(self.tables, roll_of_faces(self.faces[:5]))
        if sorted(ROLL_DICE[self.state.roll].tolist()) != dice:
            raise RuntimeError("the dice are not the ones foreseen")
        action = self.best(self.state, self.at)[1]
        n = 5 - bin(action).count("1") if action < N_KEEP_ACTIONS else 5
        self.state = game.step_one(self.tables, self.state, action, self.faces[self.at : self.at + n])[0]
        self.at += n
        return action

    def guess(self):
        """The seed whose first game shows the rolls seen (each roll 5 fresh faces: everything is rerolled)."""
        for seed in range(self.max_seed):
            faces = faces_of(seed, 0)
            if all(sorted(faces[5 * k : 5 * k + 5]) == roll for k, roll in enumerate(self.rolls)):
                return seed
        return None

    def best(self, state, at):
        """``(points, first action)``: the most points this turn can write, knowing the faces from ``at`` on."""
        mask = self.masks.of_game(state)
        best = (-1, -1)
        for box in np.flatnonzero(mask[N_KEEP_ACTIONS:]):
            points = game.step_one(self.tables, state, N_KEEP_ACTIONS + int(box), self.faces[at : at + 5])[1]
            best = max(best, (points, N_KEEP_ACTIONS + int(box)))
        if state.rolls_left > 0:
            for keep in np.flatnonzero(distinct_keep_mask(np.asarray(mask), state.roll)[:N_KEEP_ACTIONS]):
                n = 5 - bin(int(keep)).count("1")
                after = game.step_one(self.tables, state, int(keep), self.faces[at : at + n])[0]
                best = max(best, (self.best(after, at + n)[0], int(keep)))
        return best
