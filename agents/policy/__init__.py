"""The trained policy: its file format (.npz + metadata), ruleset check, inputs and the NumPy player (no torch)."""
