"""The server side of training: runs and their store, the dispatcher, bundles, writeback, the
training page and the agent protocol's routes.

None of this ships to a training host; :mod:`potato.training` is what ships.
"""
