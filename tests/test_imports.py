"""The core library imports without ROS 2, MuJoCo, torch or any device library."""

import json
import subprocess
import sys

CORE_MODULES = [
    "robot_rl.agents.sac",
    "robot_rl.agents.checkpoint",
    "robot_rl.agents.encoders",
    "robot_rl.data.replay",
    "robot_rl.data.mixing",
    "robot_rl.data.embedding_cache",
    "robot_rl.envs.robot_env",
    "robot_rl.envs.intervention",
    "robot_rl.envs.task",
    "robot_rl.runtime.train_loop",
    "robot_rl.tasks",
    "robot_rl.agents.data_parallel",
    "robot_rl.robot_kinds",
    "robot_rl.hardware",
    "robot_rl.drivers.registry",
    "robot_rl.drivers.command_guard",
]
HEAVY = ["rclpy", "mujoco", "torch", "pyrealsense2", "franky", "franky_sim", "hid", "evdev", "cv2"]


def test_core_imports_pull_in_no_ros_mujoco_torch_or_device_library():
    code = (
        "import importlib, json, sys\n"
        f"for name in {CORE_MODULES!r}: importlib.import_module(name)\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
