"""The teleop contract's names (docs/ARCHITECTURE.md): its two topics and what each
``/teleop/joy`` button index means. Shared by every teleop device node, the simulated operator,
the actor's teleop source (``robot_rl.ros.teleop``) and the operator's success and reject
buttons (``robot_rl.rewards.operator``, ``robot_rl.ros.operator_buttons``), so the indices are
written once. Pure: no rclpy."""

TWIST_TOPIC = "/teleop/twist"
JOY_TOPIC = "/teleop/joy"

INTERVENE_BUTTON = 0
"""Held (or toggled on the device) while the operator drives instead of the policy."""
CLOSE_BUTTON = 1
"""Closes the gripper."""
OPEN_BUTTON = 2
"""Opens the gripper."""
SUCCESS_BUTTON = 3
"""The operator says "success" (the task is done; it also confirms a classifier's success and
starts an episode under ``--operator-starts-episodes``)."""
REJECT_BUTTON = 4
"""The operator rejects a reward classifier's success."""
JOY_BUTTONS = 5
"""Buttons every teleop node publishes in ``Joy.buttons`` (those a device lacks stay 0)."""
