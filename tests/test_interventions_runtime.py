"""`--interventions {off,sim,ros}` for the actor and `robot-rl train`: which operator may take
over, checked before anything starts; the wrapper owns (and closes) its source; an operator on the
ROS 2 teleop topics takes over the twin. Discovery stays on this host (conftest.py)."""

import time

import numpy as np
import pytest
from fakes import TABLE_CUBE, FakeArm, ScriptedSource

from robot_rl.envs.intervention import InterventionConfig, InterventionWrapper
from robot_rl.envs.robot_env import RobotEnv
from robot_rl.runtime.actor import ActorConfig
from robot_rl.runtime.interventions import (
    check_interventions,
    realtime_pace,
    teleop_axes,
    with_interventions,
)
from robot_rl.tasks.pick_cube import PickCubeTask


def test_kinds_are_checked_against_the_backend():
    check_interventions("off", "gym")
    check_interventions("sim", "twin")
    check_interventions("ros", "twin")
    check_interventions("ros", "ros")
    with pytest.raises(ValueError, match="--interventions sim needs the twin"):
        check_interventions("sim", "ros")
    with pytest.raises(ValueError, match="--interventions ros needs a task env"):
        check_interventions("ros", "gym")
    with pytest.raises(ValueError, match="interventions must be one of off, sim, ros"):
        check_interventions("keyboard", "twin")


def test_actor_and_train_configs_refuse_what_cannot_run():
    with pytest.raises(ValueError, match="--interventions sim needs the twin"):
        ActorConfig(backend="ros", interventions="sim").validate()
    ActorConfig(backend="ros", interventions="ros").validate()

    from robot_rl.runtime.recipes import resolve
    from robot_rl.runtime.train_loop import TrainConfig

    with pytest.raises(ValueError, match="--interventions ros needs a task env"):
        resolve(TrainConfig(backend="gym", interventions="ros")).validate()
    resolve(TrainConfig(backend="twin", interventions="ros")).validate()


def test_teleop_axes_fit_each_task_action():
    from robot_rl.envs.task import TASKS, make_task

    for name in TASKS:  # every task: its own teleop_axes, or the arm's default
        task = make_task(name)
        assert len(teleop_axes(task, task.action_space().shape[0])) == task.action_space().shape[0]
    assert teleop_axes(make_task("car_lap"), 2) == ("linear.x", "angular.z")
    with pytest.raises(ValueError, match="no teleop mapping"):
        teleop_axes(make_task("car_lap"), 3)


class ClosingSource(ScriptedSource):
    closed = 0

    def close(self):
        self.closed += 1


def test_off_leaves_the_env_and_the_wrapper_closes_its_source():
    env = RobotEnv(PickCubeTask(reset_noise=0.0), FakeArm(cube_pos=TABLE_CUBE))
    assert with_interventions(env, "off") is env
    assert realtime_pace(env, "off", "twin") is None and realtime_pace(env, "ros", "ros") is None
    assert realtime_pace(env, "ros", "twin") is not None
    source = ClosingSource([])
    wrapped = InterventionWrapper(env, source, InterventionConfig())
    # code written for RobotEnv (the actor loop) reads these through the wrapper
    assert wrapped.task is env.task and wrapped.backend is env.backend
    wrapped.close()
    assert source.closed == 1


def test_a_failed_wrap_closes_the_env():
    class Env(RobotEnv):
        closed = False

        def close(self):
            self.closed = True

    env = Env(PickCubeTask(reset_noise=0.0), FakeArm(cube_pos=TABLE_CUBE))
    with pytest.raises(ValueError, match="interventions must be one of"):
        with_interventions(env, "nobody")
    assert env.closed


def test_ros_operator_takes_over_the_twin():
    rclpy = pytest.importorskip("rclpy")
    pytest.importorskip("mujoco")
    from geometry_msgs.msg import TwistStamped
    from rclpy.context import Context
    from sensor_msgs.msg import Joy

    from robot_rl.ros.qos import teleop_qos
    from robot_rl.ros.teleop import JOY_TOPIC, TWIST_TOPIC, RosTeleopSource
    from robot_rl.runtime.environments import make_env

    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("fake_teleop_device", context=context)
    twist_pub = node.create_publisher(TwistStamped, TWIST_TOPIC, teleop_qos())
    joy_pub = node.create_publisher(Joy, JOY_TOPIC, teleop_qos())
    env = with_interventions(make_env("twin", "pick_cube", "", 0), "ros")
    try:
        assert isinstance(env.source, RosTeleopSource)
        env.reset(seed=0)
        policy = np.zeros(4, np.float32)
        *_, info = env.step(policy)
        assert info["intervened"] is False  # nobody at the device yet

        deadline = time.monotonic() + 20
        while True:
            twist = TwistStamped()
            twist.twist.linear.x = 0.8
            joy = Joy()
            joy.buttons = [0, 1, 0]  # close the gripper
            twist_pub.publish(twist)
            joy_pub.publish(joy)
            time.sleep(0.05)
            *_, info = env.step(policy)
            if info["intervened"]:
                break
            assert time.monotonic() < deadline, "the operator's command never arrived"
        np.testing.assert_allclose(info["applied_action"], [0.8, 0.0, 0.0, 1.0], atol=1e-6)
        np.testing.assert_allclose(info["policy_action"], policy)
    finally:
        env.close()
        node.destroy_node()
        context.try_shutdown()
    assert not env.source.context.ok()  # the wrapper shut its teleop node down
