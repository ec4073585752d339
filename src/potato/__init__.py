"""Potato: an annotation server that trains models on its labels wherever the GPUs are."""

__version__ = "2.14.0"
