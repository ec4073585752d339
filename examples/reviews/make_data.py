"""Regenerate data/reviews.json: synthetic product reviews, deterministic (seeded).

The sentiment words are clear enough that a tf-idf model learns them from a few dozen labels,
which is what the example project and the tests need; nothing here is real customer text.
"""

import json
import random
from pathlib import Path

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


def make(n: int = 300, seed: int = 7) -> list:
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


if __name__ == "__main__":
    path = Path(__file__).parent / "data" / "reviews.json"
    path.write_text(json.dumps(make(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")
