"""RobotEnv over the ROS 2 backend: a reset waits for its sensors instead of failing.

A step on stale data is truncated (RobotEnv); the reset that follows must then not act on stale
data either, but a camera that is restarting should pause the run, not end it. So a reset first
waits until every topic is fresh, and a reset procedure interrupted by a sensor going stale is
started again, both within the backend's ``ready_timeout``; after that the staleness is raised.
"""

from __future__ import annotations

import logging
import time

from robot_rl.envs.backend import StaleReadingError
from robot_rl.envs.robot_env import RobotEnv

logger = logging.getLogger(__name__)


class RosRobotEnv(RobotEnv):
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        deadline = time.monotonic() + self.backend.config.ready_timeout
        while True:
            try:
                self.backend.wait_until_ready(timeout=max(deadline - time.monotonic(), 0.1))
                return super().reset(seed=seed, options=options)
            except StaleReadingError as error:
                if time.monotonic() > deadline:
                    raise
                logger.warning("reset interrupted by a stale sensor, starting it again: %s", error)
