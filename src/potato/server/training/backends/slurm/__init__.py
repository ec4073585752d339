"""The SLURM backend: a cluster behind a login node, reached over the ssh transport."""
