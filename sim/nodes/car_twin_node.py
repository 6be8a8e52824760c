"""The RC car twin as a ROS 2 driver (docs/ARCHITECTURE.md): ``odom`` (nav_msgs/Odometry, body-frame
twist) and ``imu`` on sensor-data QoS; ``cmd_vel`` (Twist: linear.x speed m/s, angular.z yaw
rate rad/s, reliable depth 1), turned into a steering angle with the car's Ackermann geometry;
the twin-only wall contact on ``/sim/collision`` (std_msgs/Bool, for evaluation only). ``odom``
is the twin car's own drifting odometry, as a real car's driver publishes it, not its true pose.

    python -m robot_rl.sim.nodes.car_twin_node --ros-args -r __ns:=/car -p speedup:=5.0
"""

from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu
from std_msgs.msg import Bool

from robot_rl.drivers.car.vesc_kinematics import steering_for
from robot_rl.envs.backend import Reading
from robot_rl.ros.convert import imu_msg, odometry_msg, twist_to_array
from robot_rl.ros.node_base import main_for
from robot_rl.ros.qos import command_qos, sensor_qos
from robot_rl.sim.nodes.twin_driver import TwinDriverNode


def _quat_multiply(a, b) -> np.ndarray:
    """Hamilton product of quaternions (w, x, y, z)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


class CarTwinNode(TwinDriverNode):
    robots = ("car",)
    default_task = "car_lap"

    def __init__(self, **kwargs):
        super().__init__("car_twin", **kwargs)
        self._steering = 0.0

    def open_device(self) -> None:
        self._odom_pub = self.create_publisher(Odometry, "odom", sensor_qos())
        self._imu_pub = self.create_publisher(Imu, "imu", sensor_qos())
        self._collision_pub = self.create_publisher(Bool, "/sim/collision", sensor_qos())
        self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, command_qos())
        super().open_device()

    def publish_readings(self, reading: Reading, stamp: float) -> None:
        qpos = self.twin.data.qpos
        forward, lateral, yaw_rate = reading["velocity"]
        # odom is the car's own odometry (drifting), not the twin's true pose; its orientation
        # keeps the true tilt (an IMU sees it) turned by the odometry's yaw drift
        x, y, odom_yaw = reading["odom_pose"]
        drift = odom_yaw - reading["pose"][2]
        turn = np.array([math.cos(drift / 2), 0.0, 0.0, math.sin(drift / 2)])
        self._odom_pub.publish(
            odometry_msg(
                [x, y, qpos[2]],
                _quat_multiply(turn, qpos[3:7]),
                [forward, lateral, 0.0, 0.0, 0.0, yaw_rate],
                stamp,
            )
        )
        # the accelerometer sample of the period with the largest horizontal magnitude: an
        # impact between two publications still reaches the crash detector
        self._imu_pub.publish(
            imu_msg(qpos[3:7], reading["imu_gyro"], reading["imu_accel_peak"], stamp)
        )
        self._collision_pub.publish(Bool(data=bool(reading["collision"][0] > 0.5)))

    def _on_cmd_vel(self, msg: Twist) -> None:
        from robot_rl.sim.car_twin import MAX_STEERING, WHEELBASE

        velocity = twist_to_array(msg)
        speed, yaw_rate = float(velocity[0]), float(velocity[5])
        if np.isfinite(speed) and np.isfinite(yaw_rate):
            self._steering = steering_for(speed, yaw_rate, WHEELBASE, MAX_STEERING, self._steering)
        # Twist has no stamp: freshness is the watchdog's business; non-finite values are
        # refused (and latch a fault) by the twin's own checks
        self.apply({"speed": np.array([speed]), "steering": np.array([self._steering])}, None)

    def hold(self) -> None:
        self.twin.send({"speed": np.array([0.0]), "steering": np.array([0.0])})


main = main_for(CarTwinNode)

if __name__ == "__main__":
    main()
