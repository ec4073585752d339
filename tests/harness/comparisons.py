"""Two answers to one question compared, as upstream's llm-preference example keeps them (a ``prompt``,
``responses`` as the item's text): one kind and one curt answer in turn on either side, so the kind
one is better; every fifth pair two kind answers, a tie. A preference model can learn which words
make an answer better."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import requests

from tests.harness.servers import ServerProcess

KIND = ["thanks for asking here is a clear answer with an example", "great question here is a careful answer step by step",
        "happy to help here is a friendly answer with the details", "good point here is a patient answer and a tip"]
CURT = ["no", "figure it out yourself", "whatever read the manual", "not my problem"]
PROMPT = "How do I reset my password?"
PREFERENCE = {"annotation_type": "pairwise", "name": "better", "description": "Which answer is better?",
              "mode": "binary", "items_key": "responses", "labels": ["Answer A", "Answer B"], "allow_tie": True,
              "tie_label": "Equally good"}


def comparison(n: int) -> Dict[str, Any]:
    if n % 5 == 4:
        responses = [KIND[n % 4], KIND[(n + 1) % 4]]
    elif n % 2 == 0:
        responses = [KIND[n % 4], CURT[n % 4]]
    else:
        responses = [CURT[n % 4], KIND[n % 4]]
    return {"id": f"c{n:03d}", "prompt": f"{PROMPT} ({n})", "responses": responses}


def answer(n: int) -> str:
    return "tie" if n % 5 == 4 else "A" if n % 2 == 0 else "B"


def comparison_project(make_project: Callable[..., Path], n: int = 50,
                       backends: Optional[Dict[str, Any]] = None) -> Path:
    """``n`` comparisons whose preference is written back on every item."""
    config = make_project(
        n_items=n, annotation_schemes=[PREFERENCE], item_properties={"id_key": "id", "text_key": "responses"},
        model_training={"enabled": True, "grace_seconds": 2, **({"backends": backends} if backends else {}),
                        "writeback": {"schemas": ["better"], "include_unlabeled": True}})
    (config.parent / "data" / "reviews.json").write_text(json.dumps([comparison(i) for i in range(n)]),
                                                         encoding="utf-8")
    return config


def texts() -> List[str]:
    """Every word the comparisons use (a tiny tokenizer's vocabulary)."""
    return [PROMPT, *KIND, *CURT] + [f"({n})" for n in range(100)]


def compare(session: requests.Session, srv: ServerProcess, n: int) -> None:
    r = session.post(srv.url + "/api/label", json={"id": f"c{n:03d}", "labels": {"better": answer(n)}, "go": "stay"})
    assert r.status_code == 200, r.text
