"""The simulated cell's operator answers the actor's questions as a person would (issue 26,
point 6): the actor shows each open question on /operator/query, the operator looks at the
scene (the world's ground truth) and, after a person's reaction time, presses reject on a false
success and success on a real one, over /teleop/joy; the actor never waits on it.

The answering logic is tested on its own (explicit clock), then end to end over ROS 2: the
cell's operator node, a publisher standing in for the arm and the world, and the actor's own
joy device and operator labeller."""

from __future__ import annotations

import time

import numpy as np
import pytest

from robot_rl.rewards.operator import question_line
from robot_rl.rewards.operator_input import REJECT, SUCCESS
from robot_rl.sim.cells.operator_answers import QuestionAnswerer


def answerer():
    return QuestionAnswerer(np.random.default_rng(0), delay=(0.5, 2.0), press_s=0.3)


def first_press(answers, start: float):
    """(time, event) of the first press at or after ``start``, looking every 10 ms."""
    for tick in range(1000):
        now = start + tick * 0.01
        event = answers.update(now)
        if event is not None:
            return now, event
    return None


def test_a_false_success_gets_a_reject_after_a_reaction_time_and_a_real_one_a_success():
    answers = answerer()
    answers.on_line(question_line(1, "open", "the reward classifier says success"), False, 10.0)
    at, event = first_press(answers, 10.0)
    assert event == REJECT and 10.5 <= at <= 12.0
    assert answers.down(REJECT, at) and not answers.down(SUCCESS, at)
    assert not answers.down(REJECT, at + 0.3)  # one press, released
    answers.on_line(question_line(2, "open", "..."), True, 20.0)
    at, event = first_press(answers, 20.0)
    assert event == SUCCESS and 20.5 <= at <= 22.0
    assert answers.answered == {SUCCESS: 1, REJECT: 1}


def test_a_question_closed_first_or_answered_by_its_own_success_press_gets_no_press():
    answers = answerer()
    answers.on_line(question_line(1, "open", "..."), False, 0.0)
    answers.on_line(question_line(1, "closed", "operator rejected the success"), None, 0.2)
    assert first_press(answers, 0.0) is None
    # it pressed success on seeing the task done, just as the classifier fired
    answers.watch_success_button(True, 5.0)
    answers.on_line(question_line(2, "open", "..."), True, 5.2)
    assert first_press(answers, 5.2) is None
    # or right after the question opened, before its own answer was due
    answers.on_line(question_line(3, "open", "..."), True, 30.0)
    answers.watch_success_button(True, 30.1)
    assert first_press(answers, 30.1) is None
    # a scene it cannot see: no answer (the actor's timeout counts a reject)
    answers.on_line(question_line(4, "open", "..."), None, 40.0)
    assert first_press(answers, 40.0) is None and answers.unjudged == 1
    answers.on_line("some other line", False, 50.0)
    assert first_press(answers, 50.0) is None


def test_two_open_questions_are_answered_one_press_at_a_time_in_order():
    answers = answerer()
    answers.on_line(question_line(1, "open", "..."), False, 0.0)
    answers.on_line(question_line(2, "open", "..."), True, 0.1)
    first = first_press(answers, 0.0)
    second = first_press(answers, first[0] + 0.01)
    assert second[0] >= first[0] + 0.3  # the first press was released before the second
    assert sorted([first[1], second[1]]) == [REJECT, SUCCESS]


def test_the_cells_operator_rejects_a_false_success_and_confirms_a_real_one_over_ros():
    pytest.importorskip("rclpy")
    import rclpy
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from operator_helpers import wait_for
    from rclpy.parameter import Parameter
    from ros_helpers import Spinner
    from sensor_msgs.msg import JointState

    from robot_rl.rewards.operator import OperatorLabeler
    from robot_rl.ros import convert
    from robot_rl.ros.operator_buttons import QUERY_TOPIC, JoyOperator
    from robot_rl.ros.qos import sensor_qos
    from robot_rl.sim.cells.cell_human import CellHumanNode
    from robot_rl.sim.cells.topics import CUBE_TOPIC

    context = rclpy.Context()
    rclpy.init(context=context)
    human = CellHumanNode(  # its own success presses off: only its answers press here
        context=context, parameter_overrides=[Parameter("say_success", value=False)]
    )
    world = rclpy.create_node("test_world", context=context)
    publishers = {
        topic: world.create_publisher(kind, topic, sensor_qos())
        for topic, kind in (
            ("/arm/ee_pose", PoseStamped),
            ("/arm/ee_twist", TwistStamped),
            ("/arm/gripper/joint_states", JointState),
            (CUBE_TOPIC, PoseStamped),
        )
    }
    scene = {"cube": np.array([0.5, 0.05, 0.025]), "grip": 0.0}  # the cube on the table
    tcp = np.array([0.5, 0.05, 0.2])

    def publish_scene():
        now = time.time()
        quat = np.array([0.0, 1.0, 0.0, 0.0])
        publishers["/arm/ee_pose"].publish(convert.pose_to_msg(tcp, quat, now))
        twist = TwistStamped(header=convert.header(now))
        publishers["/arm/ee_twist"].publish(twist)
        joints = JointState(header=convert.header(now), position=[scene["grip"]])
        publishers["/arm/gripper/joint_states"].publish(joints)
        publishers[CUBE_TOPIC].publish(convert.pose_to_msg(scene["cube"], [1, 0, 0, 0], now))

    world.create_timer(0.05, publish_scene)
    spinner = Spinner(human, context)
    spinner.executor.add_node(world)  # one executor spins the operator and the world
    device = labeler = None
    try:
        device = JoyOperator(node_name="test_operator_buttons")
        labeler = OperatorLabeler(device, timeout=60.0, log=lambda _: None)
        wait_for(lambda: human.count_publishers(QUERY_TOPIC) >= 1, 30.0, "the query topic")
        wait_for(lambda: device.node.count_subscribers(QUERY_TOPIC) >= 1, 30.0, "its reader")
        wait_for(lambda: human._reading() is not None, 30.0, "the operator to see the scene")

        question = labeler.ask(None, {})  # a false success: the cube rests on the table
        asked = time.monotonic()
        verdict = wait_for(lambda: (v := question.poll()) is not None and (v,), 60.0, "the answer")[
            0
        ]
        assert verdict is False and labeler.answers == {SUCCESS: 0, REJECT: 1, "none": 0}
        assert time.monotonic() - asked >= 0.5  # a person's reaction time, not an instant

        scene["cube"], scene["grip"] = tcp.copy(), 0.35  # now held 17 cm above the table
        wait_for(lambda: human.task.success(human._reading()), 30.0, "the operator to see it")
        question = labeler.ask(None, {})
        verdict = wait_for(lambda: (v := question.poll()) is not None and (v,), 60.0, "the answer")[
            0
        ]
        assert verdict is True and labeler.answers[SUCCESS] == 1
    finally:
        if device is not None:
            device.close()
        spinner.close()
        world.destroy_node()
