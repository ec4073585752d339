"""Training: the worker that trains on a bundle, its trainers, and the backends that run it.

This package's own ``__init__`` imports nothing, so ``python -m potato.training.worker`` on a
remote host (Python 3.8, standard library only) never pulls in server code.
"""
