"""LLM judges checked against people (``judge_calibration``), the pure part: the judges' votes, the
items people label blind, the gold labels, and the figures that say how far a judge can be trusted.

Each judge labels every item k times at a temperature above 0. Its prediction is the label it drew
most often, and its confidence is the share of the k draws that gave that label: an empirical vote
fraction, not a probability the model reports. A judge that says the same thing 5 times out of 5 is
"sure"; one that splits 3 to 2 is not. A draw that gave no usable answer (an error, a reply naming no
option) still counts in k but agrees with nothing, so a judge that often fails looks less sure, not
more. Ties go to the label drawn first, so the same draws always give the same prediction.

People label a random or stratified sample of the items without seeing the judges' answers; their
labels make the gold. What an admin reads per judge, over the sampled items that have gold:

- accuracy: how often the judge's prediction equals the gold, with a 95% Wilson interval (the
  sample is small, and the interval says how much the figure could move);
- precision, recall and F1 per option, and their unweighted mean over the options people used
  (macro F1), so a judge that is right only on the common option does not look good;
- the confusion matrix (rows: gold, columns: the judge), which says which options it mixes up;
- calibration: whether confidence means what it says. Items are put in equal-width bins by
  confidence; in a calibrated judge the items it is 80% sure of are right 80% of the time. The
  expected calibration error (ECE) is the gap between the two, weighted by how many items each bin
  holds, and the Brier score the mean squared gap between confidence and being right (0 is best);
- for ordinal questions (a likert scale), the mean absolute error in scale steps, since being one
  step off is less wrong than being four off.

Agreement between raters uses Cohen's kappa for each pair (people with judges, judges with judges,
people with people: the last says how hard the question is for people, the bar a judge is held to)
and Fleiss' kappa over every rater at once. Kappa is agreement beyond what chance gives from each
rater's label frequencies: 0 is chance, 1 is perfect. It is undefined (None) where chance already
agrees fully, i.e. every rater gave one and the same label throughout; a number there would be a
division by zero dressed up as a figure.

Single-choice questions only: a label is one option name.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any, Mapping, Sequence

from potato.study.holdout import Proportion

STRATEGIES = ("all", "random", "stratified")
GOLD_RULES = ("single", "majority")
_EDGE = 1e-9
"""A vote fraction on a bin's edge (3/5 with 5 bins) belongs to the upper bin even when its float is a
hair below the edge."""


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def vote(samples: Sequence[str | None]) -> tuple[str | None, float]:
    """The judge's prediction from its k draws and how sure it was. A failed draw (None) counts in k
    but agrees with nothing, so failures lower the confidence rather than vanish; a tie goes to the
    label drawn first so that the same draws always give the same prediction."""
    counts: Counter[str] = Counter(label for label in samples if label is not None)
    if not counts:
        return None, 0.0
    top = max(counts.values())
    modal = next(label for label in samples if label is not None and counts[label] == top)
    return modal, top / len(samples)


def _allocate(sizes: list[int], total: int) -> list[int]:
    """Proportional shares of ``total`` over strata of ``sizes`` (largest remainder, so the shares add
    up exactly; ties go to the stratum seen first), then one for every stratum left out, taken from
    the stratum that got most over its exact share, when there are enough to go round."""
    whole = sum(sizes)
    exact = [total * size / whole for size in sizes]
    shares = [math.floor(quota) for quota in exact]
    by_remainder = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in by_remainder[:total - sum(shares)]:
        shares[i] += 1
    if total >= len(sizes):
        for empty in [i for i, share in enumerate(shares) if share == 0]:
            donor = max((i for i, share in enumerate(shares) if share > 1),
                        key=lambda i: (shares[i] - exact[i], -i))
            shares[donor] -= 1
            shares[empty] = 1
    return shares


def draw_sample(ids: Sequence[str], size: int, strategy: str, seed: int,
                strata: Mapping[str, str] | None = None) -> list[str]:
    """The items people label blind. Random draws are seeded so that a restarted server draws the
    same items; a stratified draw keeps rare strata in the sample, which a small random one can miss
    entirely. The result keeps the items' own order, whatever the draw's."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown sampling strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if strategy == "all":
        return list(ids)
    if size < 0:
        raise ValueError(f"sample size must not be negative, got {size}")
    total = min(size, len(ids))
    if strategy == "random":
        chosen = set(random.Random(seed).sample(range(len(ids)), total))
        return [item for index, item in enumerate(ids) if index in chosen]
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(ids):
        groups.setdefault((strata or {}).get(item, ""), []).append(index)
    chosen = set()
    if total:
        names = list(groups)
        for name, share in zip(names, _allocate([len(groups[name]) for name in names], total)):
            chosen.update(random.Random(f"{seed}:{name}").sample(groups[name], share))
    return [item for index, item in enumerate(ids) if index in chosen]


