"""The agent: the program on a training host that fetches a run's bundle, starts and follows its
worker, and reports to the server (``python -m potato.training.agent``). Imports nothing here, so
the package stays standard library only for every host."""
