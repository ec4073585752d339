"""AI help from an LLM server (``ai_support`` with an OpenAI-compatible ``endpoint_type``), the pure
part: what the server is asked about an item, how its reply is read, and when a call may be made.

The question is upstream's option-highlighting prompt in substance: the item's text (fenced, so
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

OPTION_PROMPT = """TASK: Pick the options most likely to be right for this text.

Text:
<user_content>
{text}
</user_content>

Question: {question}
Options: {options}
Pick exactly {top_k} of the options (fewer if there are fewer). Use the option names exactly as listed.

Answer with JSON only, for example: {{"highlighted_options": [{example}], "confidence": 0.7}}"""

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class NoAnswer(ValueError):
    """The reply names none of the options: the annotator gets no highlighting for this item."""


def option_messages(text: str, question: str, options: Sequence[str], top_k: int) -> list[dict[str, str]]:
    """The chat messages that ask which ``top_k`` of ``options`` fit ``text``."""
    k = max(1, min(top_k, len(options)))
    example = ", ".join(json.dumps(o) for o in options[:k])
    body = OPTION_PROMPT.format(text=text.replace("</user_content>", "< /user_content>"), question=question or
                                "Which options fit the text?", options=", ".join(options), top_k=k, example=example)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


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
