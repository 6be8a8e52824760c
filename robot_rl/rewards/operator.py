"""The operator as the reward source on a robot: a success key, and answers to the relabeller.

Devices: ``keyboard`` (keys on stdin; a terminal is put in cbreak mode and restored on close)
and ``joy`` (buttons on ``/teleop/joy``; a press is a released -> pressed edge). Both yield
``"success"`` / ``"reject"`` events, read by ``OperatorSuccess`` (pays as a firing classifier
does) and ``OperatorLabeler`` (a ``Labeler`` with ``label_timeout``). The actor asks without
waiting (``OperatorLabeler.ask``); events answer open questions oldest first, before
``OperatorSuccess`` sees any, so a confirm press never pays the next episode too. A device with
``announce`` (joy: ``/operator/query``) shows each question opening and closing as one line
(``question_line``, ``parse_question``). Pure Python; ROS 2 is imported only for ``joy``.
"""

from __future__ import annotations

import logging
import os
import re
import select
import sys
import termios
import threading
import time
import tty
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import gymnasium as gym

from robot_rl.envs.robot_env import RobotEnvWrapper
from robot_rl.errors import UserError
from robot_rl.rewards.operator_input import REJECT, SUCCESS, OperatorInput
from robot_rl.ros.teleop_contract import REJECT_BUTTON, SUCCESS_BUTTON

logger = logging.getLogger(__name__)

OPERATOR_DEVICES = ("off", "keyboard", "joy")


@dataclass(kw_only=True)
class OperatorOptions:
    operator: Literal["off", "keyboard", "joy"] = "off"
    """The operator as a reward source: 'keyboard' keys on this terminal (stdin), 'joy' buttons
    on /teleop/joy. Their success key/button pays reward 1 and ends the episode; with
    --relabel-false-positives they also confirm or reject the classifier's successes."""
    success_key: str = "y"
    """Keyboard: the key that says "success" (and confirms a classifier's success)."""
    reject_key: str = "n"
    """Keyboard: the key that rejects a classifier's success."""
    success_button: int = SUCCESS_BUTTON
    """Joy: the /teleop/joy button index that says "success" (0-2 are the teleop contract's
    intervene, close and open)."""
    reject_button: int = REJECT_BUTTON
    """Joy: the /teleop/joy button index that rejects a classifier's success."""
    label_timeout: float = 10.0
    """Seconds the operator has to answer when the classifier fires; no answer within it
    counts as a reject (logged). The actor goes on meanwhile (the episode ends as a tentative
    success); eval and record commands wait for the answer."""

    def check_operator(self) -> None:
        if self.operator not in OPERATOR_DEVICES:
            raise UserError(
                f"--operator must be one of {', '.join(OPERATOR_DEVICES)}, got {self.operator!r}"
            )
        for name in ("success_key", "reject_key"):
            key = getattr(self, name)
            if len(key) != 1 or not key.isprintable() or key.isspace():
                raise UserError(
                    f"--{name.replace('_', '-')} must be one printable character, got {key!r}"
                )
        if self.success_key == self.reject_key:
            raise UserError("--success-key and --reject-key must differ")
        if min(self.success_button, self.reject_button) < 0:
            raise UserError("--success-button and --reject-button must be >= 0")
        if self.success_button == self.reject_button:
            raise UserError("--success-button and --reject-button must differ")
        if not self.label_timeout > 0:
            raise UserError(f"--label-timeout must be > 0, got {self.label_timeout}")

    def open_operator(self) -> OperatorInput | None:
        """The operator's device (None for 'off'); the caller closes it."""
        if self.operator == "keyboard":
            return KeyboardOperator(sys.stdin.fileno(), self.success_key, self.reject_key)
        if self.operator == "joy":
            try:
                from robot_rl.ros.operator_buttons import JoyOperator
            except ImportError as err:  # pragma: no cover - depends on the install
                raise UserError(
                    f"--operator joy needs rclpy: pip install -e '.[ros]' ({err})"
                ) from err
            return JoyOperator(self.success_button, self.reject_button)
        return None


