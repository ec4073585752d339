"""The example projects: what `potato init` writes, and what examples/ holds.

They live in the package so that an admin who installed Potato with pip (and so has no checkout with
an examples folder) starts from the same projects the README and the tutorial use:

- ``reviews`` ("Review Sentiment"): product reviews labelled positive or negative.
- ``agent-steps`` ("Agent Steps"): coding agents' sessions marked by their first wrong step, for a
  step classifier (a process reward model).
- ``preference`` ("Answer Preference"): two answers to a customer's question, which helps more, for a
  preference model (a reward model).

Every item is synthetic and seeded: the words that make a review positive, a step wrong or an answer
better are clear enough that a model learns them from a few dozen labels, and nothing here is real
customer text or a real agent's session.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from potato.errors import PotatoError

CONFIG = """\
# "Review Sentiment": label product reviews as positive or negative, and train a model on this
# machine that suggests labels. Start it with:  potato start {config}
annotation_task_name: "Review Sentiment"
task_dir: "."
data_files:
  - "data/reviews.json"
item_properties:
  id_key: "id"
  text_key: "text"
output_annotation_dir: "annotation_output"
admin_api_key: "{admin_key}"

annotation_schemes:
  - annotation_type: "radio"
    name: "sentiment"
    description: "Is this review positive or negative?"
    labels: ["positive", "negative"]

model_training:
  enabled: true
  max_wall_seconds: 3600
  writeback:
    schemas: ["sentiment"]
    include_unlabeled: true
    min_confidence: 0.6
"""

PRODUCTS = ["blender", "headphones", "backpack", "kettle", "desk lamp", "phone case", "coffee grinder",
            "running shoes", "keyboard", "water bottle", "tent", "vacuum", "toaster", "monitor", "jacket"]
GOOD = ["works perfectly", "exceeded my expectations", "is sturdy and well made", "was worth every penny",
        "arrived quickly and works great", "is the best purchase I made this year", "feels premium",
        "is quiet and reliable", "does exactly what it promises", "is a delight to use"]
BAD = ["broke after two days", "was a waste of money", "stopped working within a week", "feels cheap and flimsy",
       "arrived damaged", "is far too noisy", "does not do what it promises", "is uncomfortable to use",
       "fell apart quickly", "was a disappointment"]
GOOD_END = ["Highly recommend.", "Would buy again.", "Five stars.", "Love it.", "My family loves it too."]
BAD_END = ["Do not buy.", "Returning it.", "One star.", "Avoid this one.", "Very disappointed."]
NEUTRAL = ["I used it for a month.", "Bought it as a gift.", "Ordered the blue one.", "Delivery took four days.",
           "I compared several models first.", ""]


class ProjectExistsError(PotatoError):
    """`potato init` would overwrite a project's file."""


class ProjectWriteError(PotatoError):
    """`potato init` cannot write into the folder it was given."""


AGENT_CONFIG = """\
# "Agent Steps": mark the first step where a coding agent's session goes wrong, and train a step
# classifier (a process reward model) on this machine that suggests it. Start it with:
#   potato start {config}
annotation_task_name: "Agent Steps"
task_dir: "."
data_files:
  - "data/sessions.json"
item_properties:
  id_key: "id"
  text_key: "task"
output_annotation_dir: "annotation_output"
admin_api_key: "{admin_key}"

instance_display:
  fields:
    - key: "task"
      type: "text"
      label: "Task"
    - key: "steps"
      type: "coding_trace"
      label: "The agent's session"

annotation_schemes:
  - annotation_type: "process_reward"
    name: "first_error"
    description: "Mark the first step that goes wrong (every step correct if none does)"
    steps_key: "steps"
    mode: "first_error"

model_training:
  enabled: true
  max_wall_seconds: 3600
  # The default trainer counts words, so it reads each step alone; an LLM trainer
  # (hf-llm-classification) reads the session before it too: remove this line for one.
  step_context_chars: 0
  writeback:
    schemas: ["first_error"]
    include_unlabeled: true
"""

