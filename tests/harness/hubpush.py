"""What the tests of pushing a model to the Hub (the API's and the page's) share: a run whose model stayed
on the training machine."""

from __future__ import annotations

import json

import requests

from tests.conftest import truth
from tests.harness.runs import H

AGENT_V1 = "/training/agent/v1"


def agent_run_with_model_left_on_host(url: str, backend_token: str) -> str:
    """A run on the agent backend ``lab`` that reports its model folder on the agent's machine (lab-pc),
    as an agent does."""
    r = requests.post(f"{url}/admin/training/api/runs", headers=H, timeout=30,
                      json={"trainer": "noop", "schemas": ["sentiment"], "backend": "lab"})
    assert r.status_code == 201, r.text
    run_id = str(r.json()["id"])
    r = requests.post(f"{url}{AGENT_V1}/jobs/next", timeout=30,
                      headers={"Authorization": f"Bearer {backend_token}"},
                      json={"backend": "lab", "agent": {"id": "a1", "host": "lab-pc"}, "wait_s": 0})
    assert r.status_code == 200 and r.json()["run_id"] == run_id, r.text
    bearer = {"Authorization": f"Bearer {r.json()['run_token']}"}
    lines = "".join(json.dumps({"item_id": f"r{i:03d}", "schema": "sentiment", "label": truth(f"r{i:03d}"),
                                "confidence": 0.9}) + "\n" for i in range(40))
    assert requests.put(f"{url}{AGENT_V1}/runs/{run_id}/predictions", headers=bearer, data=lines.encode(),
                        timeout=30).status_code == 200
    folder = f"/home/me/.cache/potato-training/jobs/{run_id}/artifacts"
    r = requests.post(f"{url}{AGENT_V1}/runs/{run_id}/result", headers=bearer, timeout=30,
                      json={"exit_code": 0, "artifact_uri": f"lab-pc:{folder}",
                            "model": {"host": "lab-pc", "folder": folder},
                            "result": {"status": "succeeded", "metrics": {"holdout_accuracy": 1.0}}})
    assert r.status_code == 200 and r.json() == {"state": "succeeded"}, r.text
    return run_id
