"""The step line while a Hub model downloads: ``downloading Qwen/Qwen2.5-0.5B-Instruct: 312 of 988 MB``.

A 7B model is 15 GB; without this the run page says ``loading Qwen/...`` for ten minutes and an admin
cannot tell a slow download from a hang. transformers downloads into the training host's Hugging Face
cache (``models--<org>--<name>/blobs``, a ``.incomplete`` file while a file comes in); a thread
measures that folder every second and, while it grows, says how far it is, against the size the Hub
gives for the files a load fetches (the weights in one format, the config and tokenizer files).

Nothing here changes how or where transformers downloads: a host without network, a model already
cached, or a Hub that does not answer simply shows no download line. huggingface_hub is imported
inside the functions, as in every trainer module.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Tuple

MB = 1024 * 1024
POLL_S = 1.0
WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5", ".onnx")


def fetched_size(files: Iterable[Tuple[str, int]]) -> int:
    """Bytes a load fetches of a repo's ``(path, size)`` files: the safetensors weights when there are
    any (else the .bin ones), and every small file beside them; other formats and folders stay out."""
    listed = [(path, size) for path, size in files if "/" not in path]
    safetensors = any(path.endswith(".safetensors") for path, _ in listed)
    kind = ".safetensors" if safetensors else ".bin"
    return sum(size for path, size in listed if not path.endswith(WEIGHTS) or path.endswith(kind))


def repo_folder(cache: Path, repo_id: str) -> Path:
    """Where huggingface_hub keeps a model repo in the cache."""
    return cache / ("models--" + repo_id.replace("/", "--"))


def folder_bytes(folder: Path) -> int:
    """Bytes in the blobs a download has written so far (finished and ``.incomplete``)."""
    total = 0
    try:
        for path in (folder / "blobs").iterdir():
            try:
                total += path.stat().st_size
            except OSError:
                pass
    except OSError:
        return 0
    return total


def progress_line(repo_id: str, got: int, total: int) -> str:
    return f"downloading {repo_id}: {min(got, total) // MB:,} of {total // MB:,} MB"


class DownloadWatch:
    """Says the download's progress through ``say`` while ``measure()`` grows; quiet otherwise."""

    def __init__(self, repo_id: str, total: int, measure: Callable[[], int], say: Callable[[str], None],
                 poll_s: float = POLL_S) -> None:
        self.repo_id, self.total, self.measure, self.say, self.poll_s = repo_id, total, measure, say, poll_s
        self.start = measure()
        self.last = self.start
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="potato-download", daemon=True)

    def _watch(self) -> None:
        while not self.stopped.wait(self.poll_s):
            now = self.measure()
            if now > self.last:
                self.last = now
                self.say(progress_line(self.repo_id, now, self.total))

    def __enter__(self) -> "DownloadWatch":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)


def hub_total(repo_id: str) -> Optional[int]:
    """What a load of ``repo_id`` fetches, in bytes, as the Hub lists it; None when the Hub does not
    answer (offline, a private repo without a login here) or the library is missing."""
    try:
        from huggingface_hub import HfApi
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return None
        info = HfApi().model_info(repo_id, files_metadata=True, timeout=10)
        return fetched_size((s.rfilename, int(s.size or 0)) for s in info.siblings or [])
    except Exception:  # noqa: BLE001 - no progress line is the worst that can happen here
        return None


def cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


@contextlib.contextmanager
def download_shown(repo_id: str, say: Callable[[str], None]) -> Iterator[None]:
    """Around a ``from_pretrained`` of a Hub name: the step line follows the download, if there is one."""
    total = hub_total(repo_id)
    if not total:
        yield
        return
    folder = repo_folder(cache_dir(), repo_id)
    if folder_bytes(folder) >= total:  # in the cache already: nothing to show
        yield
        return
    with DownloadWatch(repo_id, total, lambda: folder_bytes(folder), say):
        yield
