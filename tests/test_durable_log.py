"""Durable log and durable replay: nothing whose add() returned is lost, nothing is doubled."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.durable_log import SYNC, DurableLog, DurableLogError
from robot_rl.data.replay import LOG_FILE_NAME, ReplayBuffer

ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
OBS_SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "cam": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
    }
)
EXTRAS = {"actor_id": ((), np.int32), "seq": ((), np.int64)}


def make_obs(rng):
    return {
        "state": rng.normal(size=3).astype(np.float32),
        "cam": rng.integers(0, 256, (4, 4, 3), dtype=np.uint8),
    }


def fill(buffer, n, seed=0):
    rng = np.random.default_rng(seed)
    obs = make_obs(rng)
    for step in range(n):
        nxt = make_obs(rng)
        end = step % 5 == 4
        buffer.add(obs, rng.uniform(-1, 1, 2), float(step), end, False, nxt, actor_id=1, seq=step)
        obs = make_obs(rng) if end else nxt


def durable(tmp_path, **kwargs):
    return ReplayBuffer(
        OBS_SPACE, ACTION_SPACE, 64, extra_fields=EXTRAS, durable_dir=tmp_path, **kwargs
    )


def assert_same_contents(a, b):
    assert len(a) == len(b)
    indices = np.arange(len(a))
    batch_a, batch_b = a.gather(indices), b.gather(indices)
    for key in ("observations", "next_observations"):
        for obs_key in batch_a[key]:
            np.testing.assert_array_equal(batch_a[key][obs_key], batch_b[key][obs_key])
    for key in ("actions", "rewards", "terminated", "truncated", "actor_id", "seq"):
        np.testing.assert_array_equal(batch_a[key], batch_b[key])
    # Replay dedups frames again, so the frame layout is the same as the original's.
    for slots_a, slots_b in zip(a.frame_slots(indices), b.frame_slots(indices), strict=True):
        np.testing.assert_array_equal(slots_a, slots_b)


def test_log_roundtrip_and_metadata(tmp_path):
    path = tmp_path / "x.log"
    records = [{"a": np.arange(i + 1, dtype=np.int16), "b": np.float32(i)} for i in range(5)]
    with DurableLog(path, {"k": 1}) as log:
        for record in records:
            log.append(record)
    with DurableLog(path, {"k": 1}, fsync="every:2") as log:
        back = list(log)
    assert len(back) == 5
    for record, got in zip(records, back, strict=True):
        np.testing.assert_array_equal(got["a"], record["a"])
        assert got["a"].dtype == np.int16
        assert got["b"] == record["b"]
    with pytest.raises(ValueError, match="k: expected 2, log has 1"):
        DurableLog(path, {"k": 2})
    with pytest.raises(ValueError, match="fsync"):
        DurableLog(tmp_path / "y.log", fsync="sometimes")


def test_crash_without_close_loses_nothing(tmp_path):
    buffer = durable(tmp_path)
    fill(buffer, 23)
    reference = ReplayBuffer(OBS_SPACE, ACTION_SPACE, 64, extra_fields=EXTRAS)
    fill(reference, 23)
    del buffer  # a crash: no close(); the log was flushed at each add
    reopened = durable(tmp_path)
    assert len(reopened) == 23
    assert_same_contents(reopened, reference)
    np.testing.assert_array_equal(reopened.gather(np.arange(23))["seq"], np.arange(23))


def test_reopen_then_continue_has_no_duplicates(tmp_path):
    buffer = durable(tmp_path, fsync="never")
    fill(buffer, 10)
    buffer.close()
    reopened = durable(tmp_path)
    rng = np.random.default_rng(5)
    reopened.add(make_obs(rng), np.zeros(2), 0.0, False, False, make_obs(rng), seq=10)
    reopened.close()
    again = durable(tmp_path)
    np.testing.assert_array_equal(again.gather(np.arange(len(again)))["seq"], np.arange(11))


def test_garbage_tail_is_cut_with_a_warning(tmp_path, caplog):
    buffer = durable(tmp_path)
    fill(buffer, 12)
    del buffer
    with open(tmp_path / LOG_FILE_NAME, "ab") as file:
        file.write(b"\x13garbage from a crash" * 3)
    with caplog.at_level(logging.WARNING):
        reopened = durable(tmp_path)
    assert "torn tail" in caplog.text
    np.testing.assert_array_equal(reopened.gather(np.arange(len(reopened)))["seq"], np.arange(12))


def test_record_cut_mid_write_is_dropped(tmp_path):
    buffer = durable(tmp_path)
    fill(buffer, 12)
    buffer.close()
    path = tmp_path / LOG_FILE_NAME
    data = path.read_bytes()
    path.write_bytes(data[:-10])  # the last record lost its end
    reopened = durable(tmp_path)
    np.testing.assert_array_equal(reopened.gather(np.arange(len(reopened)))["seq"], np.arange(11))
    fill_rng = np.random.default_rng(9)
    reopened.add(make_obs(fill_rng), np.zeros(2), 0.0, False, False, make_obs(fill_rng), seq=11)
    reopened.close()
    again = durable(tmp_path)
    np.testing.assert_array_equal(again.gather(np.arange(len(again)))["seq"], np.arange(12))


@pytest.mark.parametrize("where", ["payload", "length field"])
def test_corruption_in_the_middle_raises(tmp_path, where):
    buffer = durable(tmp_path)
    fill(buffer, 12)
    buffer.close()
    path = tmp_path / LOG_FILE_NAME
    data = bytearray(path.read_bytes())
    frame_starts = [i for i in range(len(data)) if data[i : i + 4] == SYNC]
    middle = frame_starts[len(frame_starts) // 2]
    data[middle + (20 if where == "payload" else 5)] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DurableLogError, match="middle"):
        durable(tmp_path)


def test_log_for_different_spaces_is_refused(tmp_path):
    buffer = durable(tmp_path)
    fill(buffer, 2)
    buffer.close()
    other = gym.spaces.Dict(
        {
            "state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
            "cam": gym.spaces.Box(0, 255, (8, 8, 3), np.uint8),
        }
    )
    with pytest.raises(ValueError, match=r"observation_space\.cam\.shape"):
        ReplayBuffer(other, ACTION_SPACE, 64, extra_fields=EXTRAS, durable_dir=tmp_path)
