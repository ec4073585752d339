"""The run bundle (C4, C6): contents, reproducible sha256, deterministic holdout, safe extraction."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from potato.config.schema import Config
from potato.items import Item, ItemSet
from potato.labels import Label
from potato.training.job.archive import UnsafeArchive, extract_archive
from potato.server.training.runs.bundle import build_bundle, holdout_ids, job_spec
from tests.faults.matrix import fault


def test_holdout_is_deterministic_and_sized() -> None:
    ids = [f"i{n}" for n in range(100)]
    a = holdout_ids(ids, 0.2, seed=0)
    assert a == holdout_ids(reversed(ids), 0.2, seed=0) and len(a) == 20
    assert holdout_ids(ids, 0.2, seed=1) != a
    assert holdout_ids(["a", "b", "c"], 0.2, 0) == []  # too few: everything trains
    assert len(holdout_ids([f"i{n}" for n in range(5)], 0.2, 0)) == 1


def test_bundle_contents_and_sha(config: Config, tmp_path: Path) -> None:
    items = ItemSet([Item(f"r{i}", f"text {i}", {}) for i in range(10)])
    labels = [Label("u", f"r{i}", "sentiment", "positive" if i % 2 else "negative") for i in range(8)]
    labels.append(Label("u", "r0", "note", "free text"))  # not a trained schema: left out
    job = job_spec(config, "run-1", "noop", ["sentiment"], {"sleep_s": 0})
    info = build_bundle(tmp_path / "a" / "bundle.tar.gz", job, items, labels, 0.25)
    again = build_bundle(tmp_path / "b" / "bundle.tar.gz", job, items, labels, 0.25)
    assert info.sha256 == again.sha256 and info.n_labels == 8 and info.n_holdout == 2 and info.n_items == 10
    out = tmp_path / "x"
    extract_archive(info.path, out)
    assert sorted(p.name for p in out.iterdir()) == ["items.jsonl", "job.json", "labels.jsonl", "split.json"]
    spec = json.loads((out / "job.json").read_text())
    # the scheme's description travels too: the question llm-zero-shot asks (issue 34)
    assert spec["schemes"] == [{"name": "sentiment", "annotation_type": "radio", "labels": ["positive", "negative"],
                                "description": "Is this review positive or negative?"}]
    assert spec["grace_seconds"] == 20 and spec["trainer"] == "noop" and spec["run_id"] == "run-1"
    assert len((out / "labels.jsonl").read_text().splitlines()) == 8
    assert len(json.loads((out / "split.json").read_text())["holdout"]) == 2


def test_the_bundle_counts_its_labelled_items_and_annotators(config: Config, tmp_path: Path) -> None:
    """The model card names how many items and annotators a run learned from: counted as the bundle is
    built (the card reads them from the run's record, never from the bundle again)."""
    items = ItemSet([Item(f"r{i}", f"text {i}", {}) for i in range(4)])
    labels = [Label("u1", "a", "sentiment", "positive"), Label("u1", "r0", "sentiment", "positive"),
              Label("u2", "r0", "sentiment", "negative"), Label("u1", "r1", "sentiment", "negative"),
              Label("u3", "r2", "note", "free text")]  # an unknown item and an untrained schema count for nothing
    job = job_spec(config, "run-1", "noop", ["sentiment"], {"sleep_s": 0})
    info = build_bundle(tmp_path / "bundle.tar.gz", job, items, labels, 0.25)
    assert (info.n_labels, info.n_labelled_items, info.n_annotators) == (3, 2, 2)


def _tar(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"x") -> Path:
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        member.size = len(data) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


@pytest.mark.parametrize("name", ["../escape.txt", "/abs/path.txt", "a/../../escape.txt"])
@fault("Tokens and secrets",
       "A hostile bundle: names outside the folder (../, absolute)",
       "Refused before anything is written",
       "The run fails naming the entry")
def test_extract_refuses_paths_outside(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafeArchive, match="outside"):
        extract_archive(_tar(tmp_path, tarfile.TarInfo(name)), tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
@fault("Tokens and secrets",
       "A hostile bundle: links and devices",
       "Refused before anything is written",
       "The run fails naming the entry")
def test_extract_refuses_links_and_devices(tmp_path: Path, kind: bytes) -> None:
    """What an agent extracts came over the network: symlinks, hardlinks and devices are refused."""
    member = tarfile.TarInfo("special")
    member.type = kind
    member.linkname = "/etc/passwd"
    with pytest.raises(UnsafeArchive, match="not a plain file"):
        extract_archive(_tar(tmp_path, member), tmp_path / "out")
    assert not (tmp_path / "out" / "special").exists()


@fault("The disk",
       "A bundle that expands absurdly (a zip bomb)",
       "Refused before anything is written",
       "The run fails naming the size")
def test_a_bundle_that_expands_absurdly_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """0.2 MB expanded to 210 MB: a bomb, not a bundle."""
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        member = tarfile.TarInfo("items.jsonl")
        member.size = 64 * 1024 * 1024
        tar.addfile(member, io.BytesIO(bytes(member.size)))
    with pytest.raises(UnsafeArchive, match="over the 1048576-byte limit"):
        extract_archive(path, tmp_path / "out", max_bytes=1024 * 1024)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()
    extract_archive(path, tmp_path / "out")  # the default: 200 times the packed size, at least 256 MB
    assert (tmp_path / "out" / "items.jsonl").stat().st_size == 64 * 1024 * 1024


def test_extracting_again_replaces_the_folder_and_never_writes_through_a_link(tmp_path: Path) -> None:
    path = _tar(tmp_path, tarfile.TarInfo("labels.jsonl"))
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "victim").write_text("keep me")
    (out / "labels.jsonl").symlink_to(tmp_path / "victim")  # planted before extraction
    extract_archive(path, out)
    assert (tmp_path / "victim").read_text() == "keep me" and not (out / "labels.jsonl").is_symlink()
