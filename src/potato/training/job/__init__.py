"""The job format the server and a worker share: job.json, the bundle's files, events, results."""
