"""``llm-zero-shot``: an instruct LLM suggests labels with no training, scored by its own likelihood.

torch and transformers (and gguf for a GGUF file) are imported inside functions, so this module is
standard library only and Python 3.8 safe, and a missing package is reported as ``Trainer '<name>'
could not be imported``.

For each item and schema the model reads one user turn, rendered with its own chat template
(``tokenizer.apply_chat_template``; a tokenizer without one gets the plain text and ``Answer:``), and
every candidate answer is scored by the model's log-likelihood of the answer's tokens as the
assistant's reply, end-of-turn included (so ``positive`` does not also score ``positive but...``).
Nothing is generated and no text is parsed: a label is never unreadable.

- radio: the answers are the label names; a softmax over their summed token log-likelihoods is
  each label's probability (the model's probability of that answer, given that it answers with one
  of the labels), the most probable label the prediction.
- multiselect: each label is its own yes/no question (``Does the label "x" apply?``), its
  probability the softmax of ``yes`` against ``no``, on at p >= 0.5 as for every multiselect
  trainer. A softmax across labels would make them compete, and at most one could pass 0.5.

Small models lean towards some answers whatever the text (SmolLM2-135M-Instruct says "positive" to
77 of 80 of the example's reviews, half of them negative), and the lean differs from data to data.
With ``calibrate`` (the default) each question's answers are rescaled before they are compared:

- when the run has labelled training items (never the holdout), a temperature and a bias per answer
  are fitted on up to ``calibration_items`` of them (:func:`~potato.training.trainers.
  calibration_maths.fit_answer_scaling`): the model's ranking of the texts stays, its threshold and
  its confidence are the labels'. Where the content-free correction misses the model's threshold
  (it left SmolLM2 at 0.58 on one set of plain reviews whose margins ranked every review right) the
  labels find it: 0.95 on the tests' 120 plain reviews, 0.85 content-free;
- without them, each answer's log-likelihood is corrected by the model's answer to content-free
  texts (:func:`bias_corrections`, "Calibrate Before Use", Zhao et al. 2021), which needs no labels.

run.log says which each schema got.

The user turn is :func:`default_prompt` (the scheme's description and its labels), or the
``prompt`` parameter with ``{text}`` (required), ``{labels}`` and ``{description}`` filled in;
for multiselect the yes/no question is added after it unless it says where (``{label}``).

``base_model`` is a Hugging Face Hub name (downloaded on the training host into its cache), a model
folder on the training host, or a ``.gguf`` file there (read with transformers' ``gguf_file=``, which
needs the ``gguf`` package; quantised GGUF weights are de-quantised on load). ``fit`` does nothing
(``learns_from_labels`` is False): a run needs no label at all, and where the holdout has labelled
items the worker scores its predictions on them like any run's.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from potato.training.job.failures import BadJob, ModelNotFound
from potato.training.job.results import Label
from potato.training.job.schemes import Scheme
from potato.training.trainers.base import (
    Example,
    JobItem,
    Param,
    Prediction,
    TrainContext,
    Trainer,
    labelled,
    multiselect_prediction,
    radio_prediction,
    write_labels_json,
)
from potato.training.trainers.calibration_maths import AnswerScaling, choose_answer_scaling
from potato.training.trainers.hub_download import download_shown
from potato.training.trainers.llm_memory import check_fits

DEFAULT_BASE_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
"""Small (0.5B parameters, about 1 GB), instruct-tuned and multilingual: a CPU can run it."""
TEXT = "{text}"
CONTENT_FREE = ("N/A", "", "[MASK]")
"""Texts that say nothing: what the model answers to them is its bias, not the item (calibration)."""
YES, NO = "yes", "no"
MIN_FIT_ITEMS = 8
"""Labelled training items a question needs, two different right answers among them, before its
temperature and biases are fitted on them; with fewer the content-free correction serves."""
QUANTIZE = ("none", "8bit", "4bit")
LOCAL_PREFIXES = ("/", ".", "~")


def default_prompt(description: str, labels: Sequence[str], multiselect: bool) -> str:
    """The user turn when the run names no ``prompt``: the scheme's question, its labels, the text."""
    question = description.strip() or ("Which labels apply to this text?" if multiselect
                                       else "Which label fits this text?")
    names = ", ".join(labels)
    if multiselect:
        return f"{question}\nPossible labels: {names}.\n\nText: {TEXT}"
    return f"{question}\nAnswer with exactly one of: {names}.\n\nText: {TEXT}"


