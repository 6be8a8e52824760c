"""`up robot` starts its learner nicer than the robot's processes (the control loop and the
cameras never wait for it on a shared machine)."""

from __future__ import annotations

import os

from robot_rl.runtime.supervisor import Supervisor
from robot_rl.stack import ProcessSpec


def test_a_child_started_nicer_runs_at_that_niceness(tmp_path):
    supervisor = Supervisor(tmp_path)
    spec = ProcessSpec("probe", "learner", executable="nice", ros_node=False)
    child = supervisor.start(spec, niceness=7)
    assert child.popen.wait(60) == 0
    assert int(child.log.read_text().split()[-1]) == min(19, os.nice(0) + 7)
