"""AI help from an LLM server (``ai_support`` with an OpenAI-compatible ``endpoint_type``), the pure
part: what the server is asked about an item and how its reply is read.

Four questions, as upstream asks them: which options fit (option highlighting), a hint that guides
without giving the answer away, the words of the text that speak for each option (keywords), and a
reason for and against each option (rationales). The option question is upstream's prompt in
substance: the item's text (fenced, so
that text which looks like instructions is read as the item), the question's description, its
options, and how many to pick, answered as JSON. Small models often answer in prose or wrap the
JSON in a code fence; the reply is read leniently, but only options that exist count, each once,
so a reply that names none gives no highlighting, never a guess.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable, Sequence

SYSTEM = ("You help people label text. You pick the options that most likely fit a text, and answer with "
          "JSON only.")

FRAME = """TASK: {task}

Text:
<user_content>
{{text}}
</user_content>

Question: {{question}}
Options: {{options}}
{steps}

Answer with JSON only, for example: {answer}"""
"""Every question's shape: the task, the item fenced, the question and its options, what to do, and
an example of the JSON wanted (filled in per question with the item's own values)."""

OPTION_PROMPT = FRAME.format(
    task="Pick the options most likely to be right for this text.",
    steps="Pick exactly {top_k} of the options (fewer if there are fewer). Use the option names exactly as listed.",
    answer='{{"highlighted_options": [{example}], "confidence": 0.7}}')

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
OBJECT = re.compile(r"\{.*\}", re.DOTALL)


HELP_KINDS = ("hint", "keyword", "rationale")
"""Upstream's ``ai_config.include`` assistants, each a button beside a question."""

HELP_PROMPTS = {
    "hint": FRAME.format(
        task="Write a short hint that helps someone answer a question about this text, without giving the answer.",
        steps="Say what in the text to look at and how to decide, in one or two sentences. Name the option you think "
              "fits.",
        answer='{{"hint": "Look at how the writer describes ...", "suggestive_choice": {example}}}'),
    "keyword": FRAME.format(
        task="Find the words in this text that point to each option.",
        steps="For each option, list one to five words or short phrases copied exactly from the text. Only words "
              "that appear in the text.",
        answer='{{"label_keywords": [{{"label": {example}, "keywords": ["..."]}}]}}'),
    "rationale": FRAME.format(
        task="Explain, for each option, why it might apply to this text.",
        steps="Give every option a short, balanced reason: what in the text speaks for it or against it.",
        answer='{{"rationales": [{{"label": {example}, "reasoning": "..."}}]}}'),
}


class NoAnswer(ValueError):
    """The reply names none of the options: the annotator gets no highlighting for this item."""


def option_messages(text: str, question: str, options: Sequence[str], top_k: int) -> list[dict[str, str]]:
    """The chat messages that ask which ``top_k`` of ``options`` fit ``text``."""
    k = max(1, min(top_k, len(options)))
    example = ", ".join(json.dumps(o) for o in options[:k])
    body = OPTION_PROMPT.format(text=_fenced(text), question=question or
                                "Which options fit the text?", options=", ".join(options), top_k=k, example=example)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def help_messages(kind: str, text: str, question: str, options: Sequence[str]) -> list[dict[str, str]]:
    """The chat messages of one of ``HELP_KINDS`` about ``text``."""
    body = HELP_PROMPTS[kind].format(text=_fenced(text), question=question or "Which options fit the text?",
                                     options=", ".join(options), example=json.dumps(options[0] if options else ""))
    return [{"role": "system", "content": HELP_SYSTEM}, {"role": "user", "content": body}]


HELP_SYSTEM = "You help people label text. You answer with JSON only."


def _fenced(text: str) -> str:
    return text.replace("</user_content>", "< /user_content>")


def read_help(kind: str, reply: str, options: Sequence[str], text: str) -> dict[str, Any]:
    """The reply to a ``kind`` question as the page shows it, or :class:`NoAnswer`:

    - hint: ``{"hint": str, "suggestion": option or None}`` (prose is taken as the hint itself);
    - keyword: ``{"keywords": [{"label", "words"}]}``, only words found in the text;
    - rationale: ``{"rationales": [{"label", "reasoning"}]}`` (prose: one reasoning, label "").
    Labels are the question's options as they are spelt; anything else is dropped."""
    value = _first_object(reply)
    if kind == "hint":
        hint = value.get("hint") if value is not None else None
        if not isinstance(hint, str) or not hint.strip():
            hint = "" if value is not None else FENCE.sub("", reply)
        hint = " ".join(str(hint).split())[:600]
        if not hint:
            raise NoAnswer(f"the reply holds no hint: {shorten(reply)}")
        chosen = _known([value.get("suggestive_choice")], options) if value is not None else []
        return {"hint": hint, "suggestion": chosen[0] if chosen else None}
    if kind == "keyword":
        found = []
        for entry in _entries(value, "label_keywords"):
            label = _known([entry.get("label")], options)
            words = entry.get("keywords")
            seen = [w.strip() for w in words if isinstance(w, str) and w.strip() and w.strip().lower() in text.lower()] \
                if isinstance(words, list) else []
            if label and seen:
                found.append({"label": label[0], "words": list(dict.fromkeys(seen))[:5]})
        if not found:
            raise NoAnswer(f"the reply names no words of the text for the options: {shorten(reply)}")
        return {"keywords": found}
    rationales = []
    for entry in _entries(value, "rationales"):
        label = _known([entry.get("label")], options)
        reasoning = entry.get("reasoning")
        if label and isinstance(reasoning, str) and reasoning.strip():
            rationales.append({"label": label[0], "reasoning": " ".join(reasoning.split())[:600]})
    if not rationales and value is None:  # prose: the reasoning as a whole, for no option in particular
        prose = " ".join(FENCE.sub("", reply).split())[:600]
        if prose:
            rationales.append({"label": "", "reasoning": prose})
    if not rationales:
        raise NoAnswer(f"the reply gives no reason for any option: {shorten(reply)}")
    return {"rationales": rationales}


def _first_object(reply: str) -> dict[str, Any] | None:
    """The first JSON object in the reply (in a code fence, within prose, or the whole of it)."""
    for candidate in (*FENCE.findall(reply), *OBJECT.findall(reply), reply):
        try:
            value = json.loads(candidate.strip())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _entries(value: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    found = value.get(key) if value is not None else None
    return [entry for entry in found if isinstance(entry, dict)] if isinstance(found, list) else []


def read_options(reply: str, options: Sequence[str], top_k: int) -> list[str]:
    """The options the reply picks, in its order, at most ``top_k``: from its JSON
    (``highlighted_options``, or any list of names in it), else from the option names it mentions.
    Names match without regard to case; :class:`NoAnswer` when none does."""
    picked = _from_json(reply, options)
    if not picked:
        picked = _mentioned(reply, options)
    if not picked:
        raise NoAnswer(f"the reply names none of the options ({', '.join(options)}): {shorten(reply)}")
    return picked[:max(1, top_k)]


def _from_json(reply: str, options: Sequence[str]) -> list[str]:
    for candidate in (*FENCE.findall(reply), *OBJECT.findall(reply), reply):
        try:
            value = json.loads(candidate.strip())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            value = value.get("highlighted_options", next((v for v in value.values() if isinstance(v, list)), None))
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            names = _known(value, options)
            if names:
                return names
    return []


def _known(values: Iterable[Any], options: Sequence[str]) -> list[str]:
    """The values that are options (case-insensitively), as the options spell them, each once."""
    by_lower = {o.lower(): o for o in options}
    out: list[str] = []
    for value in values:
        name = by_lower.get(str(value).strip().lower())
        if name is not None and name not in out:
            out.append(name)
    return out


def _mentioned(reply: str, options: Sequence[str]) -> list[str]:
    """Options named as whole words in prose, first mentioned first."""
    found: list[tuple[int, str]] = []
    for option in options:
        match = re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", reply, re.IGNORECASE)
        if match:
            found.append((match.start(), option))
    return [name for _, name in sorted(found)]


def prompt_digest(model: str, messages: Sequence[dict[str, str]], temperature: float, max_tokens: int) -> str:
    """What an answer is kept under, with the item and the scheme: a changed prompt, model or setting
    asks again rather than reuse an answer to another question."""
    body = json.dumps({"model": model, "messages": list(messages), "temperature": temperature,
                       "max_tokens": max_tokens}, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def shorten(text: str, limit: int = 120) -> str:
    """A reply or an error body quoted on the admin page, one line and cut short."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + "..."


JUDGE_SYSTEM = "You are an impartial expert annotator. You answer with JSON only."
JUDGE_HEAD = "You are an impartial expert annotator. Read the text and pick the one label that fits it best."


def judge_messages(prompt: str, text: str, description: str, options: Sequence[str]) -> list[dict[str, str]]:
    """What a judge (``judge_calibration``) is asked about one item and question: the admin's prompt,
    with {text}, {labels} and {description} filled in where it writes them (upstream's placeholders;
    other braces are left as written), then the item fenced, the question, its options and the JSON
    wanted. A prompt that places {text} itself still gets the fenced copy, which is the one to read."""
    labels = ", ".join(options)
    head = (prompt or JUDGE_HEAD).strip()
    for name, value in (("{labels}", labels), ("{description}", description), ("{text}", text)):
        head = head.replace(name, value)
    body = FRAME.format(task=head.replace("{", "{{").replace("}", "}}"), steps="Pick exactly one option. Use its name exactly as listed.",
                        answer='{{"label": {example}, "reasoning": "one sentence"}}')
    return [{"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": body.format(text=_fenced(text), question=description or "Which label fits?",
                                                    options=labels,
                                                    example=json.dumps(options[0] if options else ""))}]


def read_judge_label(reply: str, options: Sequence[str]) -> str:
    """The one option a judge's reply picks: its JSON ``label`` (any case), else the first option its
    JSON or prose names; :class:`NoAnswer` when none does (a failed draw, counted as no agreement)."""
    value = _first_object(reply)
    if value is not None:
        named = _known([value.get("label")], options)
        if named:
            return named[0]
    return read_options(reply, options, 1)[0]
