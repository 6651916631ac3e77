"""The trained policy, written once for the NumPy player and the torch network (no module-level torch import).

* ``files``: the policy file (.npz + metadata), the ruleset check shared with every trained model;
* ``observation``: one decoder of the flat observation into game quantities;
* ``bonus``: the upper bonus's par and the points still needed;
* ``inputs``: the network's inputs (the observation and its features), the keep tables, the bonus terms;
* ``heads``: the policy's options and heads (box points, keep points, the bonus), over NumPy or torch;
* ``player``: :class:`~agents.policy.player.PolicyAgent`, the NumPy player of a policy file.
"""