class KeyboardOperator(OperatorInput):
    """Keys from a file descriptor (a terminal in cbreak mode, or a pipe) read on a thread."""

    name = "keyboard"

    def __init__(self, fd: int, success_key: str = "y", reject_key: str = "n"):
        super().__init__()
        self.fd = fd
        self.keys = {success_key.lower(): SUCCESS, reject_key.lower(): REJECT}
        self._saved = None
        if os.isatty(fd):  # every key at once, unechoed; Ctrl-C still interrupts
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="operator_keys", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            data = os.read(self.fd, 64)
            if not data:
                logger.warning(
                    "operator keyboard: end of input; no further answers (a "
                    "classifier's success now times out as a reject)"
                )
                return
            for key in data.decode(errors="ignore").lower():
                if key in self.keys:
                    self.push(self.keys[key])

    def describe(self, event: str) -> str:
        key = next(k for k, e in self.keys.items() if e == event)
        return f"key '{key}'"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None


_QUESTION = re.compile(r"^question (\d+) (open|closed)\b")


def question_line(number: int, state: str, text: str) -> str:
    """A question's line as the device shows it: ``question <n> <open|closed>: <text>``."""
    return f"question {number} {state}: {text}"


def parse_question(line: str) -> tuple[int, str] | None:
    """``(n, "open" | "closed")`` of a question's line; None for any other text."""
    match = _QUESTION.match(line)
    return (int(match.group(1)), match.group(2)) if match else None


class OperatorQuestion:
    """One open question to the operator (``OperatorLabeler.ask``)."""

    def __init__(self, labeler: OperatorLabeler, number: int, deadline: float):
        self.labeler, self.number, self.deadline = labeler, number, deadline
        self.verdict: bool | None = None

    def poll(self) -> bool | None:
        """The operator's verdict (no answer by the deadline: False); None while open."""
        self.labeler.settle()
        return self.verdict

    def withdraw(self) -> None:
        """Close it unanswered (the run stops); the operator's display is told."""
        self.labeler.withdraw(self)


class OperatorLabeler:
    """A ``Labeler`` whose answer is the operator's: confirm, reject, or no answer (reject).

    ``label`` waits for the answer (the robot holds); ``ask`` does not: it opens a question that
    the device's next events answer (``settle``, oldest question first), or that closes as a
    reject at its deadline."""

    def __init__(
        self,
        operator: OperatorInput,
        timeout: float = 10.0,
        log: Callable[[str], None] | None = None,
    ):
        self.operator = operator
        self.timeout = timeout
        self.log = log or logger.info
        self.answers = {SUCCESS: 0, REJECT: 0, "none": 0}
        self._open: deque[OperatorQuestion] = deque()
        self._asked = 0

    def open_questions(self) -> int:
        """Questions asked and not answered yet (the device's events are theirs meanwhile)."""
        return len(self._open)

    def ask(self, env, obs: dict) -> OperatorQuestion:
        """Opens a question and returns at once; the robot goes on."""
        self._asked += 1
        question = OperatorQuestion(self, self._asked, time.monotonic() + self.timeout)
        self._open.append(question)
        text = (
            f"the reward classifier says success: {self.operator.describe(SUCCESS)} confirms, "
            f"{self.operator.describe(REJECT)} rejects (no answer within {self.timeout:g} s = "
            "reject); the robot goes on meanwhile"
        )
        self.log(question_line(question.number, "open", text))
        self._announce(question, "open", text)
        return question

    def settle(self) -> None:
        """The device's events answer the open questions, oldest first; a question past its
        deadline closes as a reject (logged). Never waits."""
        while self._open:
            event = self.operator.wait(0.0)  # the next queued event, if any
            if event is None:
                break
            self._close(self._open.popleft(), event)
        now = time.monotonic()
        while self._open and self._open[0].deadline <= now:
            self._close(self._open.popleft(), None)

    def withdraw(self, question: OperatorQuestion) -> None:
        if question in self._open:
            self._open.remove(question)
            question.verdict = False
            self._announce(question, "closed", "withdrawn (the run stopped)")

    def _close(self, question: OperatorQuestion, answer: str | None) -> None:
        if answer is None:
            self.answers["none"] += 1
            text = f"no answer from the operator within {self.timeout:g} s: rejected"
        else:
            self.answers[answer] += 1
            text = f"operator {'confirmed' if answer == SUCCESS else 'rejected'} the success"
        question.verdict = answer == SUCCESS
        self.log(question_line(question.number, "closed", text))
        self._announce(question, "closed", text)

    def _announce(self, question: OperatorQuestion, state: str, text: str) -> None:
        announce = getattr(self.operator, "announce", None)
        if announce is not None:
            announce(question_line(question.number, state, text))

    def label(self, env, obs: dict) -> bool:
        """Asks the operator; the robot holds meanwhile (no step, so no command)."""
        self.log(
            f"reward classifier fired: {self.operator.describe(SUCCESS)} confirms success, "
            f"{self.operator.describe(REJECT)} rejects; waiting up to {self.timeout:g} s "
            "(no answer = reject)"
        )
        answer = self.operator.wait(self.timeout)
        if answer is None:
            self.answers["none"] += 1
            self.log(f"no answer from the operator within {self.timeout:g} s: rejected")
            return False
        self.answers[answer] += 1
        self.log(f"operator {'confirmed' if answer == SUCCESS else 'rejected'} the success")
        return answer == SUCCESS