def gold_labels(humans: Sequence[tuple[str, Mapping[str, str]]], rule: str) -> dict[str, str]:
    """The label a judge is held to per item. Under 'majority', an item whose people split evenly at
    the top has no gold: picking one side would grade the judge on a coin toss."""
    if rule not in GOLD_RULES:
        raise ValueError(f"unknown gold rule {rule!r}; expected one of {', '.join(GOLD_RULES)}")
    if rule == "single":
        gold: dict[str, str] = {}
        for _, labels in humans:
            for item, label in labels.items():
                if isinstance(label, str):
                    gold.setdefault(item, label)
        return gold
    votes: dict[str, Counter[str]] = {}
    for _, labels in humans:
        for item, label in labels.items():
            if isinstance(label, str):
                votes.setdefault(item, Counter())[label] += 1
    out = {}
    for item, counts in votes.items():
        [(label, top), *rest] = counts.most_common(2)
        if not rest or rest[0][1] < top:
            out[item] = label
    return out


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Two raters' agreement beyond chance on the same items. None where it cannot be told: under 2
    items, or where chance agreement is already total (both gave one and the same label throughout)."""
    if len(a) != len(b):
        raise ValueError(f"the two raters must label the same items, got {len(a)} and {len(b)} labels")
    n = len(a)
    if n < 2:
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Agreement beyond chance among all raters at once (Fleiss 1971). Every item needs the same
    number of raters, since the formula's chance term assumes it."""
    raters = {len(labels) for labels in ratings}
    if len(raters) > 1 or (raters and min(raters) < 2):
        raise ValueError(f"every item needs the same number of raters, at least 2; got {sorted(raters)}")
    if len(ratings) < 2:
        return None
    m, n = raters.pop(), len(ratings)
    totals: Counter[str] = Counter()
    agreement = 0.0
    for labels in ratings:
        counts = Counter(labels)
        totals.update(counts)
        agreement += (sum(c * c for c in counts.values()) - m) / (m * (m - 1))
    p_bar = agreement / n
    p_e = sum((count / (n * m)) ** 2 for count in totals.values())
    if p_e >= 1:
        return None
    return (p_bar - p_e) / (1 - p_e)


