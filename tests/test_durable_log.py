"""The durable log under the actor's outbox and the learner's ingest log: nothing whose append()
returned is lost, nothing is doubled, a torn tail is cut, damage in the middle is refused."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from robot_rl.data.durable_log import SYNC, DurableLog, DurableLogError

META = {"observation_space": {"cam": [4, 4, 3], "state": [3]}, "extra_fields": ["seq"]}


def record(seq: int, rng) -> dict:
    return {
        "state": rng.normal(size=3).astype(np.float32),
        "cam": rng.integers(0, 256, (4, 4, 3), dtype=np.uint8),
        "seq": np.asarray(seq, np.int64),
    }


def fill(log: DurableLog, n: int, first: int = 0, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    records = [record(first + i, rng) for i in range(n)]
    for r in records:
        log.append(r)
    return records


def durable(tmp_path, **kwargs) -> DurableLog:
    return DurableLog(tmp_path / "x.log", META, **kwargs)


def seqs(log: DurableLog) -> list[int]:
    return [int(r["seq"]) for r in log]


def test_log_roundtrip_and_metadata(tmp_path):
    path = tmp_path / "x.log"
    records = [{"a": np.arange(i + 1, dtype=np.int16), "b": np.float32(i)} for i in range(5)]
    with DurableLog(path, {"k": 1}) as log:
        for r in records:
            log.append(r)
    with DurableLog(path, {"k": 1}, fsync="every:2") as log:
        back = list(log)
    assert len(back) == 5
    for r, got in zip(records, back, strict=True):
        np.testing.assert_array_equal(got["a"], r["a"])
        assert got["a"].dtype == np.int16
        assert got["b"] == r["b"]
    with pytest.raises(ValueError, match="k: expected 2, log has 1"):
        DurableLog(path, {"k": 2})
    with pytest.raises(ValueError, match="fsync"):
        DurableLog(tmp_path / "y.log", fsync="sometimes")


def test_crash_without_close_loses_nothing(tmp_path):
    log = durable(tmp_path)
    written = fill(log, 23)
    del log  # a crash: no close(); the log was flushed at each append
    reopened = list(durable(tmp_path))
    assert len(reopened) == 23
    for r, got in zip(written, reopened, strict=True):
        for key in r:
            np.testing.assert_array_equal(got[key], r[key])


def test_reopen_then_continue_has_no_duplicates(tmp_path):
    log = durable(tmp_path, fsync="never")
    fill(log, 10)
    log.close()
    reopened = durable(tmp_path)
    assert seqs(reopened) == list(range(10))
    fill(reopened, 1, first=10, seed=5)
    reopened.close()
    assert seqs(durable(tmp_path)) == list(range(11))


def test_garbage_tail_is_cut_with_a_warning(tmp_path, caplog):
    log = durable(tmp_path)
    fill(log, 12)
    del log
    with open(tmp_path / "x.log", "ab") as file:
        file.write(b"\x13garbage from a crash" * 3)
    with caplog.at_level(logging.WARNING):
        reopened = durable(tmp_path)
        assert seqs(reopened) == list(range(12))
    assert "torn tail" in caplog.text


def test_record_cut_mid_write_is_dropped(tmp_path):
    log = durable(tmp_path)
    fill(log, 12)
    log.close()
    path = tmp_path / "x.log"
    path.write_bytes(path.read_bytes()[:-10])  # the last record lost its end
    reopened = durable(tmp_path)
    assert seqs(reopened) == list(range(11))
    fill(reopened, 1, first=11, seed=9)
    reopened.close()
    assert seqs(durable(tmp_path)) == list(range(12))


@pytest.mark.parametrize("where", ["payload", "length field"])
def test_corruption_in_the_middle_raises(tmp_path, where):
    log = durable(tmp_path)
    fill(log, 12)
    log.close()
    path = tmp_path / "x.log"
    data = bytearray(path.read_bytes())
    frame_starts = [i for i in range(len(data)) if data[i : i + 4] == SYNC]
    middle = frame_starts[len(frame_starts) // 2]
    data[middle + (20 if where == "payload" else 5)] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DurableLogError, match="middle"):
        list(durable(tmp_path))


def test_log_for_different_spaces_is_refused(tmp_path):
    log = durable(tmp_path)
    fill(log, 2)
    log.close()
    other = {**META, "observation_space": {"cam": [8, 8, 3], "state": [3]}}
    with pytest.raises(ValueError, match=r"observation_space\.cam"):
        DurableLog(tmp_path / "x.log", other)
