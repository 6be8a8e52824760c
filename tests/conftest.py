"""Test-run environment: ROS 2 discovery stays on this host, in a domain of this run's own.

scripts/test.sh sets these too; this covers a bare `pytest` (tests such as doctor's rclpy probe
may start DDS participants).
"""

import os

import pytest
from process_helpers import Processes

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 101))


@pytest.fixture
def procs(tmp_path):
    """Start robot_rl processes; whatever is left is killed at teardown."""
    processes = Processes(tmp_path)
    yield processes
    processes.close()
