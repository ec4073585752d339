"""The write limits of a run, as pure decisions (issue 20): the rate bucket and the log budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from potato.server.training.runs import quota
from potato.server.training.runs.quota import BURST_BYTES, MB, RATE_BYTES_PER_S, Bucket


def test_a_burst_goes_through_then_the_rate_applies_and_says_how_long_to_wait() -> None:
    bucket = Bucket.full(100.0)
    bucket, wait = bucket.take(BURST_BYTES - MB, 100.0)
    assert wait is None
    bucket, wait = bucket.take(3 * MB, 100.0)
    assert wait == 2  # 1 MB left, 2 MB more at 1 MB/s
    bucket, wait = bucket.take(3 * MB, 102.0)
    assert wait is None and bucket.allowance == pytest.approx(0.0)


def test_a_report_larger_than_the_burst_passes_on_a_full_bucket_so_none_waits_forever() -> None:
    bucket, wait = Bucket(0.0, 0.0).take(BURST_BYTES * 2, 1.0)
    assert wait == BURST_BYTES // RATE_BYTES_PER_S - 1  # a second has refilled 1 MB of it
    bucket, wait = bucket.take(BURST_BYTES * 2, 1.0 + BURST_BYTES / RATE_BYTES_PER_S)
    assert wait is None


def test_the_log_budget_counts_what_is_there_and_what_comes() -> None:
    assert not quota.over_budget(99 * MB, MB, 100)
    assert quota.over_budget(99 * MB, MB + 1, 100)


def test_the_reserve_names_the_disk_the_key_and_the_fix(tmp_path: Path) -> None:
    quota.check_reserve(tmp_path / "not" / "yet", 0, 0)
    free_mb = quota.free_bytes(tmp_path) // MB
    with pytest.raises(quota.DiskReserve) as refused:
        quota.check_reserve(tmp_path, 0, free_mb + 100)
    assert f"model_training.disk_reserve_mb ({free_mb + 100} MB)" in str(refused.value)
    assert "kept for annotators' labels" in str(refused.value)
