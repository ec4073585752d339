"""The agent protocol's routes, and what an agent is handed to join: the registration commands and the wheel."""
