"""Camera driver nodes: frame-to-publication latency and CPU share. JSON lines.

RealSense: two node processes, as in a two-camera cell, each streaming 640x480 colour at 30 Hz
from an ``rs.software_device`` (frames injected in the node's process and stamped, in the
global_time domain, at injection) through the librealsense pipeline, cropped to 480x480 and
resized to 128x128. Each process reports the latency from the frame's stamp to the return of
``publish`` and its CPU share (process CPU time over wall time, with and without the thread that
injects the frames, which stands in for librealsense's USB transfer). A probe in this process
reports the latency to delivery (DDS included).

OpenCV: one node process playing a 640x480 30 Hz MJPG file (a UVC camera's usual format, so the
decode is paid as with a camera) cropped and resized to 128x128; its CPU share from /proc and the
delivery latency (its stamp is the frame's delivery time in the node).

    python benchmarks/drivers_cameras.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

CROP, RESIZE = [80, 0, 480, 480], [128, 128]


def _summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ms = np.asarray(values) * 1000.0
    return {
        "n": len(values),
        "median_ms": round(float(np.median(ms)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (s), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the RealSense worker (one node process) ----------------------------------------------------
def realsense_worker(serial: str, namespace: str, seconds: float, warmup: float) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from robot_rl.drivers.cameras.realsense import RealSenseNode
    from robot_rl.sim.cells.software_realsense import SoftwareRealSense

    latencies: list[float] = []
    measuring = threading.Event()

    class TimedNode(RealSenseNode):
        def _publish(self, frame):
            before = self.published[frame.stream]
            super()._publish(frame)
            if measuring.is_set() and self.published[frame.stream] > before:
                latencies.append(time.time() - frame.stamp)

    rclpy.init()
    camera = SoftwareRealSense(serial, 640, 480, 30)
    node = TimedNode(
        devices=lambda: [camera.device],
        namespace=namespace,
        parameter_overrides=[
            Parameter("serial", value=serial),
            Parameter("crop", value=CROP),
            Parameter("resize", value=RESIZE),
            Parameter("autostart", value=False),
        ],
    )
    if not node.start():
        raise SystemExit("the RealSense node did not start")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()

    stop = threading.Event()
    feeder_cpu = [0.0, 0.0]  # thread CPU at the window's start and end

    def feed() -> None:
        rng = np.random.default_rng(0)
        frames = [rng.integers(0, 256, (480, 640, 3), np.uint8) for _ in range(4)]
        number, next_due = 0, time.monotonic()
        while not stop.is_set():
            camera.feed(frames[number % 4], time.time() * 1000.0, number)
            number += 1
            next_due += 1 / 30
            time.sleep(max(0.0, next_due - time.monotonic()))
            if measuring.is_set() and not feeder_cpu[0]:
                feeder_cpu[0] = time.thread_time()
            feeder_cpu[1] = time.thread_time() if measuring.is_set() else feeder_cpu[1]

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    time.sleep(warmup)
    cpu0, wall0 = _own_cpu(), time.monotonic()
    published0 = node.published["color"]
    measuring.set()
    time.sleep(seconds)
    measuring.clear()
    cpu, wall = _own_cpu() - cpu0, time.monotonic() - wall0
    published = node.published["color"] - published0
    stop.set()
    feeder.join()
    node.close_device()
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    feeder_share = (feeder_cpu[1] - feeder_cpu[0]) / wall
    print(
        json.dumps(
            {
                "benchmark": "realsense_node",
                "namespace": namespace,
                "stream": "640x480 rgb8 30 Hz -> crop 480x480 -> 128x128",
                "published_hz": round(published / wall, 2),
                "frame_to_publication": _summary(latencies),
                "cpu_share_process": round(cpu / wall, 4),
                "cpu_share_feeder_thread": round(feeder_share, 4),
                "cpu_share_node": round(cpu / wall - feeder_share, 4),
            }
        ),
        flush=True,
    )


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the parent: processes, a probe, the OpenCV node --------------------------------------------
class Probe:
    def __init__(self, namespaces: list[str]):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import Image

        from robot_rl.ros.qos import sensor_qos

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("camera_benchmark_probe", context=self.context)
        self.latency: dict[str, list[float]] = {ns: [] for ns in namespaces}
        self.measuring = False
        for ns in namespaces:
            self.node.create_subscription(Image, f"{ns}/image_raw", self._record(ns), sensor_qos())
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        threading.Thread(target=self.executor.spin, daemon=True).start()

    def _record(self, namespace: str):
        def record(msg) -> None:
            if self.measuring:
                stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
                self.latency[namespace].append(time.time() - stamp)

        return record

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    """A child whose stdout (its JSON line) comes back through a pipe, its log to a file."""
    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def run_realsense(seconds: float, workdir: Path) -> None:
    namespaces = ["/front_cam", "/wrist_cam"]
    probe = Probe(namespaces)
    warmup = 5.0
    workers = [
        _spawn(
            [
                __file__,
                "--worker",
                f"{serial}:{ns}",
                "--seconds",
                str(seconds),
                "--warmup",
                str(warmup),
            ],
            workdir / f"realsense{i}.log",
        )
        for i, (serial, ns) in enumerate(
            zip(["800000000001", "800000000002"], namespaces, strict=True)
        )
    ]
    time.sleep(warmup + 1.0)
    probe.measuring = True
    time.sleep(seconds - 2.0)
    probe.measuring = False
    for worker, ns in zip(workers, namespaces, strict=True):
        out, _ = worker.communicate(timeout=seconds + 120)
        line = out.strip().splitlines()[-1] if out.strip() else "{}"
        result = json.loads(line)
        result["frame_to_delivery"] = _summary(probe.latency[ns])
        print(json.dumps(result), flush=True)
    probe.close()


def _write_video(path: Path, seconds: float = 4.0) -> None:
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (640, 480))
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (480, 640, 3), np.uint8)
    for i in range(int(30 * seconds)):
        writer.write(np.roll(base, 4 * i, axis=1))
    writer.release()


def run_opencv(seconds: float, workdir: Path) -> None:
    video = workdir / "camera.avi"
    _write_video(video)
    probe = Probe(["/uvc_cam"])
    node = _spawn(
        [
            "-m",
            "robot_rl.drivers.cameras.opencv_camera",
            "--ros-args",
            "-r",
            "__ns:=/uvc_cam",
            "-p",
            f"source:={video}",
            "-p",
            "loop:=true",
            "-p",
            f"crop:={CROP}".replace(" ", ""),
            "-p",
            f"resize:={RESIZE}".replace(" ", ""),
        ],
        workdir / "opencv.log",
    )
    try:
        time.sleep(5.0)
        cpu0, wall0 = _cpu_seconds(node.pid), time.monotonic()
        probe.measuring = True
        time.sleep(seconds)
        probe.measuring = False
        cpu, wall = _cpu_seconds(node.pid) - cpu0, time.monotonic() - wall0
    finally:
        node.send_signal(signal.SIGINT)
        node.wait(timeout=30)
        probe.close()
    print(
        json.dumps(
            {
                "benchmark": "opencv_camera_node",
                "namespace": "/uvc_cam",
                "stream": "640x480 MJPG file at 30 Hz -> crop 480x480 -> 128x128",
                "delivered_hz": round(len(probe.latency["/uvc_cam"]) / wall, 2),
                "frame_to_delivery": _summary(probe.latency["/uvc_cam"]),
                "cpu_share_process": round(cpu / wall, 4),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window (s)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=float, default=5.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serial, namespace = args.worker.split(":")
        realsense_worker(serial, namespace, args.seconds, args.warmup)
        return
    print(
        json.dumps(
            {
                "benchmark": "machine",
                "cpus": os.cpu_count(),
                "load_1min": round(os.getloadavg()[0], 2),
            }
        ),
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_realsense(args.seconds, Path(tmp))
        run_opencv(args.seconds, Path(tmp))


if __name__ == "__main__":
    main()
