"""Small data sets of different shapes, plainly worded, for the zero-shot trainer's quality tests: a
balanced two-label set of one-sentence reviews, a three-topic set, a skewed two-label set, and a
multiselect set. Each is made here, deterministically: the truth is what the words say.

Each set is (scheme as a job's ``schemes`` entry, [(id, text, label)]), label a string (radio) or a
list (multiselect).
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Dict, List, Tuple, Union

Row = Tuple[str, str, Union[str, List[str]]]
DataSet = Tuple[Dict[str, Any], List[Row]]

SUBJECTS = ["service", "food", "staff", "music", "dessert", "wine", "soup", "pasta", "coffee", "waiter",
            "terrace", "bread"]
GOOD = ["great", "fantastic", "excellent", "wonderful", "lovely", "superb", "delicious", "friendly"]
BAD = ["terrible", "boring", "awful", "dreadful", "bland", "rude", "cold", "disappointing"]


def plain_reviews(n: int = 120) -> DataSet:
    """"The service was great and the food fantastic." / "The service was terrible and the food
    boring.": alternately positive and negative, no sentence twice."""
    rng = random.Random(7)
    pairs = [(a, b) for a, b in itertools.permutations(SUBJECTS, 2)]
    rng.shuffle(pairs)
    rows: List[Row] = []
    for i in range(n):
        a, b = pairs[i]
        words = GOOD if i % 2 == 0 else BAD
        first, second = words[i % len(words)], words[(i * 3 + 1) % len(words)]
        rows.append((f"p{i:03d}", f"The {a} was {first} and the {b} {second}.",
                     "positive" if i % 2 == 0 else "negative"))
    scheme = {"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
              "description": "Is this restaurant review positive or negative?"}
    return scheme, rows


TOPICS = {
    "sports": ["The team won the football match in the final minute.", "She ran the marathon in under three hours.",
               "The tennis player lost the final in five sets.", "Our striker scored twice in the second half.",
               "The swimmer broke the world record in the pool.", "The coach picked a new goalkeeper for the game.",
               "The cyclists raced up the mountain stage.", "The basketball team signed a new player.",
               "The boxer won the fight in the third round.", "Fans cheered as the runner crossed the finish line."],
    "weather": ["Heavy rain is expected across the north tomorrow.", "It will be sunny and warm all weekend.",
                "Snow closed the mountain roads this morning.", "Strong winds brought down trees overnight.",
                "A thick fog covered the city at dawn.", "Temperatures will drop below freezing tonight.",
                "Thunderstorms are forecast for the afternoon.", "The heatwave will last until Friday.",
                "Light showers will clear by midday.", "Frost covered the fields after a cold night."],
    "cooking": ["Fry the onions in butter until golden.", "Bake the bread for forty minutes at high heat.",
                "Stir the sauce and add a pinch of salt.", "Boil the pasta in salted water for ten minutes.",
                "Chop the carrots and add them to the soup.", "Whisk the eggs with sugar for the cake.",
                "Roast the chicken with garlic and lemon.", "Simmer the beans slowly for an hour.",
                "Knead the dough until it is smooth.", "Grill the fish and serve it with rice."],
}


def topics() -> DataSet:
    """Thirty one-sentence texts about sports, the weather or cooking, ten each, interleaved."""
    rows: List[Row] = []
    for k in range(10):
        for topic, texts in TOPICS.items():
            rows.append((f"t{len(rows):03d}", texts[k], topic))
    scheme = {"name": "topic", "annotation_type": "radio", "labels": list(TOPICS),
              "description": "What is this text about?"}
    return scheme, rows


def skewed_tickets(n: int = 60) -> DataSet:
    """Support messages, one in four urgent ("The site is down and customers cannot pay."), the rest
    routine ("Could you update my billing address when you have time?")."""
    urgent = ["The site is down and customers cannot pay.", "Our server is on fire, we lost all data!",
              "Production crashed and nobody can log in right now.", "Payments fail for every customer since noon.",
              "The database is corrupted and orders are lost.", "Emergency: the app deletes user accounts."]
    routine = ["Could you update my billing address when you have time?", "How do I change my profile picture?",
               "Please send me last month's invoice again.", "Is there a dark mode in the settings?",
               "Can I add a second user to my account?", "Where can I read the documentation?",
               "Thanks for the quick help last week.", "Could you rename my project to Garden?"]
    rows: List[Row] = []
    for i in range(n):
        if i % 4 == 3:
            rows.append((f"s{i:03d}", urgent[(i // 4) % len(urgent)], "urgent"))
        else:
            rows.append((f"s{i:03d}", routine[i % len(routine)], "routine"))
    scheme = {"name": "priority", "annotation_type": "radio", "labels": ["urgent", "routine"],
              "description": "Does this support message need help at once (urgent) or can it wait (routine)?"}
    return scheme, rows


def mentions(n: int = 32) -> DataSet:
    """Shop reviews that mention the price, the delivery, both or neither, in plain words."""
    price = ["It was cheap.", "The price was far too high.", "Good value for the money."]
    delivery = ["Delivery took two weeks.", "The parcel arrived the next day.", "The courier lost the box."]
    other = ["The colour is blue.", "It has two buttons.", "My sister has one too."]
    rows: List[Row] = []
    for i in range(n):
        has = [label for label, on in (("price", i % 2 == 0), ("delivery", (i // 2) % 2 == 0)) if on]
        parts = [other[i % 3]]
        if "price" in has:
            parts.append(price[i % 3])
        if "delivery" in has:
            parts.append(delivery[(i // 3) % 3])
        rows.append((f"m{i:03d}", " ".join(parts), has))
    scheme = {"name": "mentions", "annotation_type": "multiselect", "labels": ["price", "delivery"],
              "description": "What does this shop review talk about?"}
    return scheme, rows
