"""Adapt a gymnasium environment to the agent's conventions (``--backend gym``).

The agent reads a flat dict: the state as one float32 vector under ``"state"`` and each camera's
uint8 HxWx3 image under the camera's name, and acts in [-1, 1]. ``GymAdapter`` maps the env's
observation onto that: a Box is the state (or, a uint8 HxWx3 Box, the one camera); a Dict,
nested dicts included, by its entries' paths (``pixels/front``): the image entries (uint8 Boxes
of rank 3) the run names as cameras (by path or by a leaf name no other image entry has),
resized to its image size; the other Box entries flattened into the state in sorted path order
(or the order ``state_keys`` gives). Actions in [-1, 1] go to the env's bounds. ``info["success"]``
is whichever of ``success``, ``is_success`` (gymnasium-robotics, most benchmarks) or ``succeed``
(gym_hil) the env gives. Bad names and spaces the agent cannot read are one-line ``UserError``s.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from robot_rl.errors import UserError

SUCCESS_KEYS = ("success", "is_success", "succeed")
"""``info`` keys that say an episode succeeded, in the order they are read."""


def parse_env_kwargs(pairs: Sequence[str]) -> dict:
    """``("image_obs=True", "reward_type=dense")`` -> ``{"image_obs": True, "reward_type":
    "dense"}``: each value a Python literal (3, 0.5, True, None, 'text', (1, 2)), ``true``/``false``
    as booleans, anything else the string as typed."""
    out: dict = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UserError(
                f"--env-kwargs: expected key=value with a Python name as key, got {pair!r}"
            )
        if key in out:
            raise UserError(f"--env-kwargs: {key!r} is given twice")
        out[key] = _literal(text.strip())
    return out


def _literal(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _is_image(box: gym.spaces.Box) -> bool:
    return box.dtype == np.uint8 and len(box.shape) == 3


def _leaves(space: gym.Space, path: str = "") -> list[tuple[str, gym.spaces.Box]]:
    """``(path, Box)`` for every entry of a (nested) Dict space, sorted by path."""
    if isinstance(space, gym.spaces.Dict):
        out = []
        for key, sub in space.spaces.items():
            out += _leaves(sub, f"{path}/{key}" if path else str(key))
        return sorted(out)
    if isinstance(space, gym.spaces.Box):
        return [(path, space)]
    raise UserError(
        f"observation entry {path or '(the whole observation)'!r} is a {type(space).__name__} "
        "space: --backend gym reads Box entries and Dicts of them"
    )


def _pick(names: Sequence[str], entries: list[str], what: str, flag: str) -> list[str]:
    """Each name as an entry's path: itself, or the one entry whose last part it is."""
    out = []
    for name in names:
        matches = [p for p in entries if p == name] or [
            p for p in entries if p.rsplit("/", 1)[-1] == name
        ]
        if len(matches) != 1:
            why = "matches several" if matches else "names none"
            raise UserError(
                f"{flag} {name!r} {why} of the env's {what} entries: "
                f"{', '.join(entries) or 'there are none'}"
            )
        out.append(matches[0])
    return out


def _entry(obs, path: str):
    for key in path.split("/") if path else ():
        obs = obs[key]
    return obs


