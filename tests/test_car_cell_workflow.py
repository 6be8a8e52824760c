"""FastRLAP's first step in the simulated car cell (``hardware/car_sim.yaml``), as a car owner runs
it: ``robot-rl record-lap --hardware`` brings the cell's drivers up itself, the simulated person
at the gamepad (``sim/cells/car_human.py``, ``mode: drive``) drives one slow lap over
``/teleop/twist`` and ``/teleop/joy``, and the lap's odometry becomes the checkpoints file.

Asserted: the lap closes and its checkpoints file (and the MCAP log) exists; while it records,
no process but the cell's own parts (its camera, its operator: the world and the person) reads
a ``/sim/`` topic, which the recording's own nodes and the VESC node never do. The whole
workflow (with ``up robot`` and ``eval``) is ``benchmarks/car_cell_workflow.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
pytest.importorskip("rclpy")
pytest.importorskip("serial")

from process_helpers import ROBOT_RL, Proc
from ros_helpers import Watcher

HARDWARE = Path(__file__).parents[1] / "hardware" / "car_sim.yaml"
DEFAULT_PORT = "/tmp/robot_rl_car_sim/vesc"
CELL_PARTS_THAT_SEE = {"/front_cam/front_camera", "/teleop/simulated_human"}
"""The cell's camera renders its world and its operator is a person looking at the car."""


def driving_hardware(directory: Path) -> Path:
    """``hardware/car_sim.yaml`` with the VESC's pty in ``directory`` and the operator driving
    (a person recording the lap)."""
    text = HARDWARE.read_text().replace(DEFAULT_PORT, str(directory / "vesc"))
    assert "mode: watch" in text
    path = directory / "car_drive.yaml"
    path.write_text(text.replace("mode: watch", "mode: drive"))
    return path


def sim_readers(node) -> tuple[set[str], dict[str, set[str]]]:
    """Every node in the graph, and the ``/sim/`` topics each one subscribes to."""
    nodes, readers = set(), {}
    for name, namespace in node.get_node_names_and_namespaces():
        full = f"{namespace.rstrip('/')}/{name}"
        nodes.add(full)
        try:
            topics = node.get_subscriber_names_and_types_by_node(name, namespace)
        except Exception:  # the node left between the two calls
            continue
        seen = {topic for topic, _ in topics if topic.startswith("/sim/")}
        if seen:
            readers.setdefault(full, set()).update(seen)
    return nodes, readers


def test_record_lap_in_the_car_cell_with_the_simulated_operator(tmp_path):
    hardware = driving_hardware(tmp_path)
    out = tmp_path / "lap"
    watcher = Watcher({}, name="car_workflow_test")
    proc = Proc([*ROBOT_RL, "record-lap", "--hardware", str(hardware), "--out", str(out)],
                tmp_path / "record_lap.log")  # fmt: skip
    nodes, readers = set(), {}
    try:
        deadline = time.monotonic() + 600.0
        while proc.alive() and time.monotonic() < deadline:
            seen, reading = sim_readers(watcher.node)
            nodes |= seen
            for name, topics in reading.items():
                readers.setdefault(name, set()).update(topics)
            time.sleep(0.5)
        code = proc.wait_exit(60.0)
    finally:
        proc.stop()
        watcher.close()
    text = proc.output()
    print(text[-3000:])
    assert code == 0, text[-3000:]
    assert "lap closed" in text
    checkpoints = json.loads((out / "checkpoints.json").read_text())
    assert len(checkpoints["points"]) >= 3 and checkpoints["how"] == "robot-rl record-lap"
    assert (out / "lap.mcap").stat().st_size > 0
    # the recording's nodes were in the graph while it was watched, and read nothing of /sim/
    assert "/record_lap" in nodes and "/car/vesc" in nodes, sorted(nodes)
    robot_side = {
        name: topics for name, topics in readers.items() if name not in CELL_PARTS_THAT_SEE
    }
    assert robot_side == {}, f"robot-mode nodes reading the cell's ground truth: {robot_side}"
    assert "/teleop/simulated_human" in readers  # the check sees /sim/ readers at all


def test_the_operator_takes_over_the_cars_two_entry_action():
    """``up robot`` on the car cell wraps the actor's env for the gamepad's interventions (the
    cell has an operator node): a car's action has no x-y-z translation to rotate."""
    import numpy as np
    from fakes import ScriptedSource

    from robot_rl.envs.intervention import InterventionConfig, InterventionWrapper
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.sim.car_twin import make_car_twin
    from robot_rl.tasks.car_lap import CarLapTask

    task = CarLapTask()
    source = ScriptedSource([None, ([0.5, -0.2], True)])
    env = InterventionWrapper(
        RobotEnv(task, make_car_twin(task)),
        source,
        InterventionConfig(mode="motion"),
        clock=lambda: 0.0,
    )
    try:
        env.reset(seed=0)
        infos = [env.step(np.zeros(2, np.float32))[-1] for _ in range(2)]
    finally:
        env.close()
    assert [info["intervened"] for info in infos] == [False, True]
    np.testing.assert_allclose(infos[1]["applied_action"], [0.5, -0.2])


def test_a_world_behind_the_wall_clock_reports_its_speed_per_wall_second():
    """On a loaded machine the cell's physics falls behind the wall clock; the ERPM it answers is
    per wall second, so the VESC node's odometry, integrated over wall time, stays on the car
    (the tachometer counts distance either way)."""
    import threading

    import numpy as np

    from robot_rl.drivers.car.vesc_kinematics import CarGeometry
    from robot_rl.sim.cells.car_world import Calibration, TwinDrivetrain

    geometry = CarGeometry(0.05, 10.0, 4, 0.26)
    drivetrain = TwinDrivetrain(None, Calibration(geometry), threading.Lock())
    drivetrain.rolled(2.0, 0.01, np.zeros(3))
    at_pace = drivetrain.values().erpm
    assert at_pace == pytest.approx(2.0 * geometry.erpm_per_mps)
    drivetrain.pace = 0.5
    assert drivetrain.values().erpm == pytest.approx(at_pace / 2)
    assert drivetrain.values().tachometer == round(0.01 * 2.0 / geometry.metres_per_tach_count)