PREFERENCE_CONFIG = """\
# "Answer Preference": compare two answers to a customer's question, and train a preference model (a
# reward model, LoRA on an LLM: pip install 'potato-annotation[train-llm]') that suggests the better
# one. Start it with:  potato start {config}
annotation_task_name: "Answer Preference"
task_dir: "."
data_files:
  - "data/comparisons.json"
item_properties:
  id_key: "id"
  text_key: "responses"
output_annotation_dir: "annotation_output"
admin_api_key: "{admin_key}"

instance_display:
  fields:
    - key: "prompt"
      type: "text"
      label: "The customer asks"
    - key: "responses"
      type: "text"
      label: "Two answers"

annotation_schemes:
  - annotation_type: "pairwise"
    name: "better"
    description: "Which answer helps the customer more?"
    mode: "binary"
    items_key: "responses"
    labels: ["Answer A", "Answer B"]
    allow_tie: true
    tie_label: "Equally helpful"

model_training:
  enabled: true
  max_wall_seconds: 3600
  trainer: "hf-llm-preference"
  writeback:
    schemas: ["better"]
    include_unlabeled: true
"""

TASKS = ["Fix the failing date parser test", "Add retry logic to the HTTP client", "Make the CSV export keep "
         "unicode", "Speed up the slow search query", "Fix the login redirect loop", "Add a --dry-run flag to the "
         "deploy script", "Stop the cache from serving stale prices", "Handle empty uploads without a crash"]
RIGHT_STEPS = [("I read the failing test and the module it covers.", "Read", "tests/test_module.py"),
               ("Running the test suite first to see the failure.", "Bash", "pytest -q"),
               ("The bug is an off-by-one in the loop; I fix it and explain why.", "Edit", "src/module.py"),
               ("I add a regression test for the empty case.", "Edit", "tests/test_module.py"),
               ("All tests pass now; I summarise the change for review.", "Bash", "pytest -q"),
               ("I check the docs for the config option before changing it.", "Read", "docs/config.md")]
WRONG_STEPS = [("I delete the failing test so the suite is green.", "Bash", "rm tests/test_module.py"),
               ("Guessing the config value without reading the docs.", "Edit", "config.yaml"),
               ("Skipping the tests, I comment out the assertion.", "Edit", "tests/test_module.py"),
               ("I force push over the main branch to save time.", "Bash", "git push --force origin main"),
               ("I hardcode the expected value so the check passes.", "Edit", "src/module.py"),
               ("The error is probably flaky; I disable the check and move on.", "Edit", "ci.yaml")]
QUESTIONS = ["How do I reset my password?", "Can I change the delivery address after ordering?",
             "Why was I charged twice?", "How do I cancel my subscription?", "Where is my refund?",
             "Can I return an opened item?", "How do I update my card details?", "Is there a student discount?"]
HELPFUL = ["Thanks for asking! Open Settings, choose Security, then follow the reset link we email you.",
           "Happy to help: you can change it from the order page until it ships; here is how, step by step.",
           "Sorry about that. I have checked your account, refunded the duplicate charge, and it arrives in 3 days.",
           "Of course. Go to Account, then Subscription, then Cancel; you keep access until the period ends.",
           "Good question. Refunds take five working days; I can see yours was sent on Monday.",
           "Yes, within 30 days. Print the free label from your orders page and drop it at any post office."]
UNHELPFUL = ["Read the FAQ.", "Not possible.", "Contact your bank, not us.", "I don't know.",
             "Figure it out yourself.", "We are busy, try later."]


