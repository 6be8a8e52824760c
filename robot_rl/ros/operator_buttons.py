"""The operator's success and reject buttons on ``/teleop/joy`` (``robot_rl.rewards.operator``).

The teleop device publishes its buttons' state at a steady rate; a press is the edge from
released to pressed, so a button held down counts once, and the first message seen with the
button down counts as a press. The default indices are ``robot_rl.ros.teleop_contract``'s, as
every teleop node's. The node is a ``BackgroundNode``.

The questions the actor asks the operator (``OperatorLabeler.ask``: the reward classifier says
success, confirm or reject?) are shown on ``QUERY_TOPIC`` (``std_msgs/String``, one line per
opening and closing, ``question <n> open: ...`` / ``question <n> closed: ...``): a person with a
gamepad does not read the actor's terminal, so an operator's display (``ros2 topic echo
/operator/query``) or the simulated cell's operator watches it, and answers with the buttons.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Joy
from std_msgs.msg import String

from robot_rl.rewards.operator_input import REJECT, SUCCESS, OperatorInput
from robot_rl.ros.background_node import BackgroundNode
from robot_rl.ros.qos import teleop_qos
from robot_rl.ros.teleop_contract import JOY_TOPIC, REJECT_BUTTON, SUCCESS_BUTTON

QUERY_TOPIC = "/operator/query"
"""Where the open questions to the operator are shown (std_msgs/String)."""


def query_qos() -> QoSProfile:
    """Reliable, keep last 10 (an opening and its closing may follow each other closely),
    transient local: a display that joins late, or whose match with the actor completes just
    after a question was shown, still gets the newest lines."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=10,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


class JoyOperator(OperatorInput):
    """Success and reject presses from ``/teleop/joy`` as operator events."""

    name = "joy"

    def __init__(
        self,
        success_button: int = SUCCESS_BUTTON,
        reject_button: int = REJECT_BUTTON,
        topic: str = JOY_TOPIC,
        node_name: str = "operator_buttons",
    ):
        super().__init__()
        self.topic = topic
        self.buttons = {SUCCESS: success_button, REJECT: reject_button}
        self._down = dict.fromkeys(self.buttons, False)
        self._background = BackgroundNode(node_name, [(Joy, topic, self._on_joy, teleop_qos())])
        self.node = self._background.node
        self._query_pub = self.node.create_publisher(String, QUERY_TOPIC, query_qos())

    def _on_joy(self, msg: Joy) -> None:
        for event, index in self.buttons.items():
            down = index < len(msg.buttons) and bool(msg.buttons[index])
            if down and not self._down[event]:
                self.push(event)
            self._down[event] = down

    def held(self, event: str) -> bool:
        """Whether the newest message had ``event``'s button down."""
        return self._down[event]

    def describe(self, event: str) -> str:
        return f"button {self.buttons[event]} on {self.topic}"

    def announce(self, line: str) -> None:
        """Show a question's opening or closing on ``QUERY_TOPIC``."""
        self._query_pub.publish(String(data=line))

    def close(self) -> None:
        self._background.close()
