"""The worker: the only code that trains (``python -m potato.training.worker JOB_DIR``). It knows
nothing of servers, ssh or SLURM; docs/worker-contract.md is its interface."""
