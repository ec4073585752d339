"""Issue 23 on every remote backend: a span run goes over a real sshd, through a real SLURM and to a
polling agent, and comes back scored span by span with the model's spans as suggestions. The trainer is
noop (standard library: it marks what it saw marked), so the hosts need nothing installed; the span
trainers themselves are tested on their own and locally."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest

from tests.harness.agents import polling_agent
from tests.harness.annotating import signed_in
from tests.harness.spans import mark, span_items, span_project, true_spans
from tests.harness.runs import TERMINAL, start, wait
from tests.harness.servers import ServerProcess
from tests.harness.slurmcluster import start_cluster
from tests.harness.sshd import start_sshd

pytestmark = pytest.mark.integration


@pytest.fixture
def serve(make_project: Callable[..., Path]) -> Iterator[Callable[[Dict[str, Any]], ServerProcess]]:
    servers: list[ServerProcess] = []

    def _serve(backends: Dict[str, Any]) -> ServerProcess:
        srv = ServerProcess(span_project(make_project, backends)).start()
        servers.append(srv)
        gold = signed_in(srv, "gold")
        for item in span_items()[:30]:
            mark(gold, srv, item["id"], true_spans(item))
        return srv

    yield _serve
    for srv in servers:
        srv.stop()


def trains_and_suggests(srv: ServerProcess, backend: str) -> None:
    run = start(srv, trainer="noop", schemas=["entities"], backend=backend)
    done = wait(srv, run["id"], TERMINAL, timeout=240)
    assert done["state"] == "succeeded", (done, srv.output()[-3000:])
    assert done["backend"] == backend
    assert done["metrics"]["entities/holdout_f1"] >= 0.9 and "entities/PER/holdout_f1" in done["metrics"]
    item = signed_in(srv, "kim").get(srv.url + "/api/item/34").json()["item"]  # s033: nobody marked it
    shown = item["suggestions"]["entities"]
    assert shown["run_id"] == run["id"]
    assert [{k: s[k] for k in ("start", "end", "label")} for s in shown["label"]] == true_spans(span_items()[33])


@pytest.mark.rig
def test_a_span_run_over_ssh(serve: Callable[[Dict[str, Any]], ServerProcess]) -> None:
    trains_and_suggests(serve({"gpu": start_sshd().backend()}), "gpu")


@pytest.mark.rig
def test_a_span_run_through_slurm(serve: Callable[[Dict[str, Any]], ServerProcess]) -> None:
    trains_and_suggests(serve({"cluster": start_cluster().backend()}), "cluster")


def test_a_span_run_on_an_agent(serve: Callable[[Dict[str, Any]], ServerProcess], tmp_path: Path) -> None:
    srv = serve({"lab": {"type": "agent", "description": "lab workstation"}})
    with polling_agent(srv, "lab", tmp_path / "agent"):
        trains_and_suggests(srv, "lab")