def _labels_seen(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> list[str]:
    """The options, then any other label seen (a gold label no longer an option, say), so that no
    case falls out of the matrix."""
    out = list(labels)
    known = set(out)
    for pair in pairs:
        for label in pair:
            if label not in known:
                known.add(label)
                out.append(label)
    return out


def confusion(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> dict[str, Any]:
    """Which options the judge mixes up: rows are gold, columns the judge's prediction."""
    names = _labels_seen(pairs, labels)
    at = {label: index for index, label in enumerate(names)}
    rows = [[0] * len(names) for _ in names]
    for gold, predicted in pairs:
        rows[at[gold]][at[predicted]] += 1
    return {"labels": names, "rows": rows}


def per_label(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> dict[str, Any]:
    """Precision, recall and F1 per option. A figure with nothing to stand on is None, not 0: a judge
    that never predicts an option has no precision on it. Macro F1 averages over the options people
    used, counting an option the judge never predicts as F1 0, so missing it entirely costs."""
    names = _labels_seen(pairs, labels)
    gold_count = Counter(gold for gold, _ in pairs)
    predicted_count = Counter(predicted for _, predicted in pairs)
    hits = Counter(gold for gold, predicted in pairs if gold == predicted)
    out: dict[str, dict[str, Any]] = {}
    f1s = []
    for label in names:
        precision = hits[label] / predicted_count[label] if predicted_count[label] else None
        recall = hits[label] / gold_count[label] if gold_count[label] else None
        f1 = None
        if precision is not None and recall is not None:
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if gold_count[label]:
            f1s.append(f1 or 0.0)
        out[label] = {"precision": _round(precision), "recall": _round(recall), "f1": _round(f1),
                      "support": gold_count[label]}
    macro = sum(f1s) / len(f1s) if pairs and f1s else None
    return {"labels": out, "macro_f1": _round(macro)}


def calibration(confidences: Sequence[float], correct: Sequence[bool], n_bins: int) -> dict[str, Any]:
    """Whether a judge's confidence means what it says: per confidence bin, how sure it was against how
    often it was right; ECE is the gap weighted by the bins' sizes, Brier the mean squared gap per item."""
    if len(confidences) != len(correct):
        raise ValueError(f"one confidence per case: got {len(confidences)} confidences, {len(correct)} cases")
    if n_bins < 1:
        raise ValueError(f"at least one bin, got {n_bins}")
    if any(not 0 <= c <= 1 for c in confidences):
        raise ValueError("confidences must lie in [0, 1]")
    n = len(confidences)
    if not n:
        return {"ece": None, "brier": None, "bins": []}
    sums: dict[int, list[float]] = {}
    for c, right in zip(confidences, correct):
        index = min(math.floor(c * n_bins + _EDGE), n_bins - 1)
        acc = sums.setdefault(index, [0, 0.0, 0.0])
        acc[0] += 1
        acc[1] += c
        acc[2] += bool(right)
    ece = 0.0
    bins = []
    for index in sorted(sums):
        count, conf_sum, right_sum = sums[index]
        mean_conf, accuracy = conf_sum / count, right_sum / count
        ece += count / n * abs(accuracy - mean_conf)
        bins.append({"low": round(index / n_bins, 4), "high": round((index + 1) / n_bins, 4), "n": int(count),
                     "mean_confidence": round(mean_conf, 4), "accuracy": round(accuracy, 4)})
    brier = sum((c - bool(right)) ** 2 for c, right in zip(confidences, correct)) / n
    return {"ece": round(ece, 4), "brier": round(brier, 4), "bins": bins}


def mean_absolute_error(pairs: Sequence[tuple[str, str]], order: Sequence[str]) -> float | None:
    """How many scale steps off the judge is on average, for ordinal questions. A label off the scale
    has no distance, so its pair is left out rather than guessed."""
    at = {label: index for index, label in enumerate(order)}
    steps = [abs(at[gold] - at[predicted]) for gold, predicted in pairs if gold in at and predicted in at]
    return round(sum(steps) / len(steps), 4) if steps else None


def _kind(a_human: bool, b_human: bool) -> str:
    if a_human and b_human:
        return "human-human"
    return "human-llm" if a_human or b_human else "llm-llm"


Votes = Mapping[str, tuple[str | None, float]]
"""One judge's answers: item -> (modal label or None, confidence)."""


def _grade(votes: Votes, gold: Mapping[str, str], graded: Sequence[str], options: Sequence[str],
           ordinal: bool, n_bins: int) -> dict[str, Any]:
    """One judge's figures over the graded items it answered."""
    pairs: list[tuple[str, str]] = []
    confidences: list[float] = []
    no_answer = 0
    for item in graded:
        if item not in votes:
            continue
        label, confidence = votes[item]
        if label is None:
            no_answer += 1
            continue
        pairs.append((gold[item], label))
        confidences.append(confidence)
    correct = [g == p for g, p in pairs]
    scores = per_label(pairs, options)
    figures: dict[str, Any] = {
        "items": len(pairs), "no_answer": no_answer,
        "accuracy": Proportion(sum(correct), len(pairs)).to_json(),
        "per_label": scores["labels"], "macro_f1": scores["macro_f1"],
        "confusion": confusion(pairs, options), "calibration": calibration(confidences, correct, n_bins)}
    if ordinal:
        figures["mae"] = mean_absolute_error(pairs, options)
    return figures


def report(options: Sequence[str], ordinal: bool, judged: Mapping[str, Votes],
           humans: Sequence[tuple[str, Mapping[str, str]]], sample: Sequence[str], gold_rule: str,
           n_bins: int) -> dict[str, Any]:
    """One question's figures. Judges are graded only on sampled items with gold, the items people
    labelled blind; agreement uses every sampled item the two raters both labelled, gold or not. A
    judge's failed item (no modal label) is counted apart as no_answer rather than graded wrong, so
    that a flaky endpoint and a wrong model read differently. Fleiss' kappa needs every rater on an
    item, so it stands on fewer items than the pairs; fleiss_items says how many (0 under 2 raters)."""
    gold = gold_labels(humans, gold_rule)
    in_sample = list(dict.fromkeys(sample))
    graded = [item for item in in_sample if item in gold]
    judges = {model: _grade(votes, gold, graded, options, ordinal, n_bins) for model, votes in judged.items()}

    wanted = set(in_sample)
    raters: list[tuple[str, bool, dict[str, str]]] = [
        (name, True, {item: label for item, label in labels.items()
                      if item in wanted and isinstance(label, str)}) for name, labels in humans]
    raters += [(model, False, {item: label for item, (label, _) in votes.items()
                               if item in wanted and label is not None}) for model, votes in judged.items()]
    agreement = []
    for i, (a, a_human, a_labels) in enumerate(raters):
        for b, b_human, b_labels in raters[i + 1:]:
            both = [item for item in in_sample if item in a_labels and item in b_labels]
            kappa = cohen_kappa([a_labels[item] for item in both], [b_labels[item] for item in both])
            agreement.append({"a": a, "b": b, "kind": _kind(a_human, b_human), "items": len(both),
                              "kappa": _round(kappa)})

    everyone: list[str] = []
    if len(raters) >= 2:
        everyone = [item for item in in_sample if all(item in labels for _, _, labels in raters)]
    fleiss = fleiss_kappa([[labels[item] for _, _, labels in raters] for item in everyone])
    return {"sample": len(sample), "with_gold": len(graded), "judges": judges, "agreement": agreement,
            "fleiss_kappa": _round(fleiss), "fleiss_items": len(everyone)}
