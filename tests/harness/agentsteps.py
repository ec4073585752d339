"""Coding agents' sessions whose steps a step classifier can learn: a user's task, then four steps of
the agent, where a wrong step reads as one (it deletes, guesses or skips) and a right one as right
(it reads, tests, explains). In first_error mode every step from the first wrong one on is wrong, so
here every step from it on reads wrong too. Trace n's first wrong step is agent step ``FIRST[n % 5]``
(None: all right), so the traces cover every place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import requests

from tests.harness.servers import ServerProcess

RIGHT_STEPS = [
    "I read the failing test and the module it covers.",
    "Running the unit tests to see the failure first.",
    "The parser skips empty lines; I add a check and explain it.",
    "All tests pass now; I summarise the change for review.",
]
WRONG_STEPS = [
    "I delete the failing test and force push so the suite is green.",
    "Guessing the config value, I skip the docs and force push.",
    "Skipping the tests, I delete the assertion and force push.",
    "I delete the lock file, guess the version and skip review.",
]
FIRST: List[Optional[int]] = [1, 2, None, 3, 0]
"""Per trace (by n mod 5), the first wrong agent step (0-based among the agent's steps), or none."""
STEPS = "structured_turns"
PRM = {"annotation_type": "process_reward", "name": "step_rewards", "description": "Mark the first wrong step",
       "steps_key": STEPS, "mode": "first_error"}


def first_wrong(n: int) -> Optional[int]:
    return FIRST[n % len(FIRST)]


def trace(n: int) -> Dict[str, Any]:
    first = first_wrong(n)
    steps = [{"role": "user", "content": f"Fix bug #{n} in the parser."}]
    for k in range(4):
        wrong = first is not None and k >= first
        steps.append({"role": "assistant", "content": (WRONG_STEPS if wrong else RIGHT_STEPS)[(k + n) % 4]})
    return {"id": f"t{n:03d}", "text": f"Session {n}", STEPS: steps}


def true_marks(n: int) -> Dict[str, str]:
    """The first_error answer for trace ``n``: by step id (``t1``..``t4``: the user's task is ``t0``)."""
    first = first_wrong(n)
    return {f"t{k + 1}": "incorrect" if first is not None and k >= first else "correct" for k in range(4)}


def trace_project(make_project: Callable[..., Path], n: int = 50, backends: Optional[Dict[str, Any]] = None,
                  **training: Any) -> Path:
    """A process reward project on ``n`` sessions, its step answers written back (every trace)."""
    config = make_project(
        n_items=n, annotation_schemes=[PRM],
        instance_display={"fields": [{"key": "text", "type": "text", "label": "Task"},
                                     {"key": STEPS, "type": "coding_trace", "label": "Agent session"}]},
        model_training={"enabled": True, "grace_seconds": 2, **({"backends": backends} if backends else {}),
                        "writeback": {"schemas": ["step_rewards"], "include_unlabeled": True}, **training})
    (config.parent / "data" / "reviews.json").write_text(json.dumps([trace(i) for i in range(n)]), encoding="utf-8")
    return config


def mark_steps(session: requests.Session, srv: ServerProcess, n: int) -> None:
    r = session.post(srv.url + "/api/label", json={"id": f"t{n:03d}", "labels": {"step_rewards": true_marks(n)},
                                                   "go": "stay"})
    assert r.status_code == 200, r.text
