"""What the tests start and drive: servers, sshd, SLURM, agents, browsers, example projects."""
