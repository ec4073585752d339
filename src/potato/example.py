"""The example project, "Review Sentiment": what `potato init` writes, and what examples/reviews holds.

It lives in the package so that an admin who installed Potato with pip (and so has no checkout with
an examples folder) starts from the same project the README and the tutorial use. The reviews are
synthetic and seeded: their sentiment words are clear enough that a tf-idf model learns them from a
few dozen labels, and nothing here is real customer text.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

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


def config_text(admin_key: str, shown_path: str) -> str:
    """The example's config.yaml; ``shown_path`` is the path its start line names."""
    return CONFIG.format(admin_key=admin_key, config=shown_path)


def data_text() -> str:
    return json.dumps(reviews(), indent=1, ensure_ascii=False) + "\n"


def write_example(folder: Path, admin_key: str, shown_path: str) -> tuple[Path, Path]:
    """Write the example into ``folder`` (made if missing): config.yaml, readable by its owner alone
    since it holds the admin key, and data/reviews.json. Nothing is overwritten, and a write that
    fails halfway takes back what it wrote. Returns (config, data)."""
    config, data = folder / "config.yaml", folder / "data" / "reviews.json"
    there = [path for path in (config, data) if path.exists()]
    if there:
        raise ProjectExistsError(f"{there[0]} already exists, and potato init does not overwrite a project; "
                                 "name another folder, or move that file away first")
    written: list[Path] = []
    try:
        data.parent.mkdir(parents=True, exist_ok=True)
        for path, text, mode in ((data, data_text(), 0o644), (config, config_text(admin_key, shown_path), 0o600)):
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
