"""SLURM on the login node, as the agent sees it: the job script, the job's state, slurm.json. The
server's side of SLURM is potato.server.training.backends.slurm."""
