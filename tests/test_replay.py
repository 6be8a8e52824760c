"""ReplayBuffer: frame sharing, eviction, flags, validation, save/load."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.replay import ReplayBuffer

ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def obs_space(size: int = 4) -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
            "cam": gym.spaces.Box(0, 255, (size, size, 3), np.uint8),
        }
    )


def make_obs(rng: np.random.Generator, size: int = 4) -> dict:
    return {
        "state": rng.normal(size=3).astype(np.float32),
        "cam": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
    }


def assert_obs_equal(batch_obs: dict, i: int, expected: dict) -> None:
    for key, value in expected.items():
        np.testing.assert_array_equal(batch_obs[key][i], value, err_msg=key)


def run_episodes(buffer, rng, lengths, stream=0, ends="terminated", reference=None):
    """Add episodes; returns the reference list of (obs, action, reward, term, trunc, next)."""
    reference = [] if reference is None else reference
    for length in lengths:
        obs = make_obs(rng)
        for t in range(length):
            nxt = make_obs(rng)
            last = t == length - 1
            term, trunc = (last and ends == "terminated"), (last and ends == "truncated")
            action = rng.uniform(-1, 1, 2).astype(np.float32)
            reward = float(rng.normal())
            buffer.add(obs, action, reward, term, trunc, nxt, stream=stream)
            reference.append((obs, action, reward, term, trunc, nxt))
            obs = nxt
    return reference


def check_against_reference(buffer, reference, indices):
    """Valid transitions are the newest len(buffer) of the reference, in order."""
    batch = buffer.gather(indices)
    offset = len(reference) - len(buffer)
    for row, index in enumerate(indices):
        obs, action, reward, term, trunc, nxt = reference[offset + index]
        assert_obs_equal(batch["observations"], row, obs)
        assert_obs_equal(batch["next_observations"], row, nxt)
        np.testing.assert_array_equal(batch["actions"][row], action)
        assert batch["rewards"][row] == np.float32(reward)
        assert batch["terminated"][row] == float(term)
        assert batch["truncated"][row] == float(trunc)


def test_episode_of_t_steps_uses_t_plus_one_frames():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=100)
    reference = run_episodes(buffer, np.random.default_rng(0), [10])
    assert len(buffer) == 10
    obs_slot, next_slot = buffer.frame_slots(np.arange(10))
    assert len(set(obs_slot) | set(next_slot)) == 11
    np.testing.assert_array_equal(obs_slot[1:], next_slot[:-1])
    check_against_reference(buffer, reference, np.arange(10))


def test_memory_per_image_transition_is_about_one_frame():
    buffer = ReplayBuffer(obs_space(32), ACTION_SPACE, capacity=1000)
    frame_bytes = 32 * 32 * 3 + 3 * 4
    per_transition = buffer.nbytes / buffer.capacity
    assert frame_bytes < per_transition < 1.2 * frame_bytes  # not 2 frames (obs + next obs)


def test_ending_transitions_and_next_episode_start():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=100)
    rng = np.random.default_rng(1)
    reference = run_episodes(buffer, rng, [3], ends="terminated")
    reference = run_episodes(buffer, rng, [3], ends="truncated", reference=reference)
    # A new episode whose first observation equals the previous final frame: shared or not,
    # the content must be right and the previous last step must keep its own final frame.
    final = reference[-1][5]
    same_pixels_start = {k: v.copy() for k, v in final.items()}
    nxt = make_obs(rng)
    action = np.zeros(2, np.float32)
    buffer.add(same_pixels_start, action, 0.0, False, False, nxt)
    reference.append((same_pixels_start, action, 0.0, False, False, nxt))
    check_against_reference(buffer, reference, np.arange(len(buffer)))
    obs_slot, next_slot = buffer.frame_slots(np.arange(len(buffer)))
    assert obs_slot[3] != next_slot[2]  # after termination, a new frame
    assert obs_slot[6] != next_slot[5]  # after truncation too
    batch = buffer.gather(np.arange(len(buffer)))
    np.testing.assert_array_equal(batch["terminated"], [0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(batch["truncated"], [0, 0, 0, 0, 0, 1, 0])


def test_continuing_stream_with_different_data_stores_a_new_frame():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    rng = np.random.default_rng(2)
    a, b, c = make_obs(rng), make_obs(rng), make_obs(rng)
    buffer.add(a, np.zeros(2), 0.0, False, False, b)
    buffer.add(c, np.zeros(2), 0.0, False, False, a)  # does not start where the last ended
    batch = buffer.gather([0, 1])
    assert_obs_equal(batch["observations"], 1, c)
    assert_obs_equal(batch["next_observations"], 0, b)


def test_add_copies_caller_arrays():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    rng = np.random.default_rng(3)
    obs, nxt, action = make_obs(rng), make_obs(rng), np.zeros(2, np.float32)
    expected = {k: v.copy() for k, v in obs.items()}
    buffer.add(obs, action, 0.0, False, False, nxt)
    obs["cam"][:] = 7
    obs["state"][:] = 7
    action[:] = 0.5
    batch = buffer.gather([0])
    assert_obs_equal(batch["observations"], 0, expected)
    np.testing.assert_array_equal(batch["actions"][0], [0, 0])


def test_interleaved_streams_share_frames_within_each_stream():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=100)
    rng = np.random.default_rng(4)
    current = {0: make_obs(rng), 1: make_obs(rng)}
    reference = []
    for step in range(12):
        stream = step % 2
        nxt = make_obs(rng)
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        buffer.add(current[stream], action, 1.0, False, False, nxt, stream=stream)
        reference.append((current[stream], action, 1.0, False, False, nxt))
        current[stream] = nxt
    check_against_reference(buffer, reference, np.arange(12))
    obs_slot, next_slot = buffer.frame_slots(np.arange(12))
    np.testing.assert_array_equal(obs_slot[2:], next_slot[:-2])  # each stream continues itself
    assert len(set(obs_slot) | set(next_slot)) == 14


@pytest.mark.parametrize("frame_capacity", [None, 7, 12])
def test_wrapping_rings_never_return_wrong_frames(frame_capacity):
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10, frame_capacity=frame_capacity)
    rng = np.random.default_rng(5)
    reference = []
    for round_ in range(30):
        reference = run_episodes(
            buffer,
            rng,
            [int(rng.integers(1, 6))],
            stream=round_ % 3,
            reference=reference,
            ends=("terminated", "truncated", "none")[round_ % 3],
        )
        assert 0 < len(buffer) <= 10
        # Interleaving makes the flat reference order differ from per-stream order, but each
        # transition is stored in add order, so the newest len(buffer) adds are what is valid.
        check_against_reference(buffer, reference, np.arange(len(buffer)))
        indices = buffer.sample_indices(rng, 32)
        check_against_reference(buffer, reference, indices)
    if frame_capacity == 7:
        assert len(buffer) <= 6  # frames, not transitions, are the limit


def test_interleaved_streams_with_wrapping_frames():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=16, frame_capacity=20)
    rng = np.random.default_rng(6)
    current = {s: make_obs(rng) for s in range(3)}
    reference = []
    for _ in range(200):
        stream = int(rng.integers(0, 3))
        nxt = make_obs(rng)
        end = rng.random() < 0.1
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        buffer.add(current[stream], action, 0.5, end, False, nxt, stream=stream)
        reference.append((current[stream], action, 0.5, end, False, nxt))
        current[stream] = make_obs(rng) if end else nxt
        assert len(buffer) > 0
        check_against_reference(buffer, reference, np.arange(len(buffer)))


def test_frame_serials_change_when_slots_are_overwritten():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=4, frame_capacity=6)
    rng = np.random.default_rng(7)
    run_episodes(buffer, rng, [3])
    obs_slot, _ = buffer.frame_slots([0])
    before = buffer.frame_serials(obs_slot)
    run_episodes(buffer, rng, [5])
    after = buffer.frame_serials(obs_slot)
    assert after[0] > before[0]


def test_frame_serials_count_every_frame_written_in_ring_order():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=4, frame_capacity=6)
    rng = np.random.default_rng(8)
    assert buffer.frame_serials(np.arange(6)).tolist() == [-1] * 6
    run_episodes(buffer, rng, [2])  # 3 frames: the first obs and two next obs
    assert buffer.frame_serials(np.arange(6)).tolist() == [0, 1, 2, -1, -1, -1]
    run_episodes(buffer, rng, [4])  # 5 more: 8 in all, slots 0 and 1 written twice
    assert buffer.frame_serials(np.arange(6)).tolist() == [6, 7, 2, 3, 4, 5]


def test_extra_fields_are_stored_and_default_to_zero():
    extras = {
        "intervened": ((), bool),
        "actor_id": ((), np.int32),
        "grasp_penalty": ((), np.float32),
    }
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10, extra_fields=extras)
    rng = np.random.default_rng(8)
    buffer.add(
        make_obs(rng),
        np.zeros(2),
        0.0,
        False,
        False,
        make_obs(rng),
        intervened=True,
        actor_id=3,
        grasp_penalty=-0.1,
    )
    buffer.add(make_obs(rng), np.zeros(2), 0.0, False, False, make_obs(rng))
    batch = buffer.gather([0, 1])
    np.testing.assert_array_equal(batch["intervened"], [True, False])
    assert batch["intervened"].dtype == bool
    np.testing.assert_array_equal(batch["actor_id"], [3, 0])
    np.testing.assert_allclose(batch["grasp_penalty"], [-0.1, 0.0])
    with pytest.raises(ValueError, match="unknown extra"):
        buffer.add(make_obs(rng), np.zeros(2), 0.0, False, False, make_obs(rng), bogus=1)


def test_batch_format():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    run_episodes(buffer, np.random.default_rng(9), [4])
    batch = buffer.sample(np.random.default_rng(0), 5)
    assert batch["observations"]["cam"].shape == (5, 4, 4, 3)
    assert batch["observations"]["cam"].dtype == np.uint8
    assert batch["next_observations"]["state"].dtype == np.float32
    assert batch["actions"].shape == (5, 2) and batch["actions"].dtype == np.float32
    for key in ("rewards", "terminated", "truncated"):
        assert batch[key].shape == (5,) and batch[key].dtype == np.float32
    skipped = buffer.gather([0, 1], skip_obs_keys=("cam",))
    assert set(skipped["observations"]) == {"state"}
    assert set(skipped["next_observations"]) == {"state"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o, a: o.pop("cam"), "missing key 'cam'"),
        (lambda o, a: o.__setitem__("state", np.zeros(4, np.float32)), r"'state'.*shape \(3,\)"),
        (lambda o, a: o.__setitem__("cam", np.zeros((4, 4, 3), np.int64)), "'cam'.*uint8"),
        (lambda o, a: o.__setitem__("state", np.array([0, np.nan, 0], np.float32)), "NaN"),
        (lambda o, a: o.__setitem__("extra", np.zeros(1)), "unexpected keys"),
        (lambda o, a: a.__setitem__(0, np.inf), "action"),
    ],
)
def test_validation_errors(change, message):
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    rng = np.random.default_rng(10)
    obs, action = make_obs(rng), np.zeros(2, np.float32)
    change(obs, action)
    with pytest.raises(ValueError, match=message):
        buffer.add(obs, action, 0.0, False, False, make_obs(rng))
    assert len(buffer) == 0


def test_bad_action_shape_and_reward():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    rng = np.random.default_rng(11)
    with pytest.raises(ValueError, match=r"action: expected shape \(2,\)"):
        buffer.add(make_obs(rng), np.zeros(3), 0.0, False, False, make_obs(rng))
    with pytest.raises(ValueError, match="reward"):
        buffer.add(make_obs(rng), np.zeros(2), float("nan"), False, False, make_obs(rng))
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(rng, 4)


def test_save_load_then_identical_continuation(tmp_path):
    extras = {"seq": ((), np.int64)}
    buffer = ReplayBuffer(
        obs_space(), ACTION_SPACE, capacity=12, frame_capacity=15, extra_fields=extras
    )
    rng = np.random.default_rng(12)
    current = {s: make_obs(rng) for s in range(2)}

    def add_some(buffers, steps, data_rng):
        for step in range(steps):
            stream = step % 2
            nxt = make_obs(data_rng)
            end = data_rng.random() < 0.15
            action = data_rng.uniform(-1, 1, 2).astype(np.float32)
            for buf in buffers:
                buf.add(current[stream], action, 1.0, end, False, nxt, stream=stream, seq=step)
            current[stream] = make_obs(data_rng) if end else nxt

    add_some([buffer], 40, rng)
    path = tmp_path / "replay.npz"
    buffer.save(path)
    loaded = ReplayBuffer.load(path)
    assert not (tmp_path / "replay.npz.tmp").exists()
    assert loaded.observation_space == buffer.observation_space
    assert loaded.action_space == buffer.action_space

    def assert_same(a, b):
        assert len(a) == len(b)
        indices = np.arange(len(a))
        batch_a, batch_b = a.gather(indices), b.gather(indices)
        for key in ("observations", "next_observations"):
            for obs_key in batch_a[key]:
                np.testing.assert_array_equal(batch_a[key][obs_key], batch_b[key][obs_key])
        for key in ("actions", "rewards", "terminated", "truncated", "seq"):
            np.testing.assert_array_equal(batch_a[key], batch_b[key])
        for slots_a, slots_b in zip(a.frame_slots(indices), b.frame_slots(indices), strict=True):
            np.testing.assert_array_equal(slots_a, slots_b)
        np.testing.assert_array_equal(
            a.sample_indices(np.random.default_rng(1), 8),
            b.sample_indices(np.random.default_rng(1), 8),
        )

    assert_same(buffer, loaded)
    add_some([buffer, loaded], 25, rng)
    assert_same(buffer, loaded)


def test_a_partly_filled_buffer_saves_only_what_it_holds(tmp_path):
    # a pixel buffer preallocated for 20,000 transitions of 32x32 frames: ~68 MB of zeros
    buffer = ReplayBuffer(obs_space(32), ACTION_SPACE, capacity=20_000)
    rng = np.random.default_rng(3)
    obs = make_obs(rng, 32)
    for step in range(50):
        nxt = make_obs(rng, 32)
        buffer.add(obs, rng.uniform(-1, 1, 2).astype(np.float32), 0.5, step % 20 == 19, False, nxt)
        obs = make_obs(rng, 32) if step % 20 == 19 else nxt
    path = tmp_path / "replay.npz"
    buffer.save(path)
    assert path.stat().st_size < 1_000_000  # 50 transitions' frames, not the capacity's
    loaded = ReplayBuffer.load(path)
    assert (loaded.capacity, loaded.frame_capacity) == (buffer.capacity, buffer.frame_capacity)
    indices = np.arange(len(buffer))
    for key in ("observations", "next_observations"):
        for obs_key, value in buffer.gather(indices)[key].items():
            np.testing.assert_array_equal(loaded.gather(indices)[key][obs_key], value)
    # both go on identically after the load
    for buf in (buffer, loaded):
        buf.add(
            obs, np.zeros(2, np.float32), 1.0, True, False, make_obs(np.random.default_rng(9), 32)
        )
    np.testing.assert_array_equal(
        buffer.sample_indices(np.random.default_rng(1), 16),
        loaded.sample_indices(np.random.default_rng(1), 16),
    )
    np.testing.assert_array_equal(buffer.gather(indices[-1:] + 1)["rewards"], [1.0])
    np.testing.assert_array_equal(loaded.gather(indices[-1:] + 1)["rewards"], [1.0])


def test_a_batch_still_held_is_never_overwritten_by_the_next_sample():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=50)
    reference = run_episodes(buffer, np.random.default_rng(13), [20, 20])
    rng = np.random.default_rng(0)
    held = buffer.gather(np.arange(8))
    kept_view = buffer.gather(np.arange(8, 16))["next_observations"]["cam"]
    expected = {k: v.copy() for k, v in held["observations"].items()}
    expected_view = kept_view.copy()
    for _ in range(3):  # later batches reuse memory only that nobody holds
        buffer.sample(rng, 8)
        check_against_reference(buffer, reference, buffer.sample_indices(rng, 8))
    for key, value in expected.items():
        np.testing.assert_array_equal(held["observations"][key], value)
    np.testing.assert_array_equal(kept_view, expected_view)


def test_the_arrays_given_as_next_observation_continue_the_trajectory_as_stored():
    buffer = ReplayBuffer(obs_space(), ACTION_SPACE, capacity=10)
    rng = np.random.default_rng(14)
    a, b, c = make_obs(rng), make_obs(rng), make_obs(rng)
    stored_b = {k: v.copy() for k, v in b.items()}
    buffer.add(a, np.zeros(2), 0.0, False, False, b)
    b["cam"][:] = 0  # a wrapper that rewrites its frame buffer in place after handing it out
    buffer.add(b, np.zeros(2), 0.0, False, False, c)
    obs_slot, next_slot = buffer.frame_slots([0, 1])
    assert obs_slot[1] == next_slot[0]  # the observation is the frame given as next obs
    assert_obs_equal(buffer.gather([0, 1])["observations"], 1, stored_b)
    # equal data in other arrays (as decoded from the network) is compared and shared too
    buffer.add({k: v.copy() for k, v in c.items()}, np.zeros(2), 0.0, False, False, a)
    obs_slot, next_slot = buffer.frame_slots([1, 2])
    assert obs_slot[1] == next_slot[0]
