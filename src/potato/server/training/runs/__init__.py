"""A run's life on the server, whatever carries it: the store, its folder and log, hand-over, tokens, wake-up, quota, the watchdog, and what its predictions do to the annotation side."""
