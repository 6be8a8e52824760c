"""Every device by name, in the manner of LeRobot's device registries: a hardware file says
``type: franka`` and the registry knows the device's kind, console script, node and parameters.

Each device's config dataclass (its node's ROS 2 parameters) lives in a light ``configs.py`` of
its kind folder (no ROS 2, no device library) and registers itself with
``robot_rl.drivers.config.register_device``; the node class is a ``"module:attribute"`` string,
imported on use. So reading the registry, and checking a hardware file against it, needs no ROS 2.
The simulated cells' parts register beside the real devices, so a hardware file names both alike.
"""

from __future__ import annotations

from robot_rl.drivers.arms import configs as arm_devices
from robot_rl.drivers.cameras import configs as camera_devices
from robot_rl.drivers.car import configs as car_devices
from robot_rl.drivers.config import DEVICES, DeviceType
from robot_rl.drivers.teleop import configs as teleop_devices
from robot_rl.sim.cells import configs as cell_devices

CONFIG_MODULES = (arm_devices, camera_devices, car_devices, teleop_devices, cell_devices)
"""The light modules whose ``@register_device`` classes fill ``DEVICES`` on import."""

__all__ = ["DEVICES", "DeviceType", "by_executable", "device_type"]


def device_type(name: str) -> DeviceType:
    try:
        return DEVICES[name]
    except KeyError:
        raise KeyError(
            f"unknown device type {name!r}; known: {', '.join(sorted(DEVICES))}"
        ) from None


def by_executable(executable: str) -> DeviceType | None:
    return next((d for d in DEVICES.values() if d.executable == executable), None)