def fill_prompt(template: str, text: str, description: str, labels: Sequence[str], label: str = "") -> str:
    """``template`` with its placeholders filled (plain replacement: other braces stay as written)."""
    out = template.replace("{description}", description).replace("{labels}", ", ".join(labels))
    out = out.replace("{label}", label)
    return out.replace(TEXT, text)  # last: the item's own text is never searched for placeholders


def yes_no_question(label: str) -> str:
    """What a multiselect prompt asks about one label."""
    return f'Does the label "{label}" apply to this text? Answer {YES} or {NO}.'


def user_turns(template: str, text: str, spec: Scheme, labels: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The user turns for one item and schema, each with the answers scored after it: radio, one turn
    whose answers are the labels; multiselect, one yes/no turn per label."""
    if not spec.multiselect:
        return [(fill_prompt(template, text, spec.description, labels), list(labels))]
    turns = []
    for label in labels:
        turn = fill_prompt(template, text, spec.description, labels, label)
        if "{label}" not in template:
            turn = f"{turn}\n\n{yes_no_question(label)}"
        turns.append((turn, [YES, NO]))
    return turns


def softmax(scores: Sequence[float]) -> list[float]:
    """Probabilities from log-likelihoods (shifted by the largest, so none overflows)."""
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def bias_corrections(per_text: Sequence[Sequence[Sequence[float]]]) -> list[list[float]]:
    """Contextual calibration (Zhao et al. 2021, "Calibrate Before Use"): per turn, minus the log of the
    mean probability the model gives each answer when the text is content-free. ``per_text``: per
    content-free text, per turn, the answers' log-likelihoods. Added to an item's log-likelihoods, a
    model that answers "positive" to anything no longer answers "positive" to everything."""
    corrections = []
    for turn in range(len(per_text[0])):
        probs = [softmax(scores[turn]) for scores in per_text]
        mean = [sum(p[k] for p in probs) / len(probs) for k in range(len(probs[0]))]
        corrections.append([-math.log(max(m, 1e-12)) for m in mean])
    return corrections


def right_answers(spec: Scheme, labels: Sequence[str], target: Label) -> list[int] | None:
    """Per user turn (:func:`user_turns`), the index of the right answer for an item labelled
    ``target``; None for a radio label the question does not offer."""
    if not spec.multiselect:
        return [list(labels).index(target)] if isinstance(target, str) and target in labels else None
    chosen = set(target) if isinstance(target, (list, tuple)) else set()
    return [0 if label in chosen else 1 for label in labels]  # the answers are (yes, no)


def sample_for_calibration(examples: Sequence[tuple[str, Any]], limit: int) -> list[tuple[str, Any]]:
    """At most ``limit`` of (item id, anything) pairs, chosen at random but the same on every rank and
    in every rerun (ordered by a hash of the id)."""
    return sorted(examples, key=lambda pair: hashlib.sha256(pair[0].encode("utf-8")).hexdigest())[:limit]


def check_prompt(prompt: str | None) -> None:
    """:class:`BadJob` for a ``prompt`` with no place for the item's text."""
    if prompt is not None and TEXT not in prompt:
        raise BadJob("Trainer 'llm-zero-shot' parameter prompt must contain {text}, where each item's text "
                     "goes, e.g. \"Is this review positive or negative?\\n\\n{text}\"")


@contextlib.contextmanager
def model_available(base: str) -> Iterator[None]:
    """A hub name neither cached here nor downloadable: say which fixes apply (both LLM trainers)."""
    try:
        yield
    except OSError as exc:
        if base.startswith(LOCAL_PREFIXES) or base.lower().endswith(".gguf"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelNotFound(
            f"base_model {base} is not in this machine's Hugging Face cache and could not be downloaded "
            f"({first}); give the worker network access to huggingface.co, or copy the model folder or "
            "GGUF file to this machine and set params.base_model to its path") from None


def llm_extra_modules(params: Mapping[str, Any]) -> tuple[str, ...]:
    """What an LLM run's parameters add to its trainer's modules: gguf for a GGUF file, bitsandbytes to
    quantise (so check names bitsandbytes only for a run that quantises)."""
    gguf = str(params.get("base_model") or "").lower().endswith(".gguf")
    quantized = str(params.get("quantize") or "none") != "none"
    return (("gguf",) if gguf else ()) + (("bitsandbytes",) if quantized else ())


def check_gguf_quantize(trainer: str, base_model: str, quantize: str) -> None:
    """:class:`BadJob` for a GGUF file with ``quantize``: transformers expands a GGUF file's weights on
    load and cannot quantise them again."""
    if quantize != "none" and base_model.lower().endswith(".gguf"):
        raise BadJob(f"Trainer '{trainer}' cannot load a GGUF file with quantize: {quantize} (transformers "
                     "expands a GGUF file's weights and cannot quantise them again); name the model's folder or "
                     "Hugging Face Hub name instead, or set quantize: none")


def quantization_config(quantize: str, compute_dtype: Any) -> Any:
    """transformers' ``BitsAndBytesConfig`` for ``quantize`` (None for none): 4-bit is NF4 with double
    quantisation (QLoRA's), computing in ``compute_dtype``; 8-bit is LLM.int8. Both LLM trainers load
    through it (never the ``load_in_4bit=`` keyword transformers 5 removed)."""
    if quantize == "none":
        return None
    from transformers import BitsAndBytesConfig

    if quantize == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=compute_dtype)


def bitsandbytes_unusable(quantize: str, detail: str) -> BadJob:
    """The failure of a run that quantises on a host whose devices bitsandbytes cannot use."""
    return BadJob(f"quantize: {quantize} needs bitsandbytes, which cannot run on this machine ({detail}); set "
                  "quantize: none to use the model's own weights, or run on a host with a CUDA GPU (or an "
                  "x86-64 CPU with AVX2)")


@contextlib.contextmanager
def bitsandbytes_usable(quantize: str) -> Iterator[None]:
    """bitsandbytes that cannot load, or has no backend for this machine's devices: say so, and what to
    do. A missing bitsandbytes is left to the worker, which names the package to install."""
    try:
        yield
    except ModuleNotFoundError:
        raise
    except (ImportError, OSError, RuntimeError, NotImplementedError) as exc:
        text = str(exc)
        if quantize == "none" or "bitsandbytes" not in text.lower():
            raise
        raise bitsandbytes_unusable(quantize, text.strip().splitlines()[0][:300]) from None


def quantized_loading(quantize: str, device: str, compute_dtype: Any) -> dict[str, Any]:
    """``from_pretrained``'s keywords that load the weights quantised on ``device`` ({} for none);
    imports bitsandbytes first, so that one that cannot run is named before transformers tries it."""
    config = quantization_config(quantize, compute_dtype)
    if config is None:
        return {}
    with bitsandbytes_usable(quantize):
        import bitsandbytes  # noqa: F401
    return {"quantization_config": config, "device_map": {"": device}}


def model_source(base_model: str) -> tuple[str, str | None]:
    """(what ``from_pretrained`` takes, the GGUF file name in it or None): a hub name as is, a
    folder, or a ``.gguf`` file's folder and name. :class:`BadJob` for a path that is not here."""
    if not base_model.startswith(LOCAL_PREFIXES) and not base_model.lower().endswith(".gguf"):
        return base_model, None
    path = Path(base_model).expanduser()
    if base_model.lower().endswith(".gguf"):
        if not path.is_file():
            raise BadJob(f"base_model {base_model} is not a file on this machine; copy the GGUF file there "
                         "or name a Hugging Face Hub model")
        return str(path.resolve().parent), path.name
    if not path.is_dir():
        raise BadJob(f"base_model {base_model} is not a folder on this machine; copy the model there or name a "
                     "Hugging Face Hub model")
    return str(path), None


def _right_padded(rows: Sequence[Sequence[int]], pad: int) -> tuple[Any, Any]:
    """Token rows as one tensor, padded on the right (each row's positions as in its unpadded run),
    and the attention mask that hides the padding."""
    import torch

    ids = torch.full((len(rows), max(len(row) for row in rows)), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for n, row in enumerate(rows):
        ids[n, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask[n, :len(row)] = 1
    return ids, mask


def _cache_argument(model: Any) -> str:
    """The name the model's forward takes a cache by: ``cache`` from transformers 5.x, where
    ``past_key_values`` warns that it goes; ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def _shareable(cache: Any) -> bool:
    """Whether a prompt's cache can serve its replies as rows of their own: a growing cache of keys
    and values, each position its own, so the padding after a shorter prompt stays masked out. A
    recurrent or linear-attention state has read the padding, and a static cache cannot grow."""
    if cache is None or not hasattr(cache, "batch_select_indices"):
        return False
    if type(cache).__name__ != "DynamicCache":
        return False
    layers = getattr(cache, "layers", None)  # transformers 5: one object per layer
    return layers is None or all(type(layer).__name__ == "DynamicLayer" for layer in layers)


class LlmZeroShotTrainer(Trainer):
    name = "llm-zero-shot"
    description = ("An instruct LLM suggests labels with no training: each label scored by the model's "
                   "likelihood of it as the answer (torch)")
    requires = ("torch", "transformers")
    uses_device = True
    learns_from_labels = False
    data_parallel = True  # nothing to train: each rank predicts its share of the items
    params: ClassVar[Mapping[str, Param]] = {
        "base_model": Param(DEFAULT_BASE_MODEL, (str,), "instruct LLM: a Hugging Face Hub name, a model folder or "
                            "a .gguf file on the training host (GGUF needs the gguf package; default "
                            f"{DEFAULT_BASE_MODEL})", shown=True),
        "prompt": Param(None, (str,), "the question the model reads, with {text} where the item's text goes "
                        "({labels}, {description} and, for multiselect, {label} are filled in too; default: "
                        "the scheme's description and labels)"),
        "calibrate": Param(True, (bool,), "correct the model's lean towards some answers before comparing "
                           "labels: a temperature and a bias per answer fitted on the run's labelled training "
                           "items (never the holdout) when it has at least "
                           f"{MIN_FIT_ITEMS}, else measured on content-free texts (N/A, empty, [MASK])"),
        "calibration_items": Param(200, (int,), "labelled training items, at most, that the calibration is "
                                   "fitted on (a stable random sample)", minimum=MIN_FIT_ITEMS),
        "batch_size": Param(8, (int,), "items per forward pass (each with every label's answer)", minimum=1),
        "max_length": Param(512, (int,), "tokens of an item's text the model reads; longer texts are cut",
                            minimum=8),
        "quantize": Param("none", (str,), "weights as loaded: none, 8bit or 4bit (NF4); 8bit and 4bit need "
                          "bitsandbytes and a CUDA GPU (or an x86-64 CPU with AVX2)", choices=QUANTIZE),
    }

    def __init__(self, ctx: TrainContext) -> None:
        super().__init__(ctx)
        self.tokenizer: Any = None
        self.model: Any = None
        self.examples: Sequence[Example] = ()
        self._kept: dict[tuple[str, str, str], list[list[float]]] = {}
        self._shared_prompts = True
        """False once the model's cache proved unshareable: its conversations are then read whole."""

    @classmethod
    def validate_params(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        params = super().validate_params(raw)
        check_prompt(params["prompt"])
        check_gguf_quantize(cls.name, str(params["base_model"]), str(params["quantize"]))
        return params

    @classmethod
    def required_modules(cls, params: Mapping[str, Any]) -> tuple[str, ...]:
        return ("torch", "transformers") + llm_extra_modules(params)

    @contextlib.contextmanager
    def _model_available(self) -> Iterator[None]:
        with model_available(str(self.ctx.params["base_model"])):
            yield

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if self.ctx.num_threads:
            torch.set_num_threads(self.ctx.num_threads)
        source, gguf = model_source(str(self.ctx.params["base_model"]))
        extra: dict[str, Any] = {"gguf_file": gguf} if gguf else {}
        self.ctx.step("loading {}".format(self.ctx.params["base_model"]))
        hub = source if gguf is None and not source.startswith(LOCAL_PREFIXES) else None
        device = torch.device(self.ctx.device)
        # bf16 on a GPU that has it: half float32's memory, its range (log-probs are taken in float32)
        dtype = torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
        quantize = str(self.ctx.params["quantize"])
        loading = quantized_loading(quantize, str(device), dtype)
        with self._model_available():
            check_fits(self.ctx, source, gguf, training=False)
            with download_shown(hub, self.ctx.step) if hub else contextlib.nullcontext():
                self.tokenizer = AutoTokenizer.from_pretrained(source, **extra)
                with bitsandbytes_usable(quantize):
                    model: Any = AutoModelForCausalLM.from_pretrained(source, **extra, **loading)
        if not loading:  # a quantised model is on its device in its own dtypes already
            model = model.to(device=device, dtype=dtype)
        self.model = model.eval()
        if self.tokenizer.chat_template is None:
            self.ctx.log("the tokenizer has no chat template: the model reads the plain prompt and 'Answer:'")

    def fit(self, examples: Sequence[Example]) -> None:
        """No weights change: the model is loaded here (a model that cannot be read fails the run before
        any item is asked), and the labelled training items are kept for the calibration."""
        self.examples = examples
        self._load()

    def _render(self, turn: str, answer: str | None) -> str:
        """The conversation as the model reads it: the user turn, then the assistant's reply so far
        (``answer`` None: none yet, the generation prompt)."""
        tok = self.tokenizer
        if tok.chat_template is None:
            return f"{turn}\n\nAnswer: " + ("" if answer is None else answer)
        messages = [{"role": "user", "content": turn}]
        if answer is None:
            return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        messages.append({"role": "assistant", "content": answer})
        return str(tok.apply_chat_template(messages, tokenize=False))

    def _turn_ids(self, turn: str, answers: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """The token ids of the conversation up to the reply, and of each answer as the reply."""
        tok = self.tokenizer
        prompt = self._render(turn, None)
        replies = []
        for answer in answers:
            full = self._render(turn, answer)
            # the reply as the template writes it (end of turn included); a template that rewrites the
            # earlier turns once a reply follows gets the bare answer
            reply = full[len(prompt):] if full.startswith(prompt) and len(full) > len(prompt) else answer
            replies.append(list(tok(reply, add_special_tokens=False)["input_ids"]))
        return list(tok(prompt, add_special_tokens=False)["input_ids"]), replies

    def _cut(self, text: str) -> str:
        """The item's text, cut to ``max_length`` tokens."""
        limit = int(self.ctx.params["max_length"])
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return text if len(ids) <= limit else str(self.tokenizer.decode(ids[:limit]))

    def _log_likelihoods(self, turns: Sequence[tuple[list[int], list[list[int]]]]) -> list[list[float]]:
        """Per turn, each reply's summed log-probability after the turn's prompt. The prompts are read
        once and their keys and values shared by their replies: on CPU the prompt is nearly all of
        the work, and a radio question with six labels read it six times. A model whose cache cannot
        be shared that way (recurrent or static layers) reads each conversation whole instead."""
        import torch

        if not self._shared_prompts:
            return self._whole_log_likelihoods(turns)
        device = torch.device(self.ctx.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        lengths = [len(prompt) for prompt, _ in turns]
        ids, mask = _right_padded([prompt for prompt, _ in turns], pad)
        first = min(lengths) - 1
        with torch.inference_mode():
            out = self.model(input_ids=ids.to(device), attention_mask=mask.to(device), use_cache=True,
                             logits_to_keep=ids.shape[1] - first)
            cache = out.cache if hasattr(out, "cache") else getattr(out, "past_key_values", None)
            if cache is None or not _shareable(cache):
                self._shared_prompts = False
                self.ctx.log(f"the model's cache ({type(cache).__name__}) cannot be shared between answers: "
                             "each answer is read with its prompt")
                return self._whole_log_likelihoods(turns)
            # the logits at a prompt's last token predict its replies' first tokens
            ends = torch.tensor(lengths, device=out.logits.device) - 1 - first
            firsts = torch.log_softmax(out.logits[torch.arange(len(turns), device=ends.device), ends].float(), dim=-1)
            del out
            rows = [row for row, (_, replies) in enumerate(turns) for _ in replies]
            replies = [reply for _, replies_ in turns for reply in replies_]
            reply_ids, reply_mask = _right_padded(replies, pad)
            cache.batch_select_indices(torch.tensor(rows, device=device))
            positions = torch.tensor([lengths[row] for row in rows]).unsqueeze(1) + torch.arange(reply_ids.shape[1])
            logits = self.model(input_ids=reply_ids.to(device),
                                attention_mask=torch.cat([mask[rows], reply_mask], dim=1).to(device),
                                position_ids=positions.to(device), use_cache=True,
                                **{_cache_argument(self.model): cache}).logits
            scores = []
            for n, (row, reply) in enumerate(zip(rows, replies)):
                score = float(firsts[row, reply[0]])
                if len(reply) > 1:
                    targets = torch.tensor(reply[1:], dtype=torch.long, device=logits.device)
                    logp = torch.log_softmax(logits[n, :len(reply) - 1].float(), dim=-1).gather(1, targets.unsqueeze(1))
                    score += float(logp.sum())
                scores.append(score)
        flat = iter(scores)
        return [[next(flat) for _ in replies_] for _, replies_ in turns]

    def _whole_log_likelihoods(self, turns: Sequence[tuple[list[int], list[list[int]]]]) -> list[list[float]]:
        """:meth:`_log_likelihoods` with each conversation read whole (prompt and reply, one row each)."""
        import torch

        device = torch.device(self.ctx.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        sequences = [(prompt + reply, len(prompt)) for prompt, replies in turns for reply in replies]
        input_ids, mask = _right_padded([seq for seq, _ in sequences], pad)  # positions as in the unpadded run
        width = input_ids.shape[1]
        # Only the positions that predict a reply's tokens need the vocabulary-wide logits: a 7B model's
        # for every prompt token would be batch x length x 152k floats (GBs); the rest are never made.
        first = min(start for _, start in sequences) - 1
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                logits_to_keep=width - first).logits
            scores = []
            for row, (ids, start) in enumerate(sequences):
                # the token at position j is predicted by the logits at j - 1 (kept from position `first`)
                step_logits = logits[row, start - 1 - first:len(ids) - 1 - first].float()
                targets = torch.tensor(ids[start:], dtype=torch.long, device=step_logits.device)
                logp = torch.log_softmax(step_logits, dim=-1).gather(1, targets.unsqueeze(1))
                scores.append(float(logp.sum()))
        flat = iter(scores)
        return [[next(flat) for _ in replies] for _, replies in turns]

    def _scores(self, template: str, texts: Sequence[str], spec: Scheme,
                labels: Sequence[str]) -> list[list[list[float]]]:
        """Per text, per user turn, its answers' log-likelihoods (every text's answers in one pass)."""
        per_text = [user_turns(template, text, spec, labels) for text in texts]
        flat = iter(self._log_likelihoods([self._turn_ids(turn, answers) for turns in per_text
                                           for turn, answers in turns]))
        return [[next(flat) for _ in turns] for turns in per_text]

    def _scores_batched(self, template: str, texts: Sequence[str], spec: Scheme,
                        labels: Sequence[str]) -> list[list[list[float]]]:
        """:meth:`_scores` in ``batch_size`` chunks, each text cut to ``max_length``; a text scored before
        in this run (a labelled item the calibration read, predicted afterwards) is not scored again."""
        size = int(self.ctx.params["batch_size"])
        cut = [self._cut(t) for t in texts]
        missing = list(dict.fromkeys(t for t in cut if (template, spec.name, t) not in self._kept))
        for start in range(0, len(missing), size):
            self.ctx.check_stop()
            chunk = missing[start:start + size]
            for text, scores in zip(chunk, self._scores(template, chunk, spec, labels)):
                self._kept[(template, spec.name, text)] = scores
        return [self._kept[(template, spec.name, t)] for t in cut]

    def _calibration(self, template: str, spec: Scheme, labels: Sequence[str]) -> list[AnswerScaling]:
        """Per user turn, how its answers' log-likelihoods become logits (see the module's docstring);
        run.log says which calibration each question got, and why."""
        turns = user_turns(template, "", spec, labels)
        if not self.ctx.params["calibrate"]:
            self.ctx.log(f"{spec.name}: no calibration (calibrate: false)")
            return [AnswerScaling.shift([0.0] * len(answers)) for _, answers in turns]
        content_free = [AnswerScaling.shift(fix)
                        for fix in bias_corrections(self._scores(template, CONTENT_FREE, spec, labels))]
        known = [(ex.id, (ex.text, rights)) for ex, target in labelled(self.examples, spec.name)
                 for rights in [right_answers(spec, labels, target)] if rights is not None]
        chosen = [pair for _, pair in sample_for_calibration(known, int(self.ctx.params["calibration_items"]))]
        if len(chosen) < MIN_FIT_ITEMS:
            self.ctx.log(f"{spec.name}: calibrated on content-free texts (N/A, empty, [MASK]): "
                         f"{len(chosen)} labelled training item(s), fewer than the {MIN_FIT_ITEMS} a fit needs")
            return content_free
        self.ctx.step(f"calibrating {spec.name} on {len(chosen)} labelled training items")
        scores = self._scores_batched(template, [text for text, _ in chosen], spec, labels)
        out, said = [], []
        for turn, (_, answers) in enumerate(turns):
            rights = [r[turn] for _, r in chosen]
            about = f"{labels[turn]}: " if spec.multiselect else ""
            if len(set(rights)) < 2:  # one answer only: nothing says where the threshold lies
                out.append(content_free[turn])
                said.append(f"{about}content-free texts (every item had the same answer)")
                continue
            choice = choose_answer_scaling([s[turn] for s in scores], rights, content_free[turn])
            out.append(choice.scaling)
            scores_said = (f"held-out accuracy {choice.fitted_accuracy:.2f} fitted, "
                           f"{choice.start_accuracy:.2f} content-free")
            if choice.fitted:
                scaling = choice.scaling
                said.append(f"{about}fitted (temperature {1 / scaling.scale:.2f}; biases "
                            + ", ".join(f"{a} {b:+.2f}" for a, b in zip(answers, scaling.biases))
                            + f"; {scores_said})")
            else:
                said.append(f"{about}content-free texts: a fit did no better ({scores_said})")
        self.ctx.log(f"{spec.name}: calibrated on {len(chosen)} labelled training items (the holdout is not "
                     "used): " + "; ".join(said))
        return out

    def predict(self, items: Sequence[JobItem]) -> list[dict[str, Prediction | None]]:
        ctx = self.ctx
        if self.model is None:
            self._load()
        batch_size = int(ctx.params["batch_size"])
        out: list[dict[str, Prediction | None]] = [{} for _ in items]
        n_batches = math.ceil(len(items) / batch_size)
        total = max(1, n_batches * len(ctx.schemas))
        step = 0
        for spec in ctx.schemas:
            labels = ctx.class_labels[spec.name]
            if not labels or (not spec.multiselect and len(labels) == 1):
                answer = Prediction((), 1.0) if not labels else radio_prediction({labels[0]: 1.0})
                for row in out:
                    row[spec.name] = answer
                continue
            template = ctx.params["prompt"] or default_prompt(spec.description, labels, spec.multiselect)
            ctx.step(f"asking {ctx.params['base_model']} about {spec.name}")
            scalings = self._calibration(template, spec, labels)
            for start in range(0, len(items), batch_size):
                ctx.check_stop()
                chunk = items[start:start + batch_size]
                scores = self._scores_batched(template, [item.text for item in chunk], spec, labels)
                for offset, turns in enumerate(scores):
                    chances = [softmax(scaling.logits(answers)) for answers, scaling in zip(turns, scalings)]
                    if spec.multiselect:  # one yes/no turn per label: p(yes)
                        pred = multiselect_prediction({label: p[0] for label, p in zip(labels, chances)})
                    else:
                        pred = radio_prediction(dict(zip(labels, chances[0])))
                    out[start + offset][spec.name] = pred
                step += 1
                ctx.progress(step, total)
        return out

    def save(self, artifacts_dir: Path) -> None:
        """No weights of its own: ``labels.json`` names the model and the prompt a rerun needs."""
        extra = {spec.name: {"base_model": self.ctx.params["base_model"], "prompt": self.ctx.params["prompt"]}
                 for spec in self.ctx.schemas}
        write_labels_json(artifacts_dir, self.name, self.ctx.schemas, self.ctx.class_labels, extra)