class OperatorSuccess(RobotEnvWrapper):
    """Reward 1 and the episode's end on the operator's success key or button.

    A success event that arrived since the last step pays this step and ends the episode as
    terminated, with ``info["success"]`` true; ``info`` gains ``operator_success``. Otherwise
    the step is the wrapped env's: a classifier's reward under this wrapper, or the task's own
    where it scores itself (in robot mode a task whose scoring reads the twin pays nothing, so
    the operator is then the only source). A reject event outside a relabelling query means
    nothing and is dropped. While ``labeler`` (an ``OperatorLabeler`` asked without waiting)
    has open questions, the events are left to it: they answer those first."""

    def __init__(self, env: gym.Env, operator: OperatorInput, labeler=None):
        super().__init__(env)
        self.operator = operator
        self.labeler = labeler

    def _questions_open(self) -> bool:
        return self.labeler is not None and self.labeler.open_questions() > 0

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        if not self._questions_open():
            self.operator.poll()  # a press during the reset belongs to no episode
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        said_success = not self._questions_open() and SUCCESS in self.operator.poll()
        if said_success:
            reward, terminated, truncated = 1.0, True, False
            info = {**info, "success": True}
            logger.info("operator: success (%s)", self.operator.describe(SUCCESS))
        return obs, float(reward), terminated, truncated, {**info, "operator_success": said_success}

    def close(self):
        try:
            super().close()
        finally:
            self.operator.close()


class OperatorStartsEpisodes(gym.Wrapper):
    """Each episode starts on the operator's success key or button, after the robot's reset.

    On a robot the scene is put back by a person: the reset brings the arm to its reset pose
    (out of the way), the operator puts the object back and presses the success key or button,
    and only then is the episode's first observation read (a second reset of the env, with the
    arm already there). Wrap it around ``OperatorSuccess`` (whose reset drops the start press).
    Waits as long as the operator takes, reminding every ``remind_every`` seconds."""

    def __init__(
        self,
        env: gym.Env,
        operator: OperatorInput,
        log: Callable[[str], None] | None = None,
        remind_every: float = 30.0,
    ):
        super().__init__(env)
        self.operator = operator
        self.log = log or logger.info
        self.remind_every = remind_every

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        self.log(
            f"robot at its reset pose: set the scene up, then {self.operator.describe(SUCCESS)} "
            "starts the episode"
        )
        self.operator.poll()  # only a press from now on starts it
        while self.operator.wait(self.remind_every) != SUCCESS:
            self.log(f"waiting for {self.operator.describe(SUCCESS)} to start the episode")
        return self.env.reset(**kwargs)
