"""Video frames of a twin at any size, apart from the task's camera observations."""

from __future__ import annotations

import mujoco
import numpy as np

_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
_FLIP_X = np.array([0.0, 1.0, 0.0, 0.0])
"""Half a turn about x (w x y z)."""


def overview_camera(lookat, distance: float, elevation: float = -60.0, azimuth: float = 90.0):
    """A free camera looking at ``lookat`` (a whole-scene view for videos)."""
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.lookat[:] = lookat
    camera.distance = distance
    camera.elevation = elevation
    camera.azimuth = azimuth
    return camera


class FrameRenderer:
    """Renders square frames from a named camera or an ``MjvCamera``; the renderer is made on
    first use and remade when the size changes."""

    def __init__(self, model: mujoco.MjModel, camera):
        self._model = model
        self._camera = camera
        self._renderer: mujoco.Renderer | None = None
        self._size = 0

    def render(self, data: mujoco.MjData, size: int) -> np.ndarray:
        if self._renderer is None or self._size != size:
            self.close()
            self._renderer = mujoco.Renderer(self._model, size, size)
            self._size = size
        self._renderer.update_scene(data, camera=self._camera)
        return self._renderer.render().copy()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


class TwinRendering:
    """``render_frame``, ``camera_models`` and ``close`` of a twin that holds its ``model``,
    ``data``, observed ``cameras`` rendered at ``image_size``, a video renderer (``_video``, a
    ``FrameRenderer``) and its cameras' (``_renderer``, None without cameras); an arm twin makes
    them with ``_open_cameras`` and reads its images with ``_render``."""

    mount_frames: tuple[tuple[str, str, str], ...] = ()
    """The frames a camera's mount is given in: (frame, 'body' or 'site', MuJoCo name)."""

    def camera_models(self) -> dict:
        """Each observed camera as rendered: an ideal pinhole of its ``fovy`` at the square
        observation size, mounted in the ``mount_frames`` entry fixed to the camera's body (the
        scene's pose, turned from MuJoCo's camera axes, looking along -z with y up, to the
        optical frame); no mount where none is."""
        from robot_rl.data.camera_model import CameraModel

        size = self.image_size
        fovy = {name: float(self.model.camera(name).fovy[0]) for name in self.cameras}
        return {
            name: CameraModel.from_fov(size, size, fovy[name], mount=self._mount(name))
            for name in self.cameras
        }

    def _mount(self, name: str):
        from robot_rl.data.camera_model import Mount

        camera = self.model.camera(name)
        for frame, kind, frame_name in self.mount_frames:
            if kind == "site":
                site = self.model.site(frame_name)
                body, pos, quat = site.bodyid[0], site.pos, site.quat
            else:
                body, pos, quat = self.model.body(frame_name).id, np.zeros(3), _IDENTITY
            if body != camera.bodyid[0]:
                continue
            inverse, position, turned, optical = np.empty(4), np.empty(3), np.empty(4), np.empty(4)
            mujoco.mju_negQuat(inverse, quat)
            mujoco.mju_rotVecQuat(position, camera.pos - pos, inverse)
            mujoco.mju_mulQuat(turned, inverse, camera.quat)
            mujoco.mju_mulQuat(optical, turned, _FLIP_X)  # y up, -z ahead -> y down, z ahead
            return Mount(frame, tuple(position.tolist()), tuple(optical.tolist()))
        return None

    def _open_cameras(self, cameras: tuple[str, ...], image_size: int, video: str = "front"):
        """Check ``cameras`` against the model's and make the renderers: the observed cameras'
        at ``image_size``, and the video's from the camera ``video``."""
        model = self.model
        self.camera_names = tuple(model.camera(i).name for i in range(model.ncam))
        unknown = set(cameras) - set(self.camera_names)
        if unknown:
            raise ValueError(f"unknown cameras {sorted(unknown)}; have {self.camera_names}")
        self.cameras, self.image_size = tuple(cameras), int(image_size)
        self._renderer = mujoco.Renderer(model, image_size, image_size) if cameras else None
        self._video = FrameRenderer(model, video)
        self._images: dict[str, np.ndarray] = {}
        self._images_time = -1.0

    def _render(self) -> dict[str, np.ndarray]:
        """Each observed camera's image of the current state (rendered once per simulated
        time; a scene change at the same time sets ``_images_time`` to -1)."""
        if self._renderer is None:
            return {}
        if self._images_time != self.data.time:
            for camera in self.cameras:
                self._renderer.update_scene(self.data, camera=camera)
                self._images[camera] = self._renderer.render()
            self._images_time = self.data.time
        return self._images

    def render_frame(self, size: int = 256) -> np.ndarray:
        """A video frame from the twin's video camera (evaluation videos)."""
        return self._video.render(self.data, size)

    def close(self) -> None:
        self._video.close()
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
