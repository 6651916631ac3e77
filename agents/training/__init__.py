"""Training: the config sections of ``train.py``, the batched trainers' algorithms, SB3's glue, run folders."""
