"""How the server is served: gunicorn's app and worker, the outbox that keeps a slow reader from
holding a worker, request framing before the app, ports, and stopping."""
