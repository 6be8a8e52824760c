"""A scripted picker for gym_hil's pick-cube envs, for ``train --backend gym --expert``:

    robot-rl train --backend gym --env-id gym_hil/PandaPickCube-v0 --env-kwargs \\
        reset_delay_seconds=0 --expert robot_rl.sim.experts.gym_hil_pick:PickCubeExpert --demos 20

It reads ``agent_pos`` (joint positions and velocities, the gripper's command 0-255 and the
pinch point) and the cube's centre: the state variant's ``environment_state``, or, with
``image_obs=True`` where the observation has none, the simulation's own sensor (a scripted
demonstrator may read privileged state, as the twin's experts do). It answers in the env's
units. PandaPickCubeBase-v0 takes a move of the target in metres, three ignored rotation
entries and a change of the grip in [-1, 1]; PandaPickCube-v0 (LeRobot's action wrapper on
it) takes the move in steps of ``ee_step_size`` (2.5 cm) and the grip change plus 1, in
[0, 2]. Over the cube, down to it, close, hold, lift.
"""

from __future__ import annotations

import numpy as np

STEP = 0.03
"""Largest move per step, metres (the env's 0.1 s step)."""
HOVER = 0.05
"""Height above the cube's centre while moving over it, metres."""
ALIGNED = 0.012
"""Horizontal and vertical distance under which the pinch point is at the cube, metres."""
CLOSING_STEPS = 4
"""Steps the fingers close for before the lift."""


class PickCubeExpert:
    def __init__(self, env):
        self.env = env
        self.step_size = _ee_step_size(env)
        """Metres per unit of the move (None: the Base env's metres)."""
        self.reset()

    def reset(self) -> None:
        self.closing = 0

    def __call__(self, observation) -> np.ndarray:
        pinch = np.asarray(observation["agent_pos"], np.float64)[-3:]
        cube = observation.get("environment_state")
        if cube is None:
            cube = self.env.unwrapped.data.sensor("block_pos").data
        cube = np.asarray(cube, np.float64)
        grip = -1.0
        if self.closing:
            self.closing += 1
            grip = 1.0
            lift = STEP if self.closing > CLOSING_STEPS else 0.0
            target = pinch + np.array([0.0, 0.0, lift])
        elif np.linalg.norm(cube[:2] - pinch[:2]) > ALIGNED:
            target = cube + np.array([0.0, 0.0, HOVER])
        else:
            target = cube
            if abs(pinch[2] - cube[2]) < ALIGNED:
                self.closing, grip = 1, 1.0
        move = np.clip(target - pinch, -STEP, STEP)
        if self.step_size is not None:  # the action wrapper's units
            return np.append(np.clip(move / self.step_size, -1, 1), grip + 1.0).astype(np.float32)
        return np.concatenate([move, np.zeros(3), [grip]]).astype(np.float32)


def _ee_step_size(env) -> np.ndarray | None:
    """The step size of LeRobot's EE action wrapper in ``env``'s chain of wrappers, if any."""
    try:
        step = env.get_wrapper_attr("ee_action_step_size")
    except AttributeError:  # the Base env: moves in metres
        return None
    return np.array([step[k] for k in "xyz"], np.float64)
