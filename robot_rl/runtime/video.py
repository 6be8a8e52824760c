"""MP4 of evaluation episodes, from the twin's or a gymnasium env's render_frame(), or the env's
first camera."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def frame_of(env, size: int) -> np.ndarray | None:
    if hasattr(env, "render_frame"):  # a gymnasium env (robot_rl.envs.gym_adapter)
        return env.render_frame(size)
    backend = getattr(env, "backend", None)
    if backend is not None and hasattr(backend, "render_frame"):
        return backend.render_frame(size)
    reading = getattr(env, "reading", None) or {}
    images = [v for k, v in reading.items() if k.startswith("image/")]
    return images[0] if images else None


class VideoRecorder:
    def __init__(self, path: str | Path, size: int = 256, fps: float = 10.0):
        self.path = Path(path)
        self.size = size
        self.fps = fps
        self._frames: list[np.ndarray] = []

    def capture(self, env) -> None:
        frame = frame_of(env, self.size)
        if frame is not None:
            self._frames.append(np.asarray(frame, np.uint8))

    def close(self) -> Path:
        import cv2

        if not self._frames:
            raise RuntimeError("no frames to write: this environment renders no images")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        height, width = self._frames[0].shape[:2]
        writer = cv2.VideoWriter(
            str(self.path), cv2.VideoWriter_fourcc(*"mp4v"), self.fps, (width, height)
        )
        for frame in self._frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
        return self.path
