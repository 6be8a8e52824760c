"""Test-run environment: ROS 2 discovery stays on this host, in a domain of this run's own;
MuJoCo renders headless.

scripts/test.sh sets these too; this covers a bare `pytest` (tests such as doctor's rclpy probe
may start DDS participants).
"""

import os

import pytest
from process_helpers import Processes

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
# before any test module imports mujoco: headless rendering (as scripts/setup.sh sets it)
os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 101))


@pytest.fixture
def procs(tmp_path):
    """Start robot_rl processes; whatever is left is killed at teardown."""
    processes = Processes(tmp_path)
    yield processes
    processes.close()


@pytest.fixture
def harness_factory():
    """Camera driver harnesses (tests/camera_helpers.py), each closed at teardown."""
    from camera_helpers import CameraHarness

    made = []

    def build(*args, **kwargs):
        made.append(CameraHarness(*args, **kwargs))
        return made[-1]

    yield build
    for harness in made:
        harness.close()


_GROUP_SECONDS: dict[str, float] = {}
GROUPS = {"hardening": "test_hardening_"}
"""Test files whose total time CI reports (issue 27: the hardening tests stay under 60 s)."""


def pytest_runtest_logreport(report):
    name = report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    for group, prefix in GROUPS.items():
        if name.startswith(prefix):  # setup, call and teardown alike
            _GROUP_SECONDS[group] = _GROUP_SECONDS.get(group, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    for group, seconds in sorted(_GROUP_SECONDS.items()):
        terminalreporter.write_line(f"{group} tests: {seconds:.1f} s in total (wall, this run)")
