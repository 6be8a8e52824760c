"""Keyboard teleop: key logic, and the node itself typed at through a pseudo-terminal, heard by
the ROS 2 teleop source and by the operator's success and reject consumer (the actor's
``--operator joy``; discovery on this host, this run's domain: conftest.py)."""

import os
import pty
import subprocess
import sys
import termios
import time

import numpy as np
import pytest
from process_helpers import Proc

from robot_rl.drivers.teleop.keyboard_state import KeyboardState


def test_keys_move_for_their_hold_time_and_opposites_cancel():
    state = KeyboardState(speed=0.5, key_hold_s=0.3)
    state.press("w", now=0.0)
    state.press("R", now=0.0)  # caps lock must not matter
    assert state.output(0.1).linear == (0.5, 0.0, 0.5)
    assert state.output(0.5).linear == (0.0, 0.0, 0.0)  # released after the hold time
    state.press("a", now=1.0)
    state.press("d", now=1.0)
    assert state.output(1.0).linear == (0.0, 0.0, 0.0)


def test_buttons_toggle_and_pulse():
    state = KeyboardState(key_hold_s=0.3)
    state.press(" ", now=0.0)
    state.press("c", now=0.0)
    assert state.output(0.1).buttons == (1, 1, 0, 0, 0)
    assert state.output(1.0).buttons == (1, 0, 0, 0, 0)  # intervening stays toggled on
    state.press("o", now=1.0)
    state.press(" ", now=1.0)
    assert state.output(1.1).buttons == (0, 0, 1, 0, 0)
    assert not state.quit
    state.press("\x03", now=2.0)  # Ctrl-C arrives as a byte in raw mode
    assert state.quit


def test_success_and_reject_keys_press_the_contracts_buttons_for_their_hold_time():
    from robot_rl.ros.teleop_contract import REJECT_BUTTON, SUCCESS_BUTTON

    state = KeyboardState(key_hold_s=0.3)
    state.press("Y", now=0.0)  # caps lock must not matter
    state.press("y", now=0.2)  # the terminal's auto-repeat: one press held, not two
    buttons = state.output(0.4).buttons
    assert buttons[SUCCESS_BUTTON] == 1 and buttons[REJECT_BUTTON] == 0
    assert state.output(0.6).buttons == (0,) * 5  # released after the hold time
    state.press("n", now=1.0)
    assert state.output(1.1).buttons == (0, 0, 0, 0, 1)
    other = KeyboardState(success_key="k", reject_key="j")
    other.press("y", now=0.0)
    other.press("j", now=0.0)
    assert other.output(0.1).buttons == (0, 0, 0, 0, 1)
    assert state.released().buttons == (0,) * 5


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="speed"):
        KeyboardState(speed=2.0)
    with pytest.raises(ValueError, match="success_key 'w' must be one printable key"):
        KeyboardState(success_key="w")  # w moves the arm
    with pytest.raises(ValueError, match="must differ"):
        KeyboardState(success_key="k", reject_key="K")


def test_node_through_a_pty_reaches_the_teleop_source(tmp_path):
    pytest.importorskip("rclpy")
    from robot_rl.rewards.operator import REJECT, SUCCESS
    from robot_rl.ros.operator_buttons import JoyOperator
    from robot_rl.ros.teleop import JOY_TOPIC, RosTeleopSource

    master, slave = pty.openpty()
    lflag_before = termios.tcgetattr(slave)[3]
    # the child inherits this run's ROS_DOMAIN_ID and localhost discovery (conftest.py)
    child = Proc(
        [sys.executable, "-m", "robot_rl.drivers.teleop.keyboard"],
        tmp_path / "keyboard.log",
        terminal=slave,
    )
    try:
        # A generous staleness bound: on a loaded machine the node's last (release) message
        # must still count when it is read after the node has gone.
        with RosTeleopSource(max_age_s=30.0, node_name="keyboard_test_source") as source:

            def wait_for(predicate, every=None, timeout=20.0, alive=True):
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    if every is not None:
                        every()
                    command = source.poll()
                    if command is not None and predicate(command):
                        return command
                    if alive:
                        assert child.alive(), child.output()
                    time.sleep(0.05)
                raise AssertionError("the keyboard node's messages did not arrive")

            # the node is up and publishing (a released keyboard)
            wait_for(lambda c: not c.button and not np.any(c.action))
            command = wait_for(lambda c: c.action[0] > 0, every=lambda: os.write(master, b"w"))
            np.testing.assert_allclose(command.action, [1.0, 0.0, 0.0, 0.0])
            command = wait_for(lambda c: c.action[2] < 0, every=lambda: os.write(master, b"f"))
            assert command.action[2] == -1.0
            os.write(master, b" ")  # toggle intervening on
            wait_for(lambda c: c.button)
            command = wait_for(lambda c: c.action[3] > 0, every=lambda: os.write(master, b"c"))
            assert command.button
            # the operator's answers reach the actor's --operator joy consumer
            operator = JoyOperator(node_name="keyboard_test_operator")
            try:
                wait_for(lambda c: operator.node.count_publishers(JOY_TOPIC) > 0)
                os.write(master, b"y")
                assert operator.wait(20.0) == SUCCESS
                os.write(master, b"n")
                assert operator.wait(20.0) == REJECT
            finally:
                operator.close()
            os.write(master, b"q")
            assert child.wait_exit(10) == 0
            # the node's last word releases everything
            wait_for(lambda c: not c.button and not np.any(c.action), alive=False)
        # raw mode was undone: echo and line editing are back
        lflag_after = termios.tcgetattr(slave)[3]
        assert lflag_after == lflag_before
        assert lflag_after & termios.ECHO and lflag_after & termios.ICANON
    finally:
        child.stop(grace=0)
        os.close(master)
        os.close(slave)


def test_node_without_a_terminal_says_so():
    pytest.importorskip("rclpy")
    result = subprocess.run(
        [sys.executable, "-m", "robot_rl.drivers.teleop.keyboard"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr
