"""How a worker is started and followed wherever it runs: the supervision loop, containers, and
which files of Potato ship to a host."""
