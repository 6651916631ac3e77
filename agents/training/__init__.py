"""Training: the actor-critic network, rollouts, the batched trainers (PPO, A2C), BC, RLlib and sweeps."""
