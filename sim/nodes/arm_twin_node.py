"""The arm twin as a ROS 2 driver: the topics, services and safety of a real arm driver
(docs/ARCHITECTURE.md; joints and frames as the Franka node's, ``drivers/arms/franka.py``),
served from the MuJoCo arm twin in its namespace (e.g. ``/arm``), plus the twin-only
``/sim/objects/<name>/pose``.

    python -m robot_rl.sim.nodes.arm_twin_node --ros-args -r __ns:=/arm -p speedup:=5.0
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from robot_rl.envs.backend import Reading
from robot_rl.ros.arm_contract import (
    ARM_JOINTS,
    BASE_FRAME,
    FLANGE_FRAME,
    GRIPPER_JOINT,
)
from robot_rl.ros.convert import (
    array_to_twist_stamped,
    array_to_wrench_stamped,
    from_stamp,
    joint_state_msg,
    msg_to_pose,
    pose_to_msg,
)
from robot_rl.ros.node_base import main_for
from robot_rl.ros.qos import command_qos, sensor_qos
from robot_rl.sim.nodes.twin_driver import TwinDriverNode


class ArmTwinNode(TwinDriverNode):
    robots = ("arm", "so101")  # the SO-101's twin publishes the same contract
    default_task = "pick_cube"

    def __init__(self, **kwargs):
        super().__init__("arm_twin", **kwargs)
        self._target_pos: np.ndarray | None = None
        self._target_quat: np.ndarray | None = None

    def open_device(self) -> None:
        qos = sensor_qos()
        self._pubs = {
            "joint_states": self.create_publisher(JointState, "joint_states", qos),
            "ee_pose": self.create_publisher(PoseStamped, "ee_pose", qos),
            "ee_twist": self.create_publisher(TwistStamped, "ee_twist", qos),
            "ee_wrench": self.create_publisher(WrenchStamped, "ee_wrench", qos),
            "gripper": self.create_publisher(JointState, "gripper/joint_states", qos),
        }
        self._object_pubs: dict[str, object] = {}
        self.create_subscription(PoseStamped, "cmd/ee_pose", self._on_pose, command_qos())
        self.create_subscription(Float64, "cmd/gripper", self._on_gripper, command_qos())
        super().open_device()

    def publish_readings(self, reading: Reading, stamp: float) -> None:
        pubs = self._pubs
        joints = getattr(self.twin, "joint_names", ARM_JOINTS)
        pubs["joint_states"].publish(
            joint_state_msg(joints, reading["joint_pos"], reading["joint_vel"], stamp=stamp)
        )
        pubs["ee_pose"].publish(
            pose_to_msg(reading["tcp_pos"], reading["tcp_quat"], stamp, BASE_FRAME)
        )
        pubs["ee_twist"].publish(array_to_twist_stamped(reading["tcp_vel"], stamp, BASE_FRAME))
        if "wrench" in reading:  # an arm with a force sensor (the SO-101 has none)
            pubs["ee_wrench"].publish(
                array_to_wrench_stamped(reading["wrench"], stamp, FLANGE_FRAME)
            )
        pubs["gripper"].publish(
            joint_state_msg([GRIPPER_JOINT], reading["gripper_pos"], stamp=stamp)
        )
        for key in reading:
            if key.startswith("object/") and key.endswith("_pos"):
                name = key[len("object/") : -len("_pos")]
                self._object_pub(name).publish(
                    pose_to_msg(reading[key], reading[f"object/{name}_quat"], stamp, BASE_FRAME)
                )

    def _object_pub(self, name: str):
        if name not in self._object_pubs:
            self._object_pubs[name] = self.create_publisher(
                PoseStamped, f"/sim/objects/{name}/pose", sensor_qos()
            )
        return self._object_pubs[name]

    def _on_pose(self, msg: PoseStamped) -> None:
        pos, quat = msg_to_pose(msg)
        self.apply({"tcp_pos": pos, "tcp_quat": quat}, from_stamp(msg.header.stamp))
        if not self.holding:
            self._target_pos, self._target_quat = pos, quat

    def _on_gripper(self, msg: Float64) -> None:
        # A gripper command alone keeps the pose target, so it does not feed the watchdog
        # (the pose stream is the one that must keep coming).
        if not self.accepts_commands() or not np.isfinite(msg.data):
            if not np.isfinite(msg.data):
                self.get_logger().error(f"non-finite gripper command refused: {msg.data}")
            return
        pos, quat = self._hold_target()
        self.twin.send(
            {"tcp_pos": pos, "tcp_quat": quat, "gripper": np.array([np.clip(msg.data, 0.0, 1.0)])}
        )

    def _hold_target(self) -> tuple[np.ndarray, np.ndarray]:
        if self.holding or self._target_pos is None:
            return self.reading["tcp_pos"], self.reading["tcp_quat"]
        return self._target_pos, self._target_quat

    def hold(self) -> None:
        reading = self.twin.read()
        self._target_pos, self._target_quat = reading["tcp_pos"], reading["tcp_quat"]
        self.twin.send({"tcp_pos": reading["tcp_pos"], "tcp_quat": reading["tcp_quat"]})


main = main_for(ArmTwinNode)

if __name__ == "__main__":
    main()
