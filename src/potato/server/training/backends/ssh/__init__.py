"""The ssh backend and the transport the SLURM backend shares with it: ssh command lines, the host probe, the session record, code push, the remote run and copy-back."""
