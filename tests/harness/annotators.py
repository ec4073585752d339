"""Annotators labelling back to back through a server's API while a fault test does its worst, each
keeping what the server acknowledged, so the test can check that every acknowledged label is stored."""

from __future__ import annotations

import threading
import time

import requests

from tests.harness.adminapi import stored_labels


class Annotators:
    """``count`` annotators (``ann00``, ``ann01``, ...) who label items ``r000``... until stopped. A
    request cut off (a worker or the whole server killed) is sent again; a refused session signs in
    again. The server's address stays ``url`` throughout (a restarted server takes the same port)."""

    def __init__(self, url: str, count: int, items: int = 400) -> None:
        self.url = url
        self.items = items
        self.acknowledged: dict[str, set[str]] = {f"ann{k:02d}": set() for k in range(count)}
        self.answers: dict[str, int] = dict.fromkeys(self.acknowledged, 0)  # acknowledgements, repeats too
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._label, args=(name,), daemon=True) for name in self.acknowledged]

    def start(self) -> Annotators:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=30)

    def stalled(self, timeout: float = 120) -> list[str]:
        """Waits until every annotator has had a label acknowledged after this call, and returns those
        who had none within ``timeout`` seconds: a server that serves again serves all of them, however
        slowly a busy machine lets it."""
        before = dict(self.answers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.answers[name] <= n for name, n in before.items()):
            time.sleep(0.2)
        return sorted(name for name, n in before.items() if self.answers[name] <= n)

    def total(self) -> int:
        return sum(len(items) for items in self.acknowledged.values())

    def lost(self) -> dict[str, list[str]]:
        """Per annotator, the items the server acknowledged but does not have (a few, sorted)."""
        got: dict[str, set[str]] = {}
        for row in stored_labels(self.url):
            got.setdefault(row["user"], set()).add(row["id"])
        return {name: sorted(items - got.get(name, set()))[:5] for name, items in self.acknowledged.items()
                if not items <= got.get(name, set())}

    def _label(self, name: str) -> None:
        session = requests.Session()
        mine = self.acknowledged[name]
        signed_in, i = False, 0
        while not self._stop.is_set():
            try:
                if not signed_in:
                    signed_in = session.post(self.url + "/login", data={"name": name}, timeout=10).ok
                    continue
                item = f"r{i % self.items:03d}"
                r = session.post(self.url + "/api/label", json={"id": item, "labels": {"sentiment": "positive"}},
                                 timeout=10)
                if r.status_code == 200:
                    mine.add(item)
                    self.answers[name] += 1
                    i += 1
                elif r.status_code in (401, 403):
                    signed_in = False
            except requests.RequestException:
                time.sleep(0.05)  # the process serving it was killed: send it again