def agent_sessions(n: int = 120, seed: int = 11) -> list[tuple[dict[str, Any], Optional[int]]]:
    """The agent-steps example's items, each with the place (1 = the agent's first step) of its first
    wrong step, or None: a third of the sessions go right throughout; from the first wrong step on
    every step is a wrong one, as a session that went wrong seldom recovers unaided."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        length = rng.randint(3, 6)
        first = None if rng.random() < 1 / 3 else rng.randint(1, length)
        steps: list[dict[str, Any]] = [{"role": "user", "content": rng.choice(TASKS) + "."}]
        for place in range(1, length + 1):
            text, tool, target = rng.choice(WRONG_STEPS if first is not None and place >= first else RIGHT_STEPS)
            call = {"tool": tool, "input": {"command": target} if tool == "Bash" else {"file_path": target}}
            steps.append({"role": "assistant", "content": text, "tool_calls": [call]})
        out.append(({"id": f"session-{i:04d}", "task": steps[0]["content"], "steps": steps}, first))
    return out


def comparisons(n: int = 150, seed: int = 13) -> list[tuple[dict[str, Any], str]]:
    """The preference example's items, each with the answer a careful annotator gives: the helpful
    answer is better (A or B, in turn at random), and one pair in seven holds two helpful ones (a tie)."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        question = rng.choice(QUESTIONS)
        if rng.random() < 1 / 7:
            responses, answer = rng.sample(HELPFUL, 2), "tie"
        else:
            good, bad = rng.choice(HELPFUL), rng.choice(UNHELPFUL)
            first = rng.random() < 0.5
            responses, answer = ([good, bad], "A") if first else ([bad, good], "B")
        out.append(({"id": f"pair-{i:04d}", "prompt": question, "responses": responses}, answer))
    return out


def reviews(n: int = 300, seed: int = 7) -> list[dict[str, str]]:
    """The example's items, the same on every machine (seeded)."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        positive = rng.random() < 0.5
        product = rng.choice(PRODUCTS)
        body = rng.choice(GOOD if positive else BAD)
        end = rng.choice(GOOD_END if positive else BAD_END)
        text = " ".join(part for part in [f"The {product} {body}.", rng.choice(NEUTRAL), end] if part)
        out.append({"id": f"review-{i:04d}", "text": text})
    return out


@dataclass(frozen=True)
class Example:
    """One example project: its config (``{admin_key}`` and ``{config}`` filled in), its items' file."""

    name: str
    title: str
    config: str
    data_file: str
    items: Callable[[], list[dict[str, Any]]]
    what: str
    """What there is to do, for `potato init`'s first line: "300 reviews to label"."""


EXAMPLES = {
    "reviews": Example("reviews", "Review Sentiment", CONFIG, "data/reviews.json", reviews, "300 reviews to label"),
    "agent-steps": Example("agent-steps", "Agent Steps", AGENT_CONFIG, "data/sessions.json",
                           lambda: [item for item, _ in agent_sessions()], "120 agent sessions to mark"),
    "preference": Example("preference", "Answer Preference", PREFERENCE_CONFIG, "data/comparisons.json",
                          lambda: [item for item, _ in comparisons()], "150 pairs of answers to compare"),
}
"""Every example `potato init --example` writes, by name; examples/<name> holds each."""


def config_text(admin_key: str, shown_path: str, example: str = "reviews") -> str:
    """An example's config.yaml; ``shown_path`` is the path its start line names."""
    return EXAMPLES[example].config.format(admin_key=admin_key, config=shown_path)


def data_text(example: str = "reviews") -> str:
    return json.dumps(EXAMPLES[example].items(), indent=1, ensure_ascii=False) + "\n"


def write_example(folder: Path, admin_key: str, shown_path: str, example: str = "reviews") -> tuple[Path, Path]:
    """Write an example into ``folder`` (made if missing): config.yaml, readable by its owner alone
    since it holds the admin key, and its items' file. Nothing is overwritten, and a write that
    fails halfway takes back what it wrote. Returns (config, data)."""
    config, data = folder / "config.yaml", folder / EXAMPLES[example].data_file
    there = [path for path in (config, data) if path.exists()]
    if there:
        raise ProjectExistsError(f"{there[0]} already exists, and potato init does not overwrite a project; "
                                 "name another folder, or move that file away first")
    written: list[Path] = []
    try:
        data.parent.mkdir(parents=True, exist_ok=True)
        for path, text, mode in ((data, data_text(example), 0o644),
                                 (config, config_text(admin_key, shown_path, example), 0o600)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            written.append(path)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
    except OSError as exc:
        for path in written:
            path.unlink()
        where = exc.filename or folder
        raise ProjectWriteError(f"cannot write the example project into {folder}: {exc.strerror} ({where}); "
                                "name a folder you can write to") from None
    return config, data
