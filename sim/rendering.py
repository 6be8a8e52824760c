"""Video frames of a twin at any size, apart from the task's camera observations."""

from __future__ import annotations

import mujoco
import numpy as np


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
    """``render_frame`` and ``close`` of a twin that holds its ``data``, a video renderer
    (``_video``, a ``FrameRenderer``) and its cameras' (``_renderer``, None without cameras)."""

    def render_frame(self, size: int = 256) -> np.ndarray:
        """A video frame from the twin's video camera (evaluation videos)."""
        return self._video.render(self.data, size)

    def close(self) -> None:
        self._video.close()
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
