"""The actor's policy kept current off the control loop, from the transport's weights."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import numpy as np

from robot_rl.agents.acting_policy import ActingPolicy


class PolicyUpdater:
    """Keeps the actor's policy current off the control loop. Building the policy (agent
    construction, compiling the acting function) takes seconds and loading a pixel agent's weights
    tens of milliseconds; both happen on this thread, and the control loop only reads ``policy``
    (None until built and loaded once)."""

    def __init__(self, client, observation_space: gym.spaces.Dict, action_space: gym.spaces.Box):
        self._client = client
        self._spaces = (observation_space, action_space)
        self.policy: ActingPolicy | None = None
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="policy-updater", daemon=True)

    def start(self) -> PolicyUpdater:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        # No timeout: a thread left inside XLA (compiling) when the interpreter exits aborts
        # the process; a build in progress finishes in seconds.
        self._thread.join()

    def _run(self) -> None:
        policy, loaded = None, 0
        while not self._stop.is_set():
            if policy is None and self._client.welcome is not None:
                try:
                    policy = ActingPolicy(self._client.welcome, *self._spaces)
                except ValueError as err:  # e.g. a different frozen trunk: the actor stops
                    self.error = err
                    return
                observation_space = self._spaces[0]
                policy({k: np.zeros(s.shape, s.dtype) for k, s in observation_space.spaces.items()})
            received = self._client.weights_received
            if policy is not None and received != loaded:
                policy.load(*self._client.latest_weights())
                loaded = received
                self.policy = policy
            time.sleep(0.01)