class GymAdapter(gym.Wrapper):
    """A gymnasium env as the agent reads it (this module's docstring says how)."""

    def __init__(
        self,
        env: gym.Env,
        cameras: Sequence[str] = (),
        image_size: int = 64,
        state_keys: Sequence[str] = (),
    ):
        super().__init__(env)
        space = env.action_space
        bounded = isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low))
        if not (bounded and np.all(np.isfinite(space.high))):
            raise UserError(f"expected a bounded Box action space, got {space}")
        self._low = space.low.astype(np.float64)
        self._high = space.high.astype(np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, space.shape, np.float32)
        self.image_size = int(image_size)
        self.success_signal = False
        """Whether the env has said success or failure in an ``info`` yet."""
        self._last_obs: dict | None = None
        self.reading = None
        """The env's own last observation (what a ``--expert`` policy reads)."""
        self._map_observation(env.observation_space, tuple(cameras), tuple(state_keys))

    def _map_observation(self, space, cameras: tuple, state_keys: tuple) -> None:
        leaves = _leaves(space)
        boxes = dict(leaves)
        images = [p for p, box in leaves if _is_image(box)]
        others = [p for p, box in leaves if not _is_image(box)]
        if images and not cameras:
            hint = " ".join(p.rsplit("/", 1)[-1] for p in images)
            raise UserError(
                f"the env observes images ({', '.join(images) or 'the whole observation'}): "
                f"name the ones to learn from with --cameras (e.g. --cameras {hint})"
            )
        if images == [""]:  # a bare image Box: the one camera, by the name given
            if len(cameras) != 1:
                raise UserError(
                    f"the env observes one image: give one --cameras name, not {cameras}"
                )
            self._cameras = {cameras[0]: ""}
        else:
            known = {p for p, _ in leaves}
            for name in cameras:
                if name in known and name not in images:
                    raise UserError(f"--cameras {name!r} is not an image (uint8, HxWxC) entry")
            self._cameras = dict(
                zip(cameras, _pick(cameras, images, "image", "--cameras"), strict=True)
            )
        for name, path in self._cameras.items():
            if name == "state":
                raise UserError(
                    "--cameras: 'state' is the state's key; name the camera by its path"
                )
            shape = boxes[path].shape
            if 3 not in (shape[0], shape[-1]):
                raise UserError(f"camera {name!r} ({path or 'observation'}) is {shape}: not RGB")
        self._state = _pick(state_keys, others, "state", "--state-keys") if state_keys else others
        size = sum(int(np.prod(boxes[p].shape)) for p in self._state)
        spaces: dict[str, gym.Space] = {
            name: gym.spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
            for name in self._cameras
        }
        if self._state:
            spaces["state"] = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        if not spaces:
            raise UserError("the env's observation has no entry the agent can read")
        self.observation_space = gym.spaces.Dict(spaces)

    @property
    def state_entries(self) -> list[str]:
        """The paths flattened into ``"state"``, in order."""
        return list(self._state)

    def _image(self, image) -> np.ndarray:
        image = np.asarray(image, np.uint8)
        if image.shape[-1] != 3 and image.shape[0] == 3:  # CHW
            image = image.transpose(1, 2, 0)
        return _resized(image, self.image_size, self.image_size)

    def _wrap(self, obs) -> dict[str, np.ndarray]:
        self.reading = obs
        out = {name: self._image(_entry(obs, path)) for name, path in self._cameras.items()}
        if self._state:
            parts = [np.asarray(_entry(obs, p), np.float32).ravel() for p in self._state]
            out["state"] = np.concatenate(parts)
        self._last_obs = out
        return out

    def _with_success(self, info: dict) -> dict:
        for key in SUCCESS_KEYS:
            if key in info:
                self.success_signal = True
                return {**info, "success": bool(info[key])}
        return info

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._wrap(obs), info

    def to_unit(self, action) -> np.ndarray:
        """An action in the env's units as the agent's [-1, 1] (clipped to the bounds)."""
        action = np.asarray(action, np.float64)
        unit = 2.0 * (action - self._low) / np.maximum(self._high - self._low, 1e-12) - 1.0
        return np.clip(unit, -1.0, 1.0).astype(np.float32)

    def step(self, action):
        action = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
        scaled = self._low + (action + 1.0) * 0.5 * (self._high - self._low)
        obs, reward, terminated, truncated, info = self.env.step(scaled.astype(np.float32))
        return self._wrap(obs), float(reward), terminated, truncated, self._with_success(info)

    def render_frame(self, size: int) -> np.ndarray | None:
        """A video frame ``size`` pixels high: the env's ``render()`` with render_mode
        'rgb_array' (several views side by side), else the cameras of the last observation."""
        frames = None
        if self.env.render_mode == "rgb_array":
            try:
                frames = self.env.render()
            except gym.error.DependencyNotInstalled as err:
                name = self.env.spec.id if self.env.spec else type(self.env.unwrapped).__name__
                raise UserError(f"--video: {name} cannot render here: {err}") from None
        elif self._cameras and self._last_obs is not None:
            frames = [self._last_obs[name] for name in self._cameras]
        if frames is None:
            return None
        if isinstance(frames, np.ndarray):
            frames = [frames]
        views = []
        for frame in frames:
            frame = np.asarray(frame, np.uint8)
            width = max(1, round(frame.shape[1] * size / frame.shape[0]))
            views.append(_resized(frame, size, width))
        return np.concatenate(views, axis=1)


def _resized(image: np.ndarray, height: int, width: int) -> np.ndarray:
    if image.shape[:2] == (height, width):
        return image
    from PIL import Image  # matplotlib's dependency, so always there

    return np.asarray(Image.fromarray(image).resize((width, height), Image.Resampling.BILINEAR))


def _import_env_module(env_id: str) -> None:
    """``gym_hil/PandaPickCubeBase-v0`` needs ``import gym_hil`` first, as ``gym_hil:...``
    does: import the namespace's module when the registry lacks the id."""
    if ":" in env_id or "/" not in env_id or env_id in gym.registry:
        return
    namespace = env_id.split("/", 1)[0]
    try:
        importlib.import_module(namespace)
    except ImportError as err:
        raise UserError(
            f"cannot make gymnasium environment {env_id!r}: its namespace's module "
            f"{namespace!r} does not import ({err}); install it (gym_hil: pip install -e "
            "'.[gym-hil]')"
        ) from None


def make_gym_env(
    env_id: str,
    seed: int | None = None,
    env_kwargs: dict | None = None,
    cameras: Sequence[str] = (),
    image_size: int = 64,
    state_keys: Sequence[str] = (),
    render_mode: str | None = None,
) -> GymAdapter:
    _import_env_module(env_id)
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        env = gym.make(env_id, **kwargs)
    except (gym.error.Error, ModuleNotFoundError) as err:
        raise UserError(f"cannot make gymnasium environment {env_id!r}: {err}") from None
    except TypeError as err:  # an argument the env does not take
        raise UserError(f"{env_id}: --env-kwargs: {err}") from None
    try:
        env = GymAdapter(env, cameras=cameras, image_size=image_size, state_keys=state_keys)
    except BaseException:
        env.close()
        raise
    if seed is not None:
        env.action_space.seed(seed)
    return env
