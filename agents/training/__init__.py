"""Training: the config sections of ``train.py``, the actor-critic network, rollouts, the batched trainers (PPO,
A2C, PQN), SB3's glue, BC, RLlib, the periodic evaluation, run folders and sweeps."""
